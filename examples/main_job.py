"""The main job, end to end: a 10M-particle VPIC-like reconnection snapshot is
generated, written into a motes dataset, queried and histogrammed.

    python examples/main_job.py [--n 10000000] [--out out/main]

Every query result is checked against a numpy brute force on the same arrays.
"""

import argparse
import os
import shutil
import time

import numpy as np

import motes
from motes import synth


def timed(label, fn):
    t = time.perf_counter()
    result = fn()
    ms = (time.perf_counter() - t) * 1e3
    return result, ms


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000_000, help="particles (default 10M)")
    ap.add_argument("--out", default="out/main", help="output folder (dataset and plots)")
    ap.add_argument("--seed", type=int, default=42)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "reconnection.motes")
    shutil.rmtree(path, ignore_errors=True)

    print(f"[1/5] generating {args.n:,} VPIC-like particles (current sheet, plasmoids, energetic layer)")
    data, ms = timed("gen", lambda: synth.vpic(args.n, seed=args.seed, with_id=True))
    raw = sum(v.nbytes for v in data.values())
    print(f"      {len(data)} columns, {raw / 1e6:.0f} MB in memory, {ms / 1e3:.1f} s")

    print(f"[2/5] writing {path}")
    summary, ms = timed("write", lambda: motes.write(path, data, step=0, time=0.0,
                                                     attributes={"source": "motes.synth.vpic", "seed": args.seed},
                                                     progress=True))
    s = summary[0]
    print(f"      {s['particle_count']:,} particles -> {s['file_bytes'] / 1e6:.0f} MB file "
          f"({(s['file_bytes'] / s['data_bytes'] - 1) * 100:.1f}% index+padding+quantile codes), "
          f"{s['node_count']:,} nodes, {s['level_count']} levels, {ms / 1e3:.2f} s "
          f"({s['particle_count'] / ms / 1e3:.1f} M particles/s, fsync'd)")
    print("      extra quantile index on:", ", ".join(c["name"] for c in s["columns"] if c["index"] == "quantile") or "none")

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
    print("[3/5] queries (all columns returned; checked against numpy brute force)")
    for where, b, mask in queries:
        ds.query(where, box=b, columns=["id"])  # warm the page cache
        t, ms = timed("q", lambda: ds.query(where, box=b))
        ok = np.array_equal(np.sort(t["id"]), np.sort(data["id"][mask]))
        label = where if where else f"box {b}"
        print(f"      {label:<45} {len(t['id']):>9,} particles {ms:8.2f} ms  "
              f"tested {t.counters['points_tested']:,} points  {'OK' if ok else 'MISMATCH'}")
        if not ok:
            raise SystemExit("query result differs from the brute force")

    print("[4/5] progressive preview")
    for q in (0.3, 0.6, 0.8):
        n, ms = timed("c", lambda: ds.count(quality=q))
        print(f"      quality {q}: {n:,} particles ({n / args.n * 100:.3f}%)")

    print("[5/5] 2-D histogram of ux vs uy near the X-line (|y - 50| < 2, 90 < x < 110)")
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
        raise SystemExit("histogram differs from numpy")
    print(f"done: dataset {path} ({len(ds.steps)} step), plot {png}")


if __name__ == "__main__":
    main()
