"""Shared helpers of the benchmarks: timing loops, the CPU calibration probe, figures and
peers as JSON, machine information, the raw and h5py writers used as peers, and tables."""

from __future__ import annotations

import contextlib
import datetime as _dt
import gc
import glob
import json
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

perf = time.perf_counter
MB = 1e6
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def timed(fn: Callable[[], Any], repeat: int, warmup: int = 1,
          before: Optional[Callable[[], None]] = None,
          after: Optional[Callable[[Any], None]] = None):
    """Runs ``fn`` ``warmup`` + ``repeat`` times back to back; ``before``/``after`` run untimed around
    each call. The garbage collector is paused during the loop (no collection inside a timing).
    Returns ({best, median, runs} in seconds, result of the last call)."""
    result = None
    times: List[float] = []
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for i in range(warmup + repeat):
            if before:
                before()
            t0 = perf()
            result = fn()
            dt = perf() - t0
            if after:
                after(result)
            if i >= warmup:
                times.append(dt)
    finally:
        if was_enabled:
            gc.enable()
    return {"best": min(times), "median": statistics.median(times), "runs": times}, result


def alternated(fns: Dict[str, Callable[[], Any]], repeat: int, warmup: int = 0,
               after: Optional[Callable[[str, Any], None]] = None,
               before: Optional[Callable[[str], None]] = None) -> Dict[str, List[float]]:
    """Runs every one of ``fns`` in turn, ``warmup`` + ``repeat`` rounds, the garbage collector
    paused: this VM's speed drifts in phases of seconds, and alternating puts each round of
    every side in the same phase, where runs of one side and then of the other compare phases
    as much as sides. ``before(name)`` and ``after(name, result)`` run untimed around each
    call (emptying caches, checking answers). Returns the timed seconds of each name."""
    runs: Dict[str, List[float]] = {name: [] for name in fns}
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for i in range(warmup + repeat):
            for name, fn in fns.items():
                if before:
                    before(name)
                t0 = perf()
                result = fn()
                dt = perf() - t0
                if after:
                    after(name, result)
                if i >= warmup:
                    runs[name].append(dt)
    finally:
        if was_enabled:
            gc.enable()
    return runs


#: What a benchmark's child process (pvbatch, a fresh interpreter) prints before the JSON of
#: its figures, one line per result.
RESULT = "RESULT "


def child_results(stdout: str) -> List[dict]:
    """The results a child process printed (lines ``RESULT {json}``), in order."""
    return [json.loads(ln[len(RESULT):]) for ln in stdout.splitlines() if ln.startswith(RESULT)]


def touch_memory(gib: float = 2.0) -> None:
    """This VM hands idle memory back to its host: touch and free ~2 GiB before timed work."""
    a = np.ones(int(gib * (1 << 30)) // 8)
    del a


_CAL = np.random.default_rng(12345).random(2_000_000).astype(np.float32)


def calibration_ms() -> float:
    """A fixed CPU-bound probe (np.sort of 2M float32, best of 5), recorded next to every figure: on a
    shared VM the host's speed drifts (phases ~1.4x slower were seen); compare it across runs before
    comparing figures."""
    best = float("inf")
    for _ in range(5):
        t0 = perf()
        np.sort(_CAL)
        best = min(best, perf() - t0)
    return best * 1e3


def progression(path: str, columns, threads: Optional[int] = 1) -> int:
    """A viewer's progression over a file it has just opened: quality 0.1 -> 1.0 in ten slices,
    ``columns`` copied out, on ``threads`` (None: motes' default); opened afresh with the
    decoded-block cache emptied (pages as they are). Returns the rows read (every particle once)."""
    import motes
    import numpy as np

    motes._core.clear_block_cache()
    ds = motes.open(path)
    rows = 0
    for k in range(10):
        t = ds.query(quality=(k / 10, (k + 1) / 10), threads=threads)
        rows += len(t)
        for c in columns:
            np.asarray(t[c])
    return rows


def save_npz(path: str, **arrays) -> str:
    """Writes `arrays` to the .npz `path` whole or not at all (a temporary file renamed)."""
    tmp = path + ".tmp.npz"
    np.savez(tmp, **arrays)
    os.replace(tmp, path)
    return path


def generated(out: str, pattern: str, count: int, what: str, force: bool) -> bool:
    """Whether a generator's `count` files matching `pattern` are in `out` already (and it is not
    told to `force` a new run): then they are listed. Otherwise `out` is emptied for the run."""
    have = sorted(glob.glob(os.path.join(out, pattern)))
    if len(have) == count and not force:
        print(f"{out}: {count} {what} already there (--force to run again):")
        for h in have:
            print("  " + h)
        return True
    if os.path.isdir(out):
        shutil.rmtree(out)
    return False


_PHASE_LINE = re.compile(r"^(.+?)\s+([0-9.]+) s(.*)$")


def phase_table(text: str) -> Dict[str, Any]:
    """What a profiling driver (bench/drivers) printed: its phase table (per phase the best wall
    seconds and, when printed, the CPU seconds of that run), the total and the CPU ns per
    particle (None when no total line was printed)."""
    phases, phase_cpu, total, cpu = {}, {}, None, None
    for line in text.splitlines():
        m = _PHASE_LINE.match(line)
        if not m:
            continue
        name, seconds = m.group(1).strip(), float(m.group(2))
        if name == "total":
            total = seconds
            cpu = float(re.search(r"([0-9]+) ns CPU", m.group(3)).group(1))
        else:
            phases[name] = seconds
            c = re.search(r"cpu\s+([0-9.]+)", m.group(3))
            if c:
                phase_cpu[name] = float(c.group(1))
    return {"phases": phases, "phase_cpu": phase_cpu, "total": total, "cpu_ns": cpu}


def rmpath(p: str) -> None:
    if os.path.isdir(p):
        shutil.rmtree(p)
    elif os.path.exists(p):
        os.remove(p)


def du(p: str) -> int:
    if os.path.isfile(p):
        return os.path.getsize(p)
    total = 0
    for d, _, files in os.walk(p):
        for f in files:
            total += os.path.getsize(os.path.join(d, f))
    return total


def f32(v: float) -> float:
    """``v`` rounded to float32, returned as a Python float (exactly representable in float32),
    so that float32 columns compare identically in motes, numpy and DuckDB."""
    return float(np.float32(v))


def ms(t: float) -> float:
    return t * 1e3


def figure(name: str, description: str, value: float, unit: str, *, timing: Optional[dict] = None,
           peers: Optional[Dict[str, dict]] = None, ratio: Optional[float] = None, ratio_meaning: str = "",
           target: str = "", met: Optional[bool] = None, **extra) -> dict:
    out = {"name": name, "description": description, "value": value, "unit": unit}
    if timing is not None:
        out["timing_s"] = timing
    out["peers"] = peers or {}
    out["ratio"] = ratio
    out["ratio_meaning"] = ratio_meaning
    out["target"] = target
    out["met"] = met
    out.update(extra)
    out["calibration_ms_after"] = calibration_ms()
    return out


def peer(value: float, unit: str, ratio: Optional[float], ratio_meaning: str, **extra) -> dict:
    d = {"value": value, "unit": unit, "ratio": ratio, "ratio_meaning": ratio_meaning}
    d.update(extra)
    return d


def machine_info() -> dict:
    info: Dict[str, Any] = {
        "hostname": platform.node(),
        "platform": platform.platform(),
        "nproc": os.cpu_count(),
        "nproc_affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "python": sys.version.split()[0],
        "numpy": np.__version__,
    }
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu_model"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal"):
                    info["ram_bytes"] = int(line.split()[1]) * 1024
                    info["ram_gib"] = round(info["ram_bytes"] / 2**30, 1)
    except OSError:
        pass
    for mod in ("h5py", "pyarrow", "duckdb", "psutil"):
        try:
            info[mod] = __import__(mod).__version__
        except Exception:  # pragma: no cover - optional
            info[mod] = None
    import motes
    from motes import _core

    info["motes"] = motes.__version__
    info["motes_core_so"] = _core.__file__
    info["motes_core_so_mtime"] = _dt.datetime.fromtimestamp(os.path.getmtime(_core.__file__)).isoformat()
    # which commit the working tree is on (read, not git-run); the installed build may differ
    try:
        head = open(os.path.join(ROOT, ".git", "HEAD")).read().strip()
        if head.startswith("ref: "):
            ref = os.path.join(ROOT, ".git", head[5:])
            info["git_head"] = open(ref).read().strip() if os.path.exists(ref) else head
        else:
            info["git_head"] = head
    except OSError:
        info["git_head"] = None
    return info


def fs_type(path: str) -> Optional[str]:
    best, kind = "", None
    try:
        with open("/proc/mounts") as f:
            for line in f:
                parts = line.split()
                mnt = parts[1]
                if path.startswith(mnt) and len(mnt) > len(best):
                    best, kind = mnt, f"{parts[2]} on {mnt} ({parts[0]})"
    except OSError:
        pass
    return kind


# ----------------------------------------------------------------------------------------------
# peers: raw write, memcpy, h5py, Parquet (Morton-sorted)
# ----------------------------------------------------------------------------------------------
def raw_write(path: str, cols: Dict[str, np.ndarray]) -> None:
    with open(path, "wb", buffering=0) as f:
        for c in cols.values():
            mv = memoryview(c).cast("B")
            off = 0
            while off < len(mv):  # write() may be partial for huge buffers
                off += f.write(mv[off:])
        os.fdatasync(f.fileno())


def adios2_write(path: str, cols: Dict[str, np.ndarray]) -> None:
    """ADIOS2 (pip ``adios2``, its default engine for a ``.bp`` path: BP5), one global array
    per column, then every file of the ``.bp`` directory and the directory fsync'd."""
    import adios2

    n = len(next(iter(cols.values())))
    with adios2.Stream(path, "w") as s:
        for name, c in cols.items():
            s.write(name, np.ascontiguousarray(c), [n], [0], [n])
    for name in sorted(os.listdir(path)):
        fsync_path(os.path.join(path, name))
    fsync_path(path)


def fsync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far, all threads (getrusage: microseconds,
    where os.times counts ticks of 10 ms)."""
    import resource

    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def h5_write(path: str, cols: Dict[str, np.ndarray]) -> None:
    import h5py

    with h5py.File(path, "w") as f:
        for name, c in cols.items():
            f.create_dataset(name, data=c)
        f.flush()
        try:
            os.fsync(f.id.get_vfd_handle())
        except Exception:  # pragma: no cover - driver without an fd
            pass
    fd = os.open(path, os.O_RDONLY)  # belt and braces: flush anything written at close
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fmt(v, unit=""):
    if v is None:
        return "-"
    if isinstance(v, float):
        if abs(v) >= 1000:
            s = f"{v:,.0f}"
        elif abs(v) >= 10:
            s = f"{v:.1f}"
        else:
            s = f"{v:.3g}"
    else:
        s = str(v)
    return f"{s} {unit}".strip()


def met_text(met: Optional[bool]) -> str:
    return "-" if met is None else "yes" if met else "NO"  # None: the figure has no target


def table_rows(figs: Dict[str, dict]) -> List[List[str]]:
    rows = []
    for k, f in figs.items():
        first = True
        main = fmt(f["value"], f["unit"])
        if f.get("best_value") is not None:
            main += f" (best {fmt(f['best_value'])})"
        for pname, p in f["peers"].items():
            rows.append([k if first else "", main if first else "", pname, fmt(p["value"], p["unit"]),
                         (f"{p['ratio']:.3g} ({p['ratio_meaning']})" if p["ratio"] is not None else "-"),
                         f["target"] if first else "", met_text(f["met"]) if first else ""])
            first = False
        if first:
            rows.append([k, main, "", "", "", f["target"], met_text(f["met"])])
    return rows


def print_table(figs: Dict[str, dict]) -> str:
    head = ["figure", "motes", "peer / limit", "peer value", "ratio", "target", "met"]
    rows = table_rows(figs)
    w = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    lines = ["  ".join(c.ljust(w[i]) for i, c in enumerate(r)) for r in [head] + rows]
    lines.insert(1, "  ".join("-" * x for x in w))
    return "\n".join(lines)


def markdown_table(figs: Dict[str, dict]) -> str:
    head = ["figure", "motes", "peer / limit", "peer value", "ratio", "target", "met"]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table_rows(figs):
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    return "\n".join(out)


def start_meta(**extra) -> Dict[str, Any]:
    """The ``meta`` of a run at its start: command line, time, machine, load and calibration,
    and the run's own parameters (``extra``); :func:`finish` completes it."""
    return {"command": " ".join(sys.argv), "start": time.strftime("%Y-%m-%d %H:%M:%S %Z"),
            "machine": machine_info(), "loadavg_start": os.getloadavg(), "calibration_ms_start": calibration_ms(),
            **extra}


class Run:
    """A benchmark in progress (see :func:`run`): its ``meta``, its ``figures`` (a dict the
    script fills, or replaces), its ``sections`` (saved beside them) and its ``scratch`` folder."""

    def __init__(self, meta: Dict[str, Any], scratch: str):
        self.meta, self.scratch = meta, scratch
        self.figures: Dict[str, dict] = {}
        self.sections: Dict[str, Any] = {}


@contextlib.contextmanager
def run(out_path: str, scratch_prefix: str, scratch_dir: Optional[str] = None, **meta_extra):
    """How a benchmark runs: ``meta`` from :func:`start_meta` at the start, a scratch folder
    (``scratch_prefix`` in ``scratch_dir``, default bench/) removed at the end whatever happens,
    and, when the block ends without error, :func:`finish` with the run's figures."""
    started = time.perf_counter()
    r = Run(start_meta(**meta_extra), tempfile.mkdtemp(prefix=scratch_prefix, dir=scratch_dir or HERE))
    try:
        yield r
    finally:
        rmpath(r.scratch)
    finish(r.meta, r.figures, out_path, started, **r.sections)


def finish(meta: Dict[str, Any], figs: Dict[str, dict], out_path: str, started: float, **sections) -> None:
    """How every benchmark ends: completes ``meta`` (elapsed time, load, calibration; a warning
    when the motes core was rebuilt during the run), writes the JSON of the run (meta, figures
    and their summary, and ``sections``: what a run records beside figures, such as the rows
    of a sweep) to ``out_path``, and prints the table of the figures."""
    meta.update(elapsed_s=time.perf_counter() - started, loadavg_end=os.getloadavg(),
                calibration_ms_end=calibration_ms())
    from motes import _core

    built = _dt.datetime.fromtimestamp(os.path.getmtime(_core.__file__)).isoformat()
    if built != meta.get("machine", {}).get("motes_core_so_mtime", built):
        meta["warning"] = (f"the installed motes core changed during the run (mtime {built}); "
                           f"figures may mix two builds: run again")
        log("WARNING: " + meta["warning"])
    out = {"meta": meta, "figures": figs,
           "summary": {k: {key: f.get(key) for key in ("value", "unit", "ratio", "ratio_meaning", "target", "met")}
                       for k, f in figs.items()}, **sections}
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    with open(out_path, "w") as f:
        json.dump(out, f, indent=1, default=float)
        f.write("\n")
    if figs:
        print()
        print(print_table(figs))
    log(f"wrote {out_path} in {meta['elapsed_s']:.0f} s (load average {meta['loadavg_start'][0]:.2f} "
        f"-> {meta['loadavg_end'][0]:.2f}; calibration probe {meta['calibration_ms_start']:.2f} -> "
        f"{meta['calibration_ms_end']:.2f} ms)")
