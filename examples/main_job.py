"""The main job, end to end: a 10M-particle VPIC-like reconnection snapshot is
generated, written in parallel into a motes dataset by every MPI rank (each
holding the particles of its cell of a rank grid, as a simulation would) together
with the grid fields of the same current sheet (each rank its slab of the grid, with
ghost layers), read back on the ranks, queried and histogrammed; the fields are read at
two resolutions, sampled at the particles and plotted.

    mpirun -n 4 python examples/main_job.py [--n 10000000] [--out out/main]

Every query result is checked against a numpy brute force on the same arrays.
Without mpirun it runs as one rank.
"""

import argparse
import os
import shutil
import time

import numpy as np
from mpi4py import MPI

import motes
from motes import synth


FIELD_DIMS = (128, 64, 32)  # grid samples (x, y, z) of the fields written with the particles


def timed(label, fn):
    t = time.perf_counter()
    result = fn()
    ms = (time.perf_counter() - t) * 1e3
    return result, ms


def _trilinear(field, component, x, y, z):
    """numpy's trilinear interpolation of a node-centred uniform field (the check of ds.sample)."""
    a = field.array[..., component].astype(np.float64)
    u = [(c - o) / s for c, o, s in zip((x, y, z), field.origin, field.spacing)]
    i = [np.minimum(np.floor(v).astype(np.int64), n - 2) for v, n in zip(u, field.dims)]
    t = [v - k for v, k in zip(u, i)]
    out = 0.0
    for dz in (0, 1):
        for dy in (0, 1):
            for dx in (0, 1):
                w = (t[0] if dx else 1 - t[0]) * (t[1] if dy else 1 - t[1]) * (t[2] if dz else 1 - t[2])
                out = out + w * a[i[2] + dz, i[1] + dy, i[0] + dx]
    return out


def decompose(data, size):
    """Rank of every particle: the cell of a rank grid over the bounds that holds it.
    Cell edges are float64; a particle belongs to the cell whose [edge_i, edge_i+1) holds it,
    so the inclusive box of its rank contains it."""
    dims = MPI.Compute_dims(size, 3)
    owner = np.zeros(len(data["x"]), dtype=np.int64)
    edges = []
    for n, a in enumerate("xyz"):
        e = np.linspace(float(data[a].min()), float(data[a].max()), dims[n] + 1)
        cell = np.clip(np.searchsorted(e, data[a].astype(np.float64), side="right") - 1, 0, dims[n] - 1)
        owner = owner * dims[n] + cell
        edges.append(e)
    return owner, edges


def scatter(comm, data, order, counts, edges, names):
    """Each rank's particles (rank 0 holds them all, ``order`` grouping them by rank, ``counts``
    per rank); with the counts and the rank grid's cell edges, on every rank."""
    names = comm.bcast(names)
    counts = comm.bcast(counts)
    edges = comm.bcast(edges)
    local = {}
    for k, dt in names:
        buf = np.empty(counts[comm.rank], dtype=dt)
        # Scatterv infers the MPI datatype from the array and the offsets from the counts.
        comm.Scatterv([data[k][order], counts] if comm.rank == 0 else None, buf, root=0)
        local[k] = buf
    return local, counts, edges


def field_blocks(rank, size):
    """The grid fields of the same current sheet (B, J, rho), whole, and this rank's block of
    each: its slab of the grid along x with one ghost layer on each side (dropped on write),
    as a code would pass them."""
    global_fields = synth.harris_fields(FIELD_DIMS)
    slabs = np.array_split(np.arange(FIELD_DIMS[0]), size)[rank]
    lo, hi = int(slabs[0]), int(slabs[-1]) + 1
    g = (min(1, lo), min(1, FIELD_DIMS[0] - hi))
    blocks = {name: motes.field.FieldBlock(f.array[:, :, lo - g[0]:hi + g[1]], offset=(lo, 0, 0), dims=FIELD_DIMS,
                                           ghosts=(g, (0, 0), (0, 0)), origin=f.origin, spacing=f.spacing,
                                           components=f.components, unit=f.unit)
              for name, f in global_fields.items()}
    return global_fields, blocks


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000_000, help="particles (default 10M)")
    ap.add_argument("--out", default="out/main", help="output folder (dataset and plots)")
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    path = os.path.join(args.out, "reconnection.motes")

    # Rank 0 makes the data (and keeps it for the brute-force checks); each rank gets
    # the particles of its grid cell, so counts per rank are as uneven as the plasma.
    names = None
    if rank == 0:
        os.makedirs(args.out, exist_ok=True)
        shutil.rmtree(path, ignore_errors=True)
        print(f"[1/7] generating {args.n:,} VPIC-like particles (current sheet, plasmoids, energetic layer)")
        data, ms = timed("gen", lambda: synth.vpic(args.n, seed=args.seed, with_id=True))
        raw = sum(v.nbytes for v in data.values())
        print(f"      {len(data)} columns, {raw / 1e6:.0f} MB in memory, {ms / 1e3:.1f} s")
        owner, edges = decompose(data, size)
        order = np.argsort(owner, kind="stable")
        counts = np.bincount(owner, minlength=size)
        names = [(k, v.dtype.str) for k, v in data.items()]
    local, counts, edges = scatter(comm, data if rank == 0 else None, order if rank == 0 else None,
                                   counts if rank == 0 else None, edges if rank == 0 else None, names)
    if rank == 0:
        print(f"      {size} ranks, particles per rank: min {counts.min():,}, max {counts.max():,} "
              f"(max/mean {counts.max() / counts.mean():.2f})")
        print(f"[2/7] writing {path} from {size} ranks (adaptive aggregation, fsync'd)")
    global_fields, blocks = field_blocks(rank, size)
    comm.Barrier()
    t = time.perf_counter()
    report = motes.write(path, local, step=0, time=0.0, comm=comm, fields=blocks,
                         attributes={"source": "motes.synth.vpic", "seed": args.seed, "ranks": size})
    seconds = time.perf_counter() - t
    sp = report["species"][0]
    if rank == 0:
        bal = sp["balance"]
        print(f"      {sp['count']:,} particles -> {sp['parts']} part files of {bal['mean_bytes'] / 1e6:.1f} MB "
              f"(size sd/mean {bal['sd_over_mean']:.3f}, max/mean {bal['max_over_mean']:.2f}), "
              f"{report['file_bytes'] / 1e6:.0f} MB on disk, {seconds:.2f} s "
              f"({sp['count'] / seconds / 1e6:.1f} M particles/s; plan {report['plan_seconds']:.2f} s, "
              f"exchange {report['exchange_seconds']:.2f} s, write {report['write_seconds']:.2f} s)")

    # Restart read: every rank asks for its grid cell and must get back exactly its particles.
    ijk = np.unravel_index(rank, [len(e) - 1 for e in edges])
    box = [float(e[i]) for e, i in zip(edges, ijk)] + [float(e[i + 1]) for e, i in zip(edges, ijk)]
    mine = motes.read_partition(path, comm, box=box, columns=["id"])
    got = set(mine["id"].tolist())
    missing = len(set(local["id"].tolist()) - got)
    missing = comm.allreduce(missing)
    if rank == 0:
        print(f"[3/7] restart read on {size} ranks (each its own box): "
              f"{'OK, every rank got all its particles back' if missing == 0 else f'{missing} MISSING'}")
    if missing:
        comm.Abort(1)
    if rank != 0:
        return
    ds = motes.open(path)
    f64 = {k: v.astype(np.float64) for k, v in data.items() if k != "id"}
    e_cut = float(np.quantile(data["energy"], 0.999))
    ux_cut = float(np.quantile(data["ux"], 0.999))
    box = (95.0, 45.0, 0.0, 105.0, 55.0, 50.0)
    queries = [
        (f"energy > {e_cut:.4f}", None, f64["energy"] > float(f"{e_cut:.4f}")),
        (f"ux > {ux_cut:.4f}", None, f64["ux"] > float(f"{ux_cut:.4f}")),
        (None, box, (f64["x"] >= box[0]) & (f64["x"] <= box[3]) & (f64["y"] >= box[1]) & (f64["y"] <= box[4])
         & (f64["z"] >= box[2]) & (f64["z"] <= box[5])),
        ("ux**2 + uy**2 + uz**2 > 0.09 and q < 0", None,
         (f64["ux"] ** 2 + f64["uy"] ** 2 + f64["uz"] ** 2 > 0.09) & (f64["q"] < 0)),
    ]
    print("[4/7] queries on the parallel-written step (all columns returned; checked against numpy brute force)")
    for where, b, mask in queries:
        ds.query(where, box=b, columns=["id"])  # warm the page cache
        t, ms = timed("q", lambda: ds.query(where, box=b))
        ok = np.array_equal(np.sort(t["id"]), np.sort(data["id"][mask]))
        label = where if where else f"box {b}"
        print(f"      {label:<45} {len(t['id']):>9,} particles {ms:8.2f} ms  "
              f"tested {t.counters['points_tested']:,} points  {'OK' if ok else 'MISMATCH'}")
        if not ok:
            comm.Abort(1)

    print("[5/7] previews: a share of the particles (fraction), and progressive levels of detail (quality)")
    shares = {}
    parts = ds.source().part_count
    for f in (0.001, 0.01):
        t, ms = timed("f", lambda: ds.query(fraction=f, columns=["id", "x", "y", "z"]))
        shares[f] = set(t["id"].tolist())
        span = min((t[a].max() - t[a].min()) / (data[a].max() - data[a].min()) for a in "xyz")
        print(f"      fraction {f}: {len(shares[f]):,} particles ({len(shares[f]) / args.n * 100:.3f}%) in {ms:.1f} ms, "
              f"spanning {span * 100:.0f}% of the domain on every axis")
        if abs(len(shares[f]) - f * args.n) > parts:  # round(f * N) per part file
            comm.Abort(1)
    nested = shares[0.001] <= shares[0.01]
    print(f"      the 0.1% preview is {'inside' if nested else 'NOT inside'} the 1% preview")
    if not nested:
        comm.Abort(1)
    for q in (0.3, 0.6, 0.8):
        n, ms = timed("c", lambda: ds.count(quality=q))
        print(f"      quality {q}: {n:,} particles ({n / args.n * 100:.3f}%)")

    print("[6/7] 2-D histogram of ux vs uy near the X-line (|y - 50| < 2, 90 < x < 110)")
    where = "48 < y < 52 and 90 < x < 110"
    (h, xe, ye), ms = timed("h", lambda: ds.histogram("ux", "uy", bins=128, range=((-0.4, 0.4), (-0.4, 0.4)),
                                                     where=where))
    m = (f64["y"] > 48) & (f64["y"] < 52) & (f64["x"] > 90) & (f64["x"] < 110)
    want, _, _ = np.histogram2d(f64["ux"][m], f64["uy"][m], bins=128, range=((-0.4, 0.4), (-0.4, 0.4)))
    ok = np.array_equal(h, want.astype(np.int64))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import LogNorm
    fig, ax = plt.subplots(figsize=(6, 5))
    mesh = ax.pcolormesh(xe, ye, np.ma.masked_equal(h.T, 0), norm=LogNorm(), cmap="viridis")
    fig.colorbar(mesh, label="particles")
    ax.set_xlabel("ux")
    ax.set_ylabel("uy")
    ax.set_title(f"ux vs uy where {where}")
    png = os.path.join(args.out, "ux_uy_xline.png")
    fig.savefig(png, dpi=120, bbox_inches="tight")
    print(f"      {int(h.sum()):,} particles in {ms:.1f} ms, {'OK' if ok else 'MISMATCH'} vs numpy.histogram2d -> {png}")
    if not ok:
        print("histogram differs from numpy")
        comm.Abort(1)
    print("[7/7] grid fields written from the ranks' slabs: B, J, rho on a "
          f"{' x '.join(map(str, FIELD_DIMS))} grid (HZ order)")
    ok = True
    for name, f in global_fields.items():
        stored = ds.field(name)
        same = np.array_equal(stored.read(), f.array)
        coarse = np.array_equal(stored.read(level=2), f.array[::4, ::4, ::4])
        ok &= same and coarse
        print(f"      {name}: {stored.stored_bytes / 1e6:.2f} MB stored for {f.array.nbytes / 1e6:.2f} MB, full and "
              f"level-2 reads {'OK' if same and coarse else 'MISMATCH'} vs the global arrays")
    sample = slice(0, 1_000_000)
    (jz, ms) = timed("s", lambda: ds.sample("J", f64["x"][sample], f64["y"][sample], f64["z"][sample], component="z"))
    want = _trilinear(global_fields["J"], 2, f64["x"][sample], f64["y"][sample], f64["z"][sample])
    close = np.allclose(jz, want, rtol=1e-6, atol=1e-6)
    ok &= close
    print(f"      J_z at {len(jz):,} particles (trilinear) in {ms:.1f} ms, {'OK' if close else 'MISMATCH'} vs numpy")
    fig, axes = plt.subplots(1, 2, figsize=(12, 3.6))
    def extent(f):  # pixel edges around the samples' positions
        (x0, y0), (x1, y1) = f.bounds()[0][:2], f.bounds()[1][:2]
        hx, hy = f.spacing[0] / 2, f.spacing[1] / 2
        return (x0 - hx, x1 + hx, y0 - hy, y1 + hy)

    jz_slice = ds.field("J").read(component="z")[FIELD_DIMS[2] // 2]
    im = axes[0].imshow(jz_slice, origin="lower", extent=extent(global_fields["J"]), cmap="RdBu_r", aspect="auto")
    fig.colorbar(im, ax=axes[0], label="J_z")
    axes[0].set_title("J_z at z = 25 (full resolution)")
    rho2 = ds.field("rho").read(level=2)[FIELD_DIMS[2] // 8]
    im = axes[1].imshow(rho2, origin="lower", extent=extent(ds.field("rho").to_field(level=2)), cmap="viridis",
                        aspect="auto")
    fig.colorbar(im, ax=axes[1], label="rho")
    axes[1].set_title("rho at level 2 (every 4th sample: a prefix of the file)")
    for ax in axes:
        ax.set_xlabel("x")
        ax.set_ylabel("y")
    png2 = os.path.join(args.out, "fields.png")
    fig.savefig(png2, dpi=110, bbox_inches="tight")
    print(f"      slices -> {png2}")
    if not ok:
        comm.Abort(1)
    print(f"done: dataset {path} ({len(ds.steps)} step), plots {png} and {png2}")


if __name__ == "__main__":
    main()
