#!/usr/bin/env python3
"""motes serve over loopback: what the viewer waits for, next to the same uvicorn and
Starlette serving a static body.

Usage (from the repository root)::

    python bench/serve.py                          # 100M particles -> bench/results/serve.json
    python bench/serve.py --n 10000000 --load-seconds 20 --out /tmp/serve.json
    python bench/serve.py --only stream,histogram  # figures: stream, histogram, first, page, zoom, load
    python bench/serve.py --dataset /data/run.motes   # serve this synth.vpic step instead of writing one

Data: ``motes.synth.vpic(n, seed=0)`` (8 float32 columns), written with the defaults into a
scratch directory ``bench/.tmp-serve-*`` (deleted at the end). Every server is a child
process started with the command line (``motes serve DATASET --port 0``); the clients run in
this process. Figures:

* ``stream``: points responses of several million particles (``to`` = the largest ladder
  quality under --max-points, the whole box, ``dtype=f32``, columns x, y, z, energy): query,
  frame, (compression,) send, received whole by a socket client that reads into one
  buffer; particles per second, without compression and with zstd and gzip. The peer (the
  anchor) is the same uvicorn and Starlette serving a static 16 MB body (1 M particles
  equivalent at 16 bytes each) to the same client. Target: >= 20 M particles/s.
* ``histogram``: the histogram of the current view: a box holding about 1/8 of the
  volume, ``x=ux`` 64 bins and ``ux`` x ``uy`` 64 x 64, the default budget (2,000,000
  particles); client-side latency and the server's ``query_ms``. Target: <= 100 ms.
* ``first``: a fresh server (started, nothing asked yet): the species' description and
  the first budgeted points request (budget 250,000: the ladder step holds >= 100,000);
  time until those particles are in. Target: <= 1 s. Server start-up (Python, imports,
  opening the datasets) is reported beside it.
* ``page`` and ``zoom``: the viewer in Debian's Chromium (Playwright, SwiftShader), see
  bench/serve_browser.py: the first picture (>= 100,000 particles drawn) after page load,
  and a zoom onto the current sheet until every cell in view is at full quality. Target:
  <= 1 s each.
* ``load``: 50 asyncio clients (httpx) replaying a viewer's mix (descriptions, budgeted
  points of random boxes, 1-D and 2-D histograms) for --load-seconds; p50/p99 latency,
  errors (must be 0) and the server's RSS sampled every 0.5 s.

Times come from ``time.perf_counter``; medians of the repeats. Nothing is asserted about
speed; the JSON records everything (see bench/README.md for the conventions).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
from typing import List, Tuple

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "python"))  # the viewer-like load (server_util)

import benchlib  # noqa: E402
from benchlib import figure, log, peer  # noqa: E402

STATIC_BYTES = 16 << 20
# The zoom figure's regions (the URL fragment's cam: target x, y, z, distance, yaw, pitch).
ZOOM_CAMS = {"onto the current sheet from above, 4 units": "100,50,25,4,0,89",
             "the sparse background beside the sheet, 8 units": "30,80,25,8,0,0"}
PARTICLE_BYTES = 16  # x, y, z, energy as float32


# ---- servers ---------------------------------------------------------------------------------

def start(argv: List[str]) -> Tuple[subprocess.Popen, str, float]:
    """A server child process printing 'open URL'; (process, base URL, seconds to start)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    for line in proc.stdout:
        if line.startswith("open "):
            return proc, line.split()[1].split("?")[0].rstrip("/"), time.perf_counter() - t0
    raise RuntimeError(f"server did not start: {proc.stderr.read()}")


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def motes_server(path: str, *extra: str):
    """``motes serve run=PATH``: the dataset is called ``run`` whatever its file name."""
    return start([sys.executable, "-m", "motes", "serve", "run=" + path, "--port", "0", *extra])


def static_server():
    """The anchor: uvicorn + Starlette answering every GET with the same 16 MB body."""
    return start([sys.executable, os.path.abspath(__file__), "--static-server"])


def run_static_server() -> int:
    import uvicorn
    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    body = np.random.default_rng(0).random(STATIC_BYTES // 4).astype(np.float32).tobytes()

    async def static(request):
        return Response(body, media_type="application/octet-stream")

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"open http://127.0.0.1:{sock.getsockname()[1]}/", flush=True)
    uvicorn.Server(uvicorn.Config(Starlette(routes=[Route("/static", static)]), log_level="warning",
                                  lifespan="off")).run(sockets=[sock])
    return 0


# ---- clients ---------------------------------------------------------------------------------

_BUF = bytearray(8 << 20)


def fetch(base: str, target: str, accept: str = "identity") -> Tuple[int, bytes, int]:
    """GET target with one socket, reading into a buffer (the body is not kept); returns
    (status, the first bytes of the body, bytes received)."""
    host, port = base.split("//")[1].split(":")
    with socket.create_connection((host, int(port))) as s:
        s.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nAccept-Encoding: {accept}\r\n"
                  f"Connection: close\r\n\r\n".encode())
        view, total, head = memoryview(_BUF), 0, b""
        while True:
            n = s.recv_into(view)
            if not n:
                break
            if len(head) < 4096:
                head += bytes(view[:min(n, 4096)])
            total += n
    status = int(head.split(b" ", 2)[1])
    return status, head.partition(b"\r\n\r\n")[2], total


def http_json(base: str, target: str) -> dict:
    import httpx

    r = httpx.get(base + target, timeout=120)
    r.raise_for_status()
    return r.json()


def timed(fn, repeat: int, warmup: int = 1):
    out = None
    times = []
    for i in range(warmup + repeat):
        t0 = time.perf_counter()
        out = fn()
        if i >= warmup:
            times.append(time.perf_counter() - t0)
    return {"best": min(times), "median": statistics.median(times), "runs": times}, out


# ---- figures ---------------------------------------------------------------------------------

def species_url(name: str) -> str:
    return f"/api/v1/datasets/{name}/steps/0/species/particles"


def fig_stream(path: str, name: str, repeat: int) -> dict:
    proc, base, _ = motes_server(path)
    anchor, abase, _ = static_server()
    try:
        sp = species_url(name)
        ladder = http_json(base, sp)["ladder"]
        from motes.server import Limits

        k = max(i for i, c in enumerate(ladder["count"]) if c <= Limits().max_points)
        q, rows = ladder["quality"][k], ladder["count"][k]
        target = f"{sp}/points?to={q!r}&dtype=f32&columns=x,y,z,energy"
        t0 = time.perf_counter()
        fetch(base, target)  # the first time: blocks decoded (then cached by the server's core)
        first_s = time.perf_counter() - t0
        log(f"stream, first request: {rows / first_s / 1e6:.1f} M particles/s ({first_s * 1e3:.0f} ms)")
        results = {}
        for accept in ("identity", "zstd", "gzip"):
            reps = repeat if accept != "gzip" else max(2, repeat // 3)
            timing, (status, _, got) = timed(lambda: fetch(base, target, accept), reps)
            assert status == 200, status
            results[accept] = {"timing_s": timing, "bytes_received": got,
                               "particles_per_s": rows / timing["median"]}
            log(f"stream {accept}: {rows:,} particles, {got / 1e6:.1f} MB in {timing['median'] * 1e3:.0f} ms "
                f"= {rows / timing['median'] / 1e6:.1f} M particles/s")
        timing, (status, _, got) = timed(lambda: fetch(abase, "/static"), repeat)
        anchor_rate = STATIC_BYTES / PARTICLE_BYTES / timing["median"]
        log(f"anchor: {STATIC_BYTES / 1e6:.1f} MB in {timing['median'] * 1e3:.1f} ms = "
            f"{anchor_rate / 1e6:.1f} M particles/s equivalent")
        # The same two with an httpx client (what notebooks use): its own cost is in the figures.
        import httpx

        with httpx.Client(timeout=120) as client:
            def with_httpx(url):
                with client.stream("GET", url, headers={"Accept-Encoding": "identity"}) as r:
                    return sum(len(b) for b in r.iter_raw(1 << 20))

            httpx_motes, _ = timed(lambda: with_httpx(base + target), repeat)
            httpx_anchor, _ = timed(lambda: with_httpx(abase + "/static"), repeat)
        log(f"httpx client: motes {rows / httpx_motes['median'] / 1e6:.1f} M particles/s, anchor "
            f"{STATIC_BYTES / PARTICLE_BYTES / httpx_anchor['median'] / 1e6:.1f} M particles/s equivalent")
    finally:
        stop(proc)
        stop(anchor)
    v = results["identity"]["particles_per_s"]
    peers = {"static 16 MB body, same uvicorn + Starlette (anchor)":
             peer(anchor_rate / 1e6, "M particles/s equivalent", v / anchor_rate, "motes rate / anchor rate",
                  timing_s=timing, bytes=STATIC_BYTES)}
    httpx_rate, httpx_anchor_rate = rows / httpx_motes["median"], STATIC_BYTES / PARTICLE_BYTES / httpx_anchor["median"]
    peers["motes, httpx client"] = peer(httpx_rate / 1e6, "M particles/s", httpx_rate / httpx_anchor_rate,
                                        "motes rate / anchor rate, both with httpx", timing_s=httpx_motes)
    peers["anchor, httpx client"] = peer(httpx_anchor_rate / 1e6, "M particles/s equivalent", None, "",
                                         timing_s=httpx_anchor)
    for accept in ("zstd", "gzip"):
        r = results[accept]
        peers[f"motes with Content-Encoding {accept}"] = peer(
            r["particles_per_s"] / 1e6, "M particles/s", r["particles_per_s"] / v, "compressed rate / uncompressed rate",
            timing_s=r["timing_s"], bytes_received=r["bytes_received"])
    return figure("stream", "points responses (query + frame + send) over loopback, dtype=f32, x,y,z,energy",
                  v / 1e6, "M particles/s", timing=results["identity"]["timing_s"], peers=peers,
                  ratio=v / anchor_rate, ratio_meaning="motes rate / anchor rate",
                  target=">= 20 M particles/s per process", met=v >= 20e6, rows=rows, quality=q,
                  first_request={"seconds": first_s, "particles_per_s": rows / first_s},
                  bytes_received=results["identity"]["bytes_received"], target_url=target)


def fig_histogram(path: str, name: str, repeat: int) -> dict:
    import httpx

    proc, base, _ = motes_server(path)
    client = httpx.Client(timeout=120)  # one connection, kept alive, as a browser does
    try:
        sp = species_url(name)
        info = http_json(base, sp)
        lo, hi = info["bounds"]["min"], info["bounds"]["max"]
        box = [l + (h - l) * f for l, h, f in zip(lo, hi, (0.25, 0.25, 0.25))] + \
              [l + (h - l) * f for l, h, f in zip(lo, hi, (0.75, 0.75, 0.75))]
        out = {}
        cases = (("1-D ux, 64 bins", "x=ux&bins=64"), ("2-D ux x uy, 64 x 64", "x=ux&y=uy&bins=64&ybins=64"),
                 ("1-D ux, 64 bins, exact (quality=1: every particle in the box)", "x=ux&bins=64&quality=1"),
                 ("1-D ux, 64 bins, the whole step exact (quality=1, no box)", "x=ux&bins=64&quality=1&nobox"),
                 ("1-D ux, 64 bins, filtered: energy > 1 (default budget)", "x=ux&bins=64&where=energy%20%3E%201"))
        for label, extra in cases:
            if extra.endswith("&nobox"):
                target = f"{sp}/histogram?{extra[:-len('&nobox')]}"
            else:
                target = f"{sp}/histogram?{extra}&box={','.join(map(repr, box))}"
            answers = []

            def once():
                r = client.get(base + target, headers={"Accept-Encoding": "zstd"})
                r.raise_for_status()
                answers.append(r.json())
                return answers[-1]

            timing, d = timed(once, repeat, warmup=2)
            server_ms = statistics.median(a["query_ms"] for a in answers[2:])
            out[label] = {"timing_s": timing, "server_query_ms": server_ms, "quality": d["quality"],
                          "counted": d["total"]}
            log(f"histogram {label}: {timing['median'] * 1e3:.1f} ms (server {server_ms:.1f} ms), quality "
                f"{d['quality']:.3f}, {d['total']:,} particles counted")
    finally:
        client.close()
        stop(proc)
    main = out["1-D ux, 64 bins"]
    v = main["timing_s"]["median"] * 1e3
    return figure("histogram", "histogram of the current view (a box of 1/8 of the volume), default budget "
                  "(2,000,000 particles), client latency over loopback", v, "ms", timing=main["timing_s"],
                  peers={label: peer(o["timing_s"]["median"] * 1e3, "ms", None, "", **o)
                         for label, o in out.items() if label != "1-D ux, 64 bins"},
                  target="<= 100 ms", met=v <= 100 and out["2-D ux x uy, 64 x 64"]["timing_s"]["median"] <= 0.1,
                  box=box, details=out)


def fig_first(path: str, name: str, repeat: int) -> dict:
    runs, starts, rows = [], [], []
    sp = species_url(name)
    for _ in range(repeat):
        proc, base, started = motes_server(path)
        try:
            t0 = time.perf_counter()
            http_json(base, sp)
            status, body, _ = fetch(base, f"{sp}/points?budget=250000&dtype=f32&columns=x,y,z,energy", "zstd")
            runs.append(time.perf_counter() - t0)
            assert status == 200
            starts.append(started)
        finally:
            stop(proc)
        proc, base, _ = motes_server(path)  # the frame's row count, from an uncompressed answer
        try:
            status, body, _ = fetch(base, f"{sp}/points?budget=250000&dtype=f32&columns=x,y,z,energy")
            rows.append(json.loads(body[16:16 + int.from_bytes(body[12:16], "little")])["rows"])
        finally:
            stop(proc)
    timing = {"best": min(runs), "median": statistics.median(runs), "runs": runs}
    log(f"first: {timing['median'] * 1e3:.0f} ms to {rows[0]:,} particles (server start-up "
        f"{statistics.median(starts):.2f} s)")
    return figure("first", "a fresh server: description + first budgeted points (budget 250,000, zstd)",
                  timing["median"], "s", timing=timing,
                  peers={"server start-up (python -m motes serve until it listens)":
                         peer(statistics.median(starts), "s", None, "", runs=starts)},
                  target="<= 1 s", met=timing["median"] <= 1.0, particles=rows[0])


def rss_sampler(pid: int, samples: List[Tuple[float, int, int, int]], stop_event: threading.Event) -> None:
    """(seconds, VmRSS, RssAnon, RssFile) every 0.5 s: RssFile is the mapped data files' pages
    (the page cache, shared), RssAnon the process's own memory (the decoded-block cache, frames)."""
    t0 = time.perf_counter()
    while not stop_event.is_set():
        try:
            with open(f"/proc/{pid}/status") as f:
                fields = {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f
                          if line.startswith(("VmRSS:", "RssAnon:", "RssFile:"))}
            samples.append((round(time.perf_counter() - t0, 2), fields["VmRSS"], fields["RssAnon"], fields["RssFile"]))
        except OSError:
            return
        stop_event.wait(0.5)


def server_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process and its threads so far (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def block_cache_bytes() -> int:
    from motes import _core

    return int(_core.block_cache_bytes())


def fig_load(path: str, name: str, seconds: float, clients: int) -> dict:
    from server_util import viewer_load

    proc, base, _ = motes_server(path)
    samples: List[Tuple[float, int]] = []
    done = threading.Event()
    sampler = threading.Thread(target=rss_sampler, args=(proc.pid, samples, done), daemon=True)
    sampler.start()
    cpu0, server0 = os.times(), server_cpu_s(proc.pid)
    try:
        results = asyncio.run(viewer_load(base, name, 0, "particles", clients=clients, seconds=seconds))
    finally:
        cpu1, server1 = os.times(), server_cpu_s(proc.pid)
        done.set()
        sampler.join()
        stop(proc)
    cpu = {"clients (this process)": (cpu1.user - cpu0.user) + (cpu1.system - cpu0.system),
           "server": server1 - server0, "wall": seconds}
    errors = [r for r in results if r[1] != 200]
    lat = np.array([r[2] for r in results]) * 1e3
    by_kind = {}
    for kind in sorted({r[0] for r in results}):
        t = np.array([r[2] for r in results if r[0] == kind]) * 1e3
        by_kind[kind] = {"requests": len(t), "p50_ms": float(np.percentile(t, 50)), "p99_ms": float(np.percentile(t, 99))}
    rss, anon = [s[1] for s in samples], [s[2] for s in samples]
    third = max(1, len(rss) // 3)
    log(f"load: {len(results):,} requests in {seconds:g} s by {clients} clients, {len(errors)} errors, p50 "
        f"{np.percentile(lat, 50):.0f} ms, p99 {np.percentile(lat, 99):.0f} ms, RSS {rss[0] / 2**20:.0f} -> "
        f"max {max(rss) / 2**20:.0f} MiB (anonymous: max {max(anon) / 2**20:.0f} MiB, in the first third "
        f"{max(anon[:third]) / 2**20:.0f}, the last {max(anon[-third:]) / 2**20:.0f})")
    p99 = float(np.percentile(lat, 99))
    log(f"load: CPU seconds over {seconds:g} s: clients {cpu['clients (this process)']:.1f}, server {cpu['server']:.1f}")
    return figure("load", f"{clients} viewer-like clients for {seconds:g} s (describe, budgeted points, 1-D and 2-D "
                  "histograms), one server process", p99, "ms (p99)",
                  peers={}, target="0 errors, p99 <= 1 s; RSS bounded", met=not errors and p99 <= 1000,
                  cpu_s=cpu,
                  requests=len(results), requests_per_s=len(results) / seconds, errors=len(errors),
                  error_examples=[list(map(str, e)) for e in errors[:5]],
                  p50_ms=float(np.percentile(lat, 50)), p99_ms=float(np.percentile(lat, 99)), by_kind=by_kind,
                  rss_bytes={"first": rss[0], "max": max(rss), "max_first_third": max(rss[:third]),
                             "max_last_third": max(rss[-third:])},
                  rss_anon_bytes={"first": anon[0], "max": max(anon), "max_first_third": max(anon[:third]),
                                  "max_last_third": max(anon[-third:])},
                  block_cache_bytes=block_cache_bytes(),
                  rss_samples={"columns": ["seconds", "VmRSS", "RssAnon", "RssFile"], "rows": samples})


# ---- main ------------------------------------------------------------------------------------

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000_000, help="particles of the step served")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--load-seconds", type=float, default=60.0)
    ap.add_argument("--clients", type=int, default=50)
    ap.add_argument("--only", default="stream,histogram,first,page,zoom,load")
    ap.add_argument("--dataset", help="serve this dataset (a synth.vpic step) instead of writing one")
    ap.add_argument("--out", default=os.path.join(HERE, "results", "serve.json"))
    ap.add_argument("--static-server", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.static_server:
        return run_static_server()
    import motes
    from motes import synth

    only = args.only.split(",")
    with benchlib.run(args.out, ".tmp-serve-", n=args.n, repeat=args.repeat) as r:
        tmp, meta, figs = r.scratch, r.meta, r.figures
        if args.dataset:
            path = os.path.abspath(args.dataset)
            meta["n"] = motes.open(path).count_total()
        else:
            path = os.path.join(tmp, "run.motes")
            log(f"writing {args.n:,} VPIC-like particles")
            data = synth.vpic(args.n, seed=0)
            t0 = time.perf_counter()
            motes.write(path, data, sync=False)
            meta["write_s"] = time.perf_counter() - t0
            del data
        meta["file_bytes"] = benchlib.du(path)
        if "first" in only:
            figs["first"] = fig_first(path, "run", max(3, args.repeat // 2))
        if "stream" in only:
            figs["stream"] = fig_stream(path, "run", args.repeat)
        if "histogram" in only:
            figs["histogram"] = fig_histogram(path, "run", max(args.repeat, 10))
        if "page" in only or "zoom" in only:
            import serve_browser

            def start_server():
                proc, base, _ = motes_server(path)
                return proc, base
            if "page" in only:
                figs["page"] = serve_browser.fig_page(start_server, stop, "run", max(3, args.repeat // 2))
            if "zoom" in only:
                figs["zoom"] = serve_browser.fig_zoom(start_server, stop, "run", ZOOM_CAMS,
                                                      max(3, args.repeat // 2))
        if "load" in only:
            figs["load"] = fig_load(path, "run", args.load_seconds, args.clients)
    return 0


if __name__ == "__main__":
    sys.exit(main())
