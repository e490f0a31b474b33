"""Checks of the parallel writer and reader, run under mpirun by tests/python/test_mpi.py.

    mpirun -n P python tests/mpi/mpi_check.py write DIR --scenario grid|empty|one|overlap --method adaptive|aug
    mpirun -n Q python tests/mpi/mpi_check.py read DIR --scenario ...
    mpirun -n P python tests/mpi/mpi_check.py errors DIR
    mpirun -n P python tests/mpi/mpi_check.py crash DIR
    mpirun -n P python tests/mpi/mpi_check.py lossy DIR
    mpirun -n P python tests/mpi/mpi_check.py fields DIR
    mpirun -n P python tests/mpi/mpi_check.py analysis DIR

Every rank regenerates the same global data (seeded) and keeps its share, so rank 0
can compare what was written and read with the input exactly. A failed check
raises on rank 0, which aborts the job with a non-zero exit status.
"""

from __future__ import annotations

import argparse
import errno
import glob
import os
import sys
import threading
import time

import numpy as np
from mpi4py import MPI

import motes
import motes.fields.file

N = 120_000


def global_data(step: int = 0):
    d = motes.synth.clustered(N, seed=17 + step, with_id=True)
    d["charge"] = np.where(d["id"] % 3 == 0, -1, 1).astype(np.int8)
    d["w"] = (d["id"].astype(np.float64) * 1e-6)
    d["b"] = np.broadcast_to(np.float32(2.5), (N,))  # one value for every particle (stride 0)
    return d


def rank_boxes(size: int):
    """A rank grid over the unit cube (the simulation's decomposition)."""
    dims = MPI.Compute_dims(size, 3)
    boxes = []
    for r in range(size):
        i, rem = divmod(r, dims[1] * dims[2])
        j, k = divmod(rem, dims[2])
        lo = np.array([i / dims[0], j / dims[1], k / dims[2]])
        hi = np.array([(i + 1) / dims[0], (j + 1) / dims[1], (k + 1) / dims[2]])
        boxes.append((lo, hi, dims, (i, j, k)))
    return boxes


def owner(d, size: int, scenario: str):
    """The rank that holds each particle."""
    if scenario == "one":
        return np.zeros(len(d["x"]), dtype=np.int64)
    if scenario == "overlap":  # ranks hold random particles: every rank's bounds cover the whole domain
        return (d["id"].astype(np.int64) * 7919) % size
    dims = MPI.Compute_dims(size, 3)
    idx = [np.clip((d[a] * dims[n]).astype(np.int64), 0, dims[n] - 1) for n, a in enumerate("xyz")]
    r = (idx[0] * dims[1] + idx[1]) * dims[2] + idx[2]
    if scenario == "empty":  # the upper half of the ranks hold nothing: their particles go to rank 0
        r = np.where(r >= max(1, size // 2), 0, r)
    return r


def local(d, comm, scenario):
    """This rank's particles as a simulation holds them: positions as fields of a record
    array (strided), the broadcast column still a broadcast, the rest contiguous."""
    mine = owner(d, comm.size, scenario) == comm.rank
    out = {k: np.ascontiguousarray(v[mine]) for k, v in d.items() if k != "b"}
    rec = np.empty(len(out["x"]), dtype=[("x", out["x"].dtype), ("tag", "i1"), ("y", out["y"].dtype),
                                         ("z", out["z"].dtype)])
    for a in "xyz":
        rec[a] = out[a]
        out[a] = rec[a]
    out["b"] = np.broadcast_to(d["b"][0], (len(rec),))
    return out


def same_rows(got: dict, want: dict, what: str):
    """Equal as sets of rows (all columns), keyed by the unique id."""
    assert set(got) == set(want), f"{what}: columns {sorted(got)} != {sorted(want)}"
    og, ow = np.argsort(got["id"]), np.argsort(want["id"])
    assert len(og) == len(ow), f"{what}: {len(og)} rows, expected {len(ow)}"
    for k in want:
        a, b = got[k][og], want[k][ow]
        assert a.dtype == b.dtype, f"{what}: column {k} dtype {a.dtype} != {b.dtype}"
        assert np.array_equal(a, b), f"{what}: column {k} differs"


def gather_table(comm, table):
    parts = comm.gather({k: np.asarray(v) for k, v in table.items()}, root=0)
    if comm.rank != 0:
        return None
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}


def cmd_write(args, comm):
    w = motes.Writer(args.dir, comm=comm, aggregation=args.method, target_bytes=args.target, sync=False)
    for step in range(2):
        d = global_data(step)
        report = w.write_step(step, {"electrons": local(d, comm, args.scenario)}, time=0.5 * step,
                              attributes={"ranks": comm.size})
        sp = report["species"][0]
        assert sp["count"] == N, report
        assert sp["parts"] >= 1
        if comm.rank == 0:
            print(f"step {step}: {sp['parts']} parts, balance {sp['balance']}", flush=True)
    # Several species in one step, one of them empty on every rank.
    d = global_data(0)
    mine = local(d, comm, args.scenario)
    ions = {k: v[::3].copy() for k, v in mine.items()}
    neutrals = {k: v[:0].copy() for k, v in mine.items()}
    w.write_step(2, {"electrons": mine, "ions": ions, "neutrals": neutrals}, time=1.0)
    comm.Barrier()
    if comm.rank == 0:
        ds = motes.open(args.dir)
        assert ds.species_names(2) == ["electrons", "ions", "neutrals"], ds.species_names(2)
        same_rows(dict(ds.query(step=2, species="electrons")), d, "electrons of step 2")
        assert ds.count(step=2, species="neutrals") == 0
        assert len(ds.query(step=2, species="neutrals")["id"]) == 0
    all_ions = gather_table(comm, ions)
    if comm.rank == 0:
        same_rows(dict(motes.open(args.dir).query(step=2, species="ions")), all_ions, "ions of step 2")
    comm.Barrier()
    if comm.rank == 0:
        ds = motes.open(args.dir)
        assert ds.steps == [0, 1, 2] and ds.times == [0.0, 0.5, 1.0]
        assert ds.step(1).attributes == {"ranks": comm.size}
        for step in range(2):
            d = global_data(step)
            same_rows(dict(ds.query(step=step)), d, f"serial read of step {step}")
            # Queries over the parts equal a brute force.
            for where, box in [("energy > 1.3", None), (None, (0.1, 0.2, 0.0, 0.5, 0.6, 0.7)),
                               ("charge < 0 and w < 0.05", (0.0, 0.0, 0.0, 0.6, 1.0, 1.0)), ("ux > 0.5", None)]:
                mask = np.ones(N, bool)
                if where:
                    mask &= {"energy > 1.3": d["energy"] > np.float32(1.3),
                             "charge < 0 and w < 0.05": (d["charge"] < 0) & (d["w"] < 0.05),
                             "ux > 0.5": d["ux"] > np.float32(0.5)}[where]
                if box:
                    for n, a in enumerate("xyz"):
                        mask &= (d[a] >= box[n]) & (d[a] <= box[n + 3])
                got = ds.query(where, box=box, step=step)
                same_rows(dict(got), {k: v[mask] for k, v in d.items()}, f"query {where} {box}")
                assert ds.count(where, box=box, step=step) == int(mask.sum())
            h, _ = ds.histogram("energy", bins=20, range=(0, 4), step=step)
            assert np.array_equal(h, np.histogram(d["energy"], bins=20, range=(0, 4))[0])
        ds.verify()
        print("write checks passed", flush=True)


def cmd_background(args, comm):
    """Background collective writes: every rank's write_step returns at once (its arrays
    copied, then changed by the "simulation"), the steps read back as written, a duplicated
    step's error reaches every rank's future and next call, and the simulation's own MPI
    calls go on meanwhile."""
    w = motes.Writer(args.dir, comm=comm, background=True, max_pending=2, target_bytes=args.target, sync=False)
    futures = []
    for step in range(3):
        d = global_data(step)
        mine = {k: v.copy() for k, v in local(d, comm, args.scenario).items()}  # the simulation's own arrays
        futures.append(w.write_step(step, {"electrons": mine}, time=0.5 * step))
        for v in mine.values():
            v[...] = 0  # the next time step's compute overwrites the arrays at once
        assert comm.allreduce(1) == comm.size  # the simulation's collectives, beside the writer's
    w.flush()
    assert all(f.done() and f.exception() is None for f in futures)
    bad = w.write_step(1, {"electrons": local(global_data(1), comm, args.scenario)})
    assert isinstance(bad.exception(timeout=120), motes.UsageError), bad.exception()
    try:
        w.flush()
        raise AssertionError("the failed step's error was not raised by flush")
    except motes.UsageError as e:
        assert "already exists" in str(e), e
    w.close()
    comm.Barrier()
    if comm.rank == 0:
        ds = motes.open(args.dir)
        assert ds.steps == [0, 1, 2], ds.steps
        for step in range(3):
            same_rows(dict(ds.query(step=step)), global_data(step), f"background step {step}")
        print("background checks passed", flush=True)


def cmd_read(args, comm):
    ds = motes.open(args.dir)
    # Step 2's empty species: an empty particle file, read on every rank as nothing.
    for kw in ({}, {"box": (0, 0, 0, 1, 1, 1)}):
        empty = motes.read_partition(args.dir, comm, step=2, species="neutrals", **kw)
        assert len(empty) == 0 and set(empty) == set(global_data(0)), (len(empty), list(empty))
    for step in (0, 1):
        d = global_data(step)
        # An even share on every rank: the union is the data, with no duplicates.
        even = motes.read_partition(args.dir, comm, step=step, species="electrons")
        all_rows = gather_table(comm, even)
        if comm.rank == 0:
            same_rows(all_rows, d, f"even read on {comm.size} ranks")
        sizes = comm.allgather(len(even))
        assert max(sizes) - min(sizes) <= 1, sizes
        # Restart read: each rank's grid box (half-open boxes made inclusive; ties go to both).
        lo, hi, dims, _ = rank_boxes(comm.size)[comm.rank]
        eps = np.nextafter(np.float32(1), np.float32(2)) - np.float32(1)
        box = tuple(lo) + tuple(hi + (hi >= 1.0) * eps)
        mine = motes.read_partition(args.dir, comm, step=step, species="electrons", box=box)
        want = {k: v for k, v in d.items()}
        mask = np.ones(N, bool)
        for n, a in enumerate("xyz"):
            mask &= (d[a] >= box[n]) & (d[a] <= box[n + 3])
        same_rows(dict(mine), {k: v[mask] for k, v in want.items()}, f"box read on rank {comm.rank}")
        # A preview spread over the ranks: the same particles as a serial read at that quality.
        preview = gather_table(comm, motes.read_partition(args.dir, comm, step=step, species="electrons",
                                                          quality=0.6, columns=["id", "energy"]))
        if comm.rank == 0:
            want = ds.query(step=step, species="electrons", quality=0.6, columns=["id", "energy"])
            assert 0 < len(want["id"]) < N
            same_rows(preview, dict(want), f"preview read on {comm.size} ranks")
        # A filtered even read with a column subset, on a sub-communicator of the first ranks.
        q = max(1, comm.size - 1)
        sub = comm.Split(0 if comm.rank < q else MPI.UNDEFINED, comm.rank)
        if sub != MPI.COMM_NULL:
            part = motes.read_partition(args.dir, sub, step=step, species="electrons", where="energy > 1",
                                        columns=["id", "energy"])
            rows = gather_table(sub, part)
            if sub.rank == 0:
                m = d["energy"] > np.float32(1)
                same_rows(rows, {"id": d["id"][m], "energy": d["energy"][m]}, f"filtered read on {q} ranks")
            sub.Free()
    if comm.rank == 0:
        print("read checks passed", flush=True)


def expect_error(comm, kind, fn, *needles):
    """fn() raises exactly `kind` on every rank (the class of the error's kind in the core's
    error table, whichever rank failed), with a message holding every needle."""
    try:
        fn()
    except motes.MotesError as e:
        classes = comm.allgather(type(e).__name__)
        assert classes == [kind.__name__] * comm.size, f"raised {classes} on the ranks, expected {kind.__name__}: {e}"
        for n in needles:
            assert n in str(e), f"message lacks {n!r}: {e}"
        return e
    raise AssertionError(f"no {kind.__name__} raised")


def cmd_errors(args, comm):
    d = global_data(0)
    w = motes.Writer(args.dir, comm=comm, sync=False, target_bytes=200_000)
    w.write_step(0, local(d, comm, "grid"))
    # A rank whose schema differs: every rank raises, naming the rank and the column.
    cols = local(d, comm, "grid")
    last = comm.size - 1
    if comm.rank == last:
        cols["w"] = cols["w"].astype(np.float32)
    msg = str(expect_error(comm, motes.UsageError, lambda: w.write_step(1, cols), f"rank {last}", "'particles.w' is f32"))
    if comm.rank == 0:
        print("schema mismatch:", msg, flush=True)
    # A species missing on one rank.
    species = {"electrons": local(d, comm, "grid")}
    if comm.rank != last:
        species["ions"] = local(d, comm, "grid")
    if comm.size > 1:
        expect_error(comm, motes.UsageError, lambda: w.write_step(1, species), "species 'ions' is missing")
    # A rank one step behind: every rank raises before anything is written.
    if comm.size > 1:
        behind = 0 if comm.rank == last else 1
        expect_error(comm, motes.UsageError, lambda: w.write_step(behind, local(d, comm, "grid")),
                     "ranks disagree on the step", f"rank {last} writes step 0 (rank 0: step 1)")
    # Input only one rank gets wrong, caught before any collective call: still raised everywhere.
    cols = local(d, comm, "grid")
    if comm.rank == last:
        cols["w"] = cols["w"].astype(np.float16)
    expect_error(comm, motes.UsageError, lambda: w.write_step(1, cols), f"rank {last}", "unsupported dtype float16")
    cols = ["id", "bogus"] if comm.rank == last else ["id"]
    expect_error(comm, motes.UsageError, lambda: motes.read_partition(args.dir, comm, columns=cols), f"rank {last}",
                 "unknown column 'bogus'")
    if comm.size > 1:
        cols = ["id"] if comm.rank == last else ["id", "x"]
        expect_error(comm, motes.UsageError, lambda: motes.read_partition(args.dir, comm, columns=cols),
                     "ranks disagree on what to read", f"rank {last}")
    # Bad positions on one rank only.
    cols = local(d, comm, "one")
    if comm.rank == 0:
        cols["x"] = cols["x"].copy()
        cols["x"][5] = np.nan
    expect_error(comm, motes.UsageError, lambda: w.write_step(1, cols), "rank 0", "position column 'x'", "row 5")
    # An aggregator that cannot write its part files (its file size limit stands in for a full disk).
    import resource
    import signal

    limit = resource.getrlimit(resource.RLIMIT_FSIZE)
    bad = comm.size - 1
    if comm.rank == bad:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, limit[1]))
    e = expect_error(comm, motes.StorageError, lambda: w.write_step(2, local(d, comm, "grid")), "writing the part files",
                     f"rank {bad}")
    assert isinstance(e, OSError) and e.errno == errno.EFBIG, (e.errno, str(e))  # the failed rank's errno, everywhere
    if comm.rank == bad:
        resource.setrlimit(resource.RLIMIT_FSIZE, limit)
    comm.Barrier()
    if comm.rank == 0:
        assert not os.path.exists(os.path.join(args.dir, "steps", "000002")), "a failed step left its directory"
    if comm.rank == 0:
        ds = motes.open(args.dir)
        assert ds.steps == [0], ds.steps
        same_rows(dict(ds.query()), d, "step 0 after failed steps")
    # The dataset still takes new steps after the failures.
    w.write_step(3, local(d, comm, "grid"))
    comm.Barrier()
    if comm.rank == 0:
        assert motes.open(args.dir).steps == [0, 3]
    # A part file damaged after the step was written: only the rank that reads it sees the
    # damage, and every rank raises the FormatError, naming that rank.
    parts = sorted(glob.glob(os.path.join(args.dir, "steps", "000003", "*.p*.mpf")))
    if comm.rank == 0:
        with open(parts[-1], "r+b") as fh:
            fh.seek(100)
            b = fh.read(1)
            fh.seek(100)
            fh.write(bytes([b[0] ^ 0x5A]))
    comm.Barrier()
    reader = (len(parts) - 1) * comm.size // len(parts)  # the rank that reads the last part
    e = expect_error(comm, motes.FormatError, lambda: motes.read_partition(args.dir, comm, step=3),
                     f"failed on 1 of {comm.size} ranks (rank {reader}: ", os.path.basename(parts[-1]))
    if comm.rank == 0:
        print("damaged part:", e, flush=True)
        print("error checks passed", flush=True)


def cmd_lossy(args, comm):
    """Error-bounded columns written in parallel: every stored value within its bound of the
    given one (joined by id), queries over the parts exact on the stored values."""
    d = global_data(0)
    bounds = {"x": 2.0 ** -14, "y": 2.0 ** -14, "z": 2.0 ** -14, "ux": 1e-3, "w": 1e-7}
    w = motes.Writer(args.dir, comm=comm, aggregation=args.method, target_bytes=args.target, sync=False)
    report = w.write_step(0, {"electrons": local(d, comm, args.scenario)}, index={"ux": "quantile"},
                          error_bounds=bounds)
    comm.Barrier()
    if comm.rank != 0:
        return
    assert report["species"][0]["parts"] >= 2, report
    ds = motes.open(args.dir)
    got = dict(ds.query())
    o, g = np.argsort(got["id"]), np.argsort(d["id"])
    stored = {k: v[o] for k, v in got.items()}
    given = {k: np.asarray(v)[g] for k, v in d.items()}
    assert np.array_equal(stored["id"], given["id"])
    for k in given:
        if k in bounds:
            worst = float(np.max(np.abs(stored[k].astype(np.float64) - given[k].astype(np.float64))))
            assert worst <= bounds[k], f"{k}: off by {worst}, bound {bounds[k]}"
        else:
            assert np.array_equal(stored[k], given[k]), f"{k} must be exact"
    assert {c.name: c.error_bound for c in ds.schema() if c.error_bound} == bounds
    for where, box in [(None, (0.1, 0.2, 0.0, 0.5, 0.6, 0.7)), ("ux > 0.5", None),
                       ("w < 0.05", (0.0, 0.0, 0.0, 0.6, 1.0, 1.0))]:
        mask = np.ones(N, bool)
        if box:
            for n, a in enumerate("xyz"):
                mask &= (stored[a] >= np.float32(box[n])) & (stored[a] <= np.float32(box[n + 3]))
        if where == "ux > 0.5":
            mask &= stored["ux"] > np.float32(0.5)
        if where == "w < 0.05":
            mask &= stored["w"] < 0.05
        ids = ds.query(where, box=box, columns=["id"])["id"]
        assert np.array_equal(np.sort(ids), stored["id"][mask]), (where, box)
    ds.verify()
    print("lossy checks passed", flush=True)


def field_blocks(comm, a, ghost):
    """Rank r's block of the global grid `a` ((z, y, x)) on a rank grid over (x, y, z), with
    `ghost` samples of its neighbours' data on every side (none past the grid's edge)."""
    dims_xyz = a.shape[:3][::-1]  # (a vector field has its components last)
    split = MPI.Compute_dims(comm.size, 3)
    coords = np.unravel_index(comm.rank, split)
    lo, hi = [], []
    for k in range(3):
        edges = np.linspace(0, dims_xyz[k], split[k] + 1).astype(int)
        lo.append(int(edges[coords[k]]))
        hi.append(int(edges[coords[k] + 1]))
    g = [(min(ghost, lo[k]), min(ghost, dims_xyz[k] - hi[k])) for k in range(3)]
    block = a[lo[2] - g[2][0]:hi[2] + g[2][1], lo[1] - g[1][0]:hi[1] + g[1][1], lo[0] - g[0][0]:hi[0] + g[0][1]]
    return block.copy(), lo, hi, g


def field_arrays():
    """The grids of the fields checks (the same on every rank and in every run)."""
    rng = np.random.default_rng(11)
    rho = rng.random((40, 50, 61)).astype(np.float32)  # (z, y, x): not divisible by the rank grid
    e = rng.standard_normal((13, 17, 19, 3))
    return rho, e


def check_halo(ds, comm, rho):
    """This rank's block of rho with a halo of 1, read back from the file (the neighbours'
    samples filled in), equals the same box of the input."""
    _, lo, hi, _ = field_blocks(comm, rho, ghost=0)
    halo_lo = [max(0, v - 1) for v in lo]
    halo_hi = [min(n, v + 1) for v, n in zip(hi, rho.shape[::-1])]
    got = ds.field("rho").read(index_box=(halo_lo, halo_hi))
    assert np.array_equal(got, rho[halo_lo[2]:halo_hi[2], halo_lo[1]:halo_hi[1], halo_lo[0]:halo_hi[0]])


def cmd_fields(args, comm):
    """Fields written in parallel: every rank passes its block with ghost zones (dropped on
    write), aggregators write the fields in parts; a whole field from rank 0 beside them;
    read back exactly on every rank, each rank's block with its halo filled from the
    neighbours' data in the file."""
    d = global_data(0)
    rho, e = field_arrays()
    blocks = {}
    for name, a, comps in (("rho", rho, None), ("E", e, ("x", "y", "z"))):
        block, lo, hi, g = field_blocks(comm, a, ghost=2)
        blocks[name] = motes.field.FieldBlock(block, offset=lo, dims=a.shape[:3][::-1], ghosts=g,
                                               spacing=(0.5, 0.5, 0.5), components=comps, unit="V/m")
    block, lo, hi, g = field_blocks(comm, rho, ghost=1)  # the same grid stored within 1e-3 (ZFP), in parts
    blocks["rhoz"] = motes.field.FieldBlock(block, offset=lo, dims=rho.shape[::-1], ghosts=g, tolerance=1e-3)
    whole = motes.Field(rho * 2, spacing=(0.5, 0.5, 0.5)) if comm.rank == 0 else None
    w = motes.Writer(args.dir, comm=comm, target_bytes=args.target, sync=False)
    report = w.write_step(0, {"electrons": local(d, comm, args.scenario)}, fields={**blocks, "rho2": whole})
    comm.Barrier()
    parts = {f["name"]: f["parts"] for f in report["fields"]}
    # The parts: about one per target's bytes, at most one per rank.
    assert parts["rho"] == min(comm.size, -(-rho.nbytes // args.target)), (parts, comm.size)
    ds = motes.open(args.dir)
    assert ds.field_names(0) == ["E", "rho", "rho2", "rhoz"], ds.field_names(0)
    assert ds.field("rhoz").tolerance == 1e-3 and np.max(np.abs(ds.field("rhoz").read() - rho)) <= 1e-3
    assert parts["rhoz"] == parts["rho"]
    assert ds.step(0).fields["rho"]["parts"] == parts["rho"]
    assert np.array_equal(ds.field("rho").read(), rho)
    assert np.array_equal(ds.field("E").read(), e)
    assert ds.field("E").unit == "V/m" and ds.field("E").spacing == (0.5, 0.5, 0.5)
    assert np.array_equal(ds.field("rho2").read(), rho * 2)
    for level in (1, 2, 5):
        s = 2 ** level
        assert np.array_equal(ds.field("rho").read(level=level), rho[::s, ::s, ::s])
    # A field of one part is the serial writer's file, byte for byte.
    if comm.rank == 0 and parts["E"] == 1:
        serial = os.path.join(args.dir, "serial_E.mfd")
        motes.fields.file.write_field_file(serial, motes.Field(e, spacing=(0.5, 0.5, 0.5), components=("x", "y", "z"),
                                                              unit="V/m"), name="E", sync=False)
        with open(serial, "rb") as a, open(os.path.join(args.dir, "steps/000000/E.mfd"), "rb") as b:
            assert a.read() == b.read(), "one part differs from the serial file"
        os.remove(serial)
    check_halo(ds, comm, rho)
    if comm.rank == 0:
        ds.verify()

    def refused(block, word):
        """Step 1 with this rank's `block` of rho fails on every rank, saying `word`; nothing is written."""
        try:
            w.write_step(1, {"electrons": local(d, comm, args.scenario)}, fields={"rho": block})
            raise AssertionError(f"blocks with {word} were accepted")
        except motes.UsageError as exc:
            assert word in str(exc), exc
        assert motes.open(args.dir).steps == [0]

    if comm.size > 1:
        # Blocks that overlap are refused on every rank, naming the ranks.
        refused(motes.field.FieldBlock(rho, offset=(0, 0, 0), dims=rho.shape[::-1]), "overlap")
        # A hole (a rank's block one sample short) too.
        block, lo, hi, g = field_blocks(comm, rho, ghost=0)
        if comm.rank == comm.size - 1:
            block = block[:, :, :-1]
        refused(motes.field.FieldBlock(block, offset=lo, dims=rho.shape[::-1]), "hole")
    comm.Barrier()
    if comm.rank == 0:
        print("fields checks passed", flush=True)


def cmd_fields_read(args, comm):
    """The fields of `cmd_fields`, read on another number of ranks: every rank reads its own
    block of a rank grid (with a halo of 1) and the whole field at a coarse level."""
    rho, e = field_arrays()
    ds = motes.open(args.dir)
    check_halo(ds, comm, rho)
    _, lo, hi, _ = field_blocks(comm, e, ghost=0)
    got = ds.field("E").read(index_box=(lo, hi), component="y")
    assert np.array_equal(got, e[lo[2]:hi[2], lo[1]:hi[1], lo[0]:hi[0], 1])
    assert np.array_equal(ds.field("rho").read(level=2), rho[::4, ::4, ::4])
    # CMFE on the field in parts: the same as on the whole field rank 0 wrote (twice rho),
    # halved, at random points, and in queries of the particles.
    pts = np.random.default_rng(comm.rank).random((3, 1000)) * np.array(rho.shape[::-1])[:, None] * 0.5
    a = ds.sample("rho", *pts)
    b = ds.sample("rho2", *pts)
    assert np.array_equal(a * 2, b, equal_nan=True) and np.isfinite(a).any(), "CMFE differs between the field in parts and the whole one"
    n = ds.count("field('rho') > 0.5")
    assert n == ds.count("field('rho2') > 1.0") and n > 0
    comm.Barrier()
    if comm.rank == 0:
        print("fields read checks passed", flush=True)


def cmd_crash(args, comm):
    """Rank 1 dies while step 1 is being written; mpirun then stops every rank."""
    d = global_data(0)
    w = motes.Writer(args.dir, comm=comm, sync=True, target_bytes=2_000_000)
    w.write_step(0, local(d, comm, "grid"))
    comm.Barrier()
    big = motes.synth.clustered(3_000_000, seed=5, with_id=True)
    cols = local(big, comm, "grid")
    if comm.rank == 1:
        threading.Timer(args.delay, lambda: os._exit(3)).start()
    w.write_step(1, cols)
    time.sleep(60)  # only reached when the write beat the timer: the caller treats that as inconclusive


def cmd_analysis(args, comm):
    """motes.mpi.count / stats / histogram of a step written in parallel parts (and of a
    step written serially by rank 0), the same on every rank and equal to the serial calls;
    an error (an unknown column, a bad argument) is raised on every rank."""
    import motes.mpi

    d = global_data(0)
    d["w"] = np.where(d["id"] % 11 == 0, np.nan, d["w"])  # NaNs: not valid in stats, outside every bin
    w = motes.Writer(args.dir, comm=comm, target_bytes=args.target, sync=False)
    w.write_step(0, {"electrons": local(d, comm, "grid")})
    if comm.rank == 0:
        motes.Writer(args.dir, sync=False).write_step(1, {"electrons": {k: np.ascontiguousarray(v)
                                                                        for k, v in global_data(1).items()}})
    comm.Barrier()
    ds = motes.open(args.dir)
    assert ds.source(0, "electrons").part_count > 1, "step 0 should be in several parts"
    queries = [dict(), dict(where="energy > 1"), dict(box=(0.1, 0.1, 0.1, 0.6, 0.9, 0.7)),
               dict(where="x > 0.75 or charge < 0", box=(0.0, 0.2, 0.0, 1.0, 1.0, 1.0)),
               dict(where="x > 5"), dict(where="not (w < 0.05)", quality=0.5)]

    def same_everywhere(value, what):
        every = comm.allgather(value)
        for v in every[1:]:
            if isinstance(value, tuple):
                assert all(np.array_equal(a, b) for a, b in zip(v, value)), f"{what}: ranks differ"
            else:
                assert v == value, f"{what}: ranks differ ({v} != {value})"

    for step in (0, 1):
        for q in queries:
            what = f"step {step} {q}"
            n = motes.mpi.count(args.dir, comm, step=step, **q)
            same_everywhere(n, what)
            assert n == ds.count(step=step, **q), f"{what}: count {n} != {ds.count(step=step, **q)}"
            for column in ("w", "x", "charge", "2 * x - w"):
                got, want = motes.mpi.stats(args.dir, comm, column, step=step, **q), ds.stats(column, step=step, **q)
                same_everywhere(got, what)
                for k in ("count", "valid", "min", "max"):
                    assert got[k] == want[k], f"{what} stats {column}: {k} {got[k]} != {want[k]}"
                for k in ("sum", "mean"):  # the parts' partial sums are added in another order
                    assert (got[k] is None) == (want[k] is None) and (
                        got[k] is None or np.isclose(got[k], want[k], rtol=1e-12, atol=0)), \
                        f"{what} stats {column}: {k} {got[k]} != {want[k]}"
            for h in (dict(x="w", bins=40), dict(x="x", y="energy", bins=(16, 9)),
                      dict(x="y", bins=12, range=(0.2, 0.8), weights="energy"),
                      dict(x="charge", bins=3), dict(x="2 * x - w", y="abs(y - 0.5)", bins=(7, 5), weights="energy")):
                got, want = motes.mpi.histogram(args.dir, comm, step=step, **h, **q), ds.histogram(step=step, **h, **q)
                same_everywhere(got, what)
                assert got[0].dtype == want[0].dtype and got[0].shape == want[0].shape, f"{what} {h}"
                if "weights" in h:
                    assert np.allclose(got[0], want[0], rtol=1e-12, atol=0), f"{what} {h}: weighted counts differ"
                else:
                    assert np.array_equal(got[0], want[0]), f"{what} {h}: counts differ"
                for a, b in zip(got[1:], want[1:]):
                    assert np.array_equal(a, b), f"{what} {h}: edges differ"
    # Errors on every rank, whichever rank finds them.
    expect_error(comm, motes.UsageError, lambda: motes.mpi.count(args.dir, comm, where="nope > 1"), "nope")
    expect_error(comm, motes.UsageError, lambda: motes.mpi.stats(args.dir, comm, "nope"), "nope")
    expect_error(comm, motes.UsageError, lambda: motes.mpi.histogram(args.dir, comm, "x", bins=0), "bins")
    expect_error(comm, motes.UsageError, lambda: motes.mpi.count(args.dir, comm, step=9), "step 9")
    comm.Barrier()
    if comm.rank == 0:
        print("analysis checks passed", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("command", choices=["write", "read", "errors", "crash", "lossy", "fields", "fields_read", "analysis",
                                       "background"])
    p.add_argument("dir")
    p.add_argument("--scenario", default="grid", choices=["grid", "empty", "one", "overlap"])
    p.add_argument("--method", default="adaptive", choices=["adaptive", "aug"])
    p.add_argument("--target", type=int, default=400_000)
    p.add_argument("--delay", type=float, default=0.3)
    args = p.parse_args()
    comm = MPI.COMM_WORLD.Dup()
    try:
        {"write": cmd_write, "read": cmd_read, "errors": cmd_errors, "crash": cmd_crash,
         "lossy": cmd_lossy, "fields": cmd_fields,
     "fields_read": cmd_fields_read, "analysis": cmd_analysis, "background": cmd_background}[args.command](args, comm)
    except BaseException:
        import traceback

        traceback.print_exc()
        sys.stdout.flush()
        sys.stderr.flush()
        MPI.COMM_WORLD.Abort(1)


if __name__ == "__main__":
    main()
