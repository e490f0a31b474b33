"""A producer of openPMD steps for the ingest tests (tests/python/test_transit.py), run as a
process of its own: ``python transit_producer.py PATH ENGINE STEPS N PAUSE`` writes STEPS
iterations through openpmd-api, variable-based, with ENGINE (sst: a stream, PATH.sst its
contact file in the working directory; bp5: a file), PAUSE seconds apart. Step k holds
species 'e' of n + k particles drawn from seed k (:func:`step_data`) and a mesh 'rho'
(:func:`step_field`); it prints how long each step blocked the producer."""

import json
import sys
import time

import numpy as np

MESH = (4, 5, 6)  # rho's shape, axisLabels x, y, z


def step_data(k: int, n: int):
    """The particles of step k: x, y, z (float64), ux (float32, momentum/x) and id (uint64)."""
    rng = np.random.default_rng(k)
    m = n + k
    return {"x": rng.random(m), "y": rng.random(m), "z": rng.random(m),
            "ux": rng.standard_normal(m).astype(np.float32), "id": np.arange(m, dtype=np.uint64) + 10**6 * k}


def step_field(k: int):
    return np.random.default_rng(1000 + k).random(MESH)


def main(path: str, engine: str, steps: int, n: int, pause: float) -> None:
    import openpmd_api as io

    # MarshalMethod BP: SST's default (BP5) loses string-array attributes such as the mesh's
    # axisLabels on the way (ADIOS2 2.11 with openpmd-api 0.17; motes' warning says so)
    params = {"DataTransport": "WAN", "QueueLimit": "2", "QueueFullPolicy": "Block",
              "MarshalMethod": "BP"} if engine == "sst" else {}
    s = io.Series(path, io.Access.create, json.dumps({"adios2": {"engine": {"type": engine, "parameters": params}}}))
    s.set_iteration_encoding(io.Iteration_Encoding.variable_based)
    s.set_software("transit_producer")
    for k in range(steps):
        d = step_data(k, n)
        t0 = time.perf_counter()
        it = s.write_iterations()[k]
        it.time = 0.5 * k
        e = it.particles["e"]
        m = len(d["x"])
        for c in "xyz":
            e["position"][c].reset_dataset(io.Dataset(d[c].dtype, [m]))
            e["position"][c].store_chunk(d[c], [0], [m])
            e["positionOffset"][c].reset_dataset(io.Dataset(np.dtype("f8"), [m]))
            e["positionOffset"][c].make_constant(0.0)
        for rc, name in ((e["momentum"]["x"], "ux"), (e["id"][io.Record_Component.SCALAR], "id")):
            rc.reset_dataset(io.Dataset(d[name].dtype, [m]))
            rc.store_chunk(d[name], [0], [m])
        rho = it.meshes["rho"]
        rho.axis_labels, rho.grid_spacing, rho.grid_global_offset = ["x", "y", "z"], [0.25, 0.2, 1 / 6], [0.0, 0.0, 0.0]
        g = step_field(k)
        rc = rho[io.Mesh_Record_Component.SCALAR]
        rc.reset_dataset(io.Dataset(g.dtype, list(g.shape)))
        rc.position = [0.0, 0.0, 0.0]
        rc.store_chunk(g, [0, 0, 0], list(g.shape))
        it.close()
        print(f"step {k} blocked {time.perf_counter() - t0:.4f}", flush=True)
        time.sleep(pause)
    s.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]))
