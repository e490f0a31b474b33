"""motes.synth.harris_fields: the Harris sheet of synth.vpic as grid fields; J is the curl of B
(checked by finite differences), the sheet is where the vpic particles are densest."""

import numpy as np

import motes


def test_j_is_the_curl_of_b_and_the_sheet_matches_the_particles():
    f = motes.synth.harris_fields((201, 401, 3), dtype=np.float64)
    b, j = f["B"].array, f["J"].array
    dx, dy = f["B"].spacing[:2]
    curl_z = np.gradient(b[..., 1], dx, axis=2) - np.gradient(b[..., 0], dy, axis=1)
    inner = (slice(None), slice(2, -2), slice(2, -2))
    assert np.abs(curl_z[inner] - j[..., 2][inner]).max() < 1e-2 * np.abs(j[..., 2]).max()  # 2nd-order differences
    assert np.all(j[..., :2] == 0) and f["B"].bounds() == ((0.0, 0.0, 0.0), (200.0, 100.0, 50.0))
    p = motes.synth.vpic(50_000, seed=1)
    y_peak = f["rho"].axis(1)[np.argmax(f["rho"].array[0, :, 0])]
    assert abs(y_peak - np.median(p["y"])) < 1.0
    assert f["B"].components == ("x", "y", "z") and f["rho"].array.dtype == np.float64
