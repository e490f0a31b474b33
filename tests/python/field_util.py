"""Grid fields for the converter tests: a hypothesis strategy of motes.Field objects and
an exact comparison (values, dtype, geometry, centering, components, unit, attributes)."""

import os

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from motes.field import Field

DTYPES = (np.float32, np.float64, np.int32)

# The hypothesis settings of the field round trips (MOTES_HYPOTHESIS_EXAMPLES as in test_convert.py).
SETTINGS = settings(max_examples=int(os.environ.get("MOTES_HYPOTHESIS_EXAMPLES", 25)), deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def fields(draw, uniform_only=False, max_side=6):
    """A random Field: 1- to 3-D (size-1 axes included), float32/64 or int32, node or cell
    centred, scalar or vector (1 to 3 components), uniform or (unless uniform_only) rectilinear."""
    ndim = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, max_side), min_size=ndim, max_size=ndim)))
    ncomp = draw(st.sampled_from([None, 1, 2, 3]))
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    full = shape + ((ncomp,) if ncomp else ())
    array = (rng.integers(-1000, 1000, full) if dtype.kind == "i" else rng.standard_normal(full)).astype(dtype)
    components = None if ncomp is None else ("x", "y", "z")[:ncomp] if ncomp > 1 else ("a",)
    centering = draw(st.sampled_from(["node", "cell"]))
    finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
    positive = st.floats(1e-3, 1e3, allow_nan=False, allow_infinity=False)
    dims = tuple(reversed(shape))
    if uniform_only or draw(st.booleans()):
        origin = tuple(draw(st.lists(finite, min_size=ndim, max_size=ndim)))
        spacing = tuple(draw(st.lists(positive, min_size=ndim, max_size=ndim)))
        geometry = dict(origin=origin, spacing=spacing)
    else:
        geometry = dict(coords=[np.cumsum(rng.random(n) + 0.1) - 3.0 for n in dims])
    return Field(array, centering=centering, components=components, unit=draw(st.sampled_from(["", "V/m"])),
                 **geometry)


def assert_same_field(a: Field, b: Field, attributes: bool = True) -> None:
    """b is exactly a: values and dtype, geometry (bit for bit), centering, components, unit."""
    assert b.array.dtype == a.array.dtype and b.array.shape == a.array.shape
    np.testing.assert_array_equal(b.array, a.array)
    assert b.centering == a.centering and b.components == a.components and b.unit == a.unit
    assert b.uniform == a.uniform
    if a.uniform:
        assert b.origin == a.origin and b.spacing == a.spacing
    else:
        for ca, cb in zip(a.coords, b.coords):
            np.testing.assert_array_equal(cb, ca)
    if attributes:
        assert b.attributes == a.attributes
