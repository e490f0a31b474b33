"""Figure 7 of bench/foundation.py, run by it in a process of its own: generate N VPIC-like
particles, then measure motes.write's peak RSS and time in isolation, and a raw write of
the same columns; the measurements go to --out as JSON.

    python bench/foundation_big.py --n 100000000 --seed 0 --tmp DIR --out big.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import threading
from typing import Any, Dict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import perf, raw_write, rmpath  # noqa: E402


def big_child(args) -> None:
    import motes
    from motes import synth

    try:
        import psutil

        proc = psutil.Process()

        def rss():
            return proc.memory_info().rss
    except ImportError:  # pragma: no cover
        def rss():
            with open("/proc/self/statm") as f:
                return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    def vm_hwm():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM"):
                    return int(line.split()[1]) * 1024
        return 0

    r: Dict[str, Any] = {"n": args.n, "rss_start_bytes": rss()}
    t0 = perf()
    cols = synth.vpic(args.n, seed=args.seed)
    r["generate_s"] = perf() - t0
    r["raw_bytes"] = raw = sum(c.nbytes for c in cols.values())
    gc.collect()
    r["peak_rss_generate_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    r["rss_before_write_bytes"] = rss()
    try:  # reset VmHWM (Linux >= 4.0) so that it covers motes.write only
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        r["hwm_reset"] = True
    except OSError:
        r["hwm_reset"] = False
    peak = [rss()]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss())
            stop.wait(0.005)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    path = os.path.join(args.tmp, "big.motes")
    t0 = perf()
    summ = motes.write(path, cols, sync=True)[0]
    r["motes_write_s"] = perf() - t0
    stop.set()
    th.join()
    r["peak_rss_sampled_bytes"] = peak[0]
    r["vm_hwm_bytes"] = vm_hwm() if r["hwm_reset"] else None
    r["peak_rss_write_bytes"] = max(peak[0], r["vm_hwm_bytes"] or 0)
    r["layout_seconds"] = summ["layout_seconds"]
    r["write_seconds"] = summ["write_seconds"]
    r["phases"] = summ["phases"]
    r["file_bytes"] = summ["file_bytes"]
    r["data_bytes"] = summ["data_bytes"]
    r["sizes"] = dict(motes.open(path).file().sizes)
    rmpath(path)
    rp = os.path.join(args.tmp, "big.raw")
    t0 = perf()
    raw_write(rp, cols)
    r["raw_write_s"] = perf() - t0
    rmpath(rp)
    print(f"[big child] raw {raw / 2**30:.2f} GiB, generate {r['generate_s']:.1f} s "
          f"(peak {r['peak_rss_generate_bytes'] / 2**30:.2f} GiB), write {r['motes_write_s']:.1f} s, "
          f"peak RSS during write {r['peak_rss_write_bytes'] / 2**30:.2f} GiB", flush=True)
    with open(args.out, "w") as f:
        json.dump(r, f, indent=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, required=True, help="particles")
    ap.add_argument("--seed", type=int, default=0, help="synth.vpic seed")
    ap.add_argument("--tmp", required=True, help="scratch directory")
    ap.add_argument("--out", required=True, help="JSON output")
    big_child(ap.parse_args())


if __name__ == "__main__":
    main()
