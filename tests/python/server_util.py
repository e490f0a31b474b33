"""Helpers of the server tests: datasets with particles on cell faces, a reference parser
of the frame (written from docs/http-api.md, not from the server's code), a real uvicorn
on 127.0.0.1 (in this process, in a thread), raw HTTP requests, and the oracle of a cell."""

from __future__ import annotations

import json
import socket
import struct
import threading
import time
import warnings
from typing import Dict, Optional, Tuple

import numpy as np

import motes
from motes import synth

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)
DTYPES = {"f32": "<f4", "f64": "<f8", "i8": "<i1", "i16": "<i2", "i32": "<i4", "i64": "<i8",
          "u8": "<u1", "u16": "<u2", "u32": "<u4", "u64": "<u8"}  # as docs/http-api.md lists them


def lattice_data(n: int, seed: int, spacing: float = 0.25, size=(4.0, 2.0, 1.0)) -> Dict[str, np.ndarray]:
    """Particles of which many sit exactly on lattice planes (multiples of ``spacing``, shared
    faces of cells cut there), several at each lattice point, the rest anywhere."""
    rng = np.random.default_rng(seed)
    pos = rng.random((n, 3)) * np.array(size)
    on = rng.random(n) < 0.6  # snapped to the lattice on every axis
    pos[on] = np.round(pos[on] / spacing) * spacing
    face = (~on) & (rng.random(n) < 0.5)  # on one lattice plane only
    axis = rng.integers(0, 3, n)
    for a in range(3):
        sel = face & (axis == a)
        pos[sel, a] = np.round(pos[sel, a] / spacing) * spacing
    data = {"x": pos[:, 0].astype(np.float32), "y": pos[:, 1].astype(np.float32), "z": pos[:, 2].astype(np.float32)}
    data["energy"] = rng.random(n).astype(np.float32)
    data["ux"] = rng.normal(0, 0.2, n)  # float64
    data["id"] = np.arange(n, dtype=np.uint64)
    data["kind"] = rng.integers(-3, 3, n).astype(np.int16)
    return data


def write_lattice(path, n=30_000, seed=1):
    data = lattice_data(n, seed)
    motes.write(path, data, **SMALL)
    return data


def write_parted(path, n=24_000, parts=4, seed=2):
    """A species of several part files behind a step index (slabs along x)."""
    data = lattice_data(n, seed)
    order = np.argsort(data["x"], kind="stable")
    chunks = [{k: v[p] for k, v in data.items()} for p in np.array_split(order, parts)]
    motes.Writer(path, **SMALL).write_step_chunks(0, {"particles": chunks})
    return data


def write_vpic(path, n, seed=3, steps=1):
    for s in range(steps):
        motes.write(path, synth.vpic(n, seed=seed + s, with_id=True), step=s, time=0.5 * s, **SMALL)


def parse_frame(body: bytes) -> Tuple[dict, Dict[str, np.ndarray]]:
    """The frame of docs/http-api.md, checked byte by byte: magic, version, header, zero
    padding, 8-aligned column offsets, zero bytes between columns, nothing after."""
    assert body[:8] == b"MOTESFRM", body[:8]
    version, h = struct.unpack("<II", body[8:16])
    assert version == 1
    header = json.loads(body[16:16 + h].decode("utf-8"))
    columns = sorted(header["columns"], key=lambda c: c["offset"])
    end = 16 + h
    out = {}
    for c in columns:
        assert c["offset"] % 8 == 0 and c["offset"] >= end, (c, end)
        assert body[end:c["offset"]] == b"\0" * (c["offset"] - end), "padding is not zero"
        dt = np.dtype(DTYPES[c["dtype"]])
        assert c["bytes"] == header["rows"] * dt.itemsize
        out[c["name"]] = np.frombuffer(body, dtype=dt, count=header["rows"], offset=c["offset"])
        end = c["offset"] + c["bytes"]
    assert len(body) == end or not columns
    assert sum(cell["rows"] for cell in header["cells"]) == header["rows"]
    return header, out


def in_cell(table, lo, hi, top) -> np.ndarray:
    """The cell's particles, by the rule of docs/http-api.md: lo <= v < hi on each axis, but
    a particle at the axis' maximum belongs to a cell with lo < top <= hi, or lo = hi = top."""
    keep = np.ones(len(table["x"]), dtype=bool)
    for a, axis in enumerate("xyz"):
        v = np.asarray(table[axis], dtype=np.float64)
        if hi[a] < top[a]:
            keep &= (v >= lo[a]) & (v < hi[a])
        elif lo[a] < top[a] or lo[a] == hi[a] == top[a]:
            keep &= (v >= lo[a]) & (v <= hi[a])
        else:
            keep &= False
    return keep


def cells_param(cells) -> str:
    return ";".join(",".join(repr(float(v)) for v in (*lo, *hi, q0)) for lo, hi, q0 in cells)


def make_client(app, base_url: str = "http://127.0.0.1:8765"):
    """Starlette's TestClient of ``app`` (its warning that it prefers httpx2 silenced), its
    requests addressed to ``base_url`` (the Host header the server checks)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from starlette.testclient import TestClient

    return TestClient(app, base_url=base_url)


class LiveServer:
    """A real uvicorn serving ``app`` on 127.0.0.1 (a free port), in a thread of this process,
    started as ``motes serve`` starts it (its connection rules, its access log)."""

    def __init__(self, app, log_level: str = "warning"):
        from motes.server import listen

        self.app = app
        self.sock = listen.listen("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.server = listen.server(app, app.state.server.config, log_level=log_level)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self):
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc):
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


def raw_request(port: int, target: str, method: str = "GET", headers: Optional[Dict[str, str]] = None,
                body: bytes = b"", timeout: float = 30) -> Tuple[int, Dict[str, str], bytes]:
    """One HTTP/1.1 request exactly as written (no normalisation of the target); (status,
    headers, body). ``headers`` may replace the Host (127.0.0.1:port)."""
    headers = dict(headers or {})
    lines = [f"{method} {target} HTTP/1.1", f"Host: {headers.pop('Host', f'127.0.0.1:{port}')}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body)
        data = b""
        while True:
            chunk = s.recv(1 << 16)
            if not chunk:
                break
            data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    hdrs = {}
    for line in header_lines:
        k, _, v = line.partition(":")
        hdrs[k.strip().lower()] = v.strip()
    if hdrs.get("transfer-encoding") == "chunked":
        body_out, rest2 = b"", rest
        while True:
            size_line, _, rest2 = rest2.partition(b"\r\n")
            size = int(size_line, 16)
            if size == 0:
                break
            body_out += rest2[:size]
            rest2 = rest2[size + 2:]
        rest = body_out
    return int(status_line.split()[1]), hdrs, rest


def start_cli_server(args, timeout: float = 30):
    """``motes serve ARGS --port 0`` in a child process; returns (process, base URL)."""
    import os
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "motes", "serve", *args, "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        if line.startswith("open "):
            return proc, line.split()[1].split("?")[0].rstrip("/")
        assert time.monotonic() < deadline, "motes serve did not start"
    raise AssertionError(f"motes serve exited: {proc.stderr.read()}")


async def viewer_load(base: str, dataset: str, step: int, species: str, clients: int, seconds: float, seed: int = 0):
    """``clients`` asyncio clients replaying what a viewer asks for, for ``seconds``: the
    species' description, points of random boxes with budgets (float32, as the viewer
    draws them), 1-D and 2-D histograms of the view. Returns per request (kind, status or
    error text, seconds)."""
    import asyncio
    import random

    import httpx

    sp = f"{base}/api/v1/datasets/{dataset}/steps/{step}/species/{species}"
    results = []
    async with httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=clients)) as client:
        info = (await client.get(sp)).json()
        lo, hi = info["bounds"]["min"], info["bounds"]["max"]
        columns = [c["name"] for c in info["columns"]]
        extra = [c for c in columns if c not in ("x", "y", "z")][:1]

        def box(rng):
            a = [rng.uniform(l, h) for l, h in zip(lo, hi)]
            b = [rng.uniform(l, h) for l, h in zip(lo, hi)]
            return [min(p, q) for p, q in zip(a, b)], [max(p, q) for p, q in zip(a, b)]

        async def one(k):
            rng = random.Random(seed * 1000 + k)
            stop = time.monotonic() + seconds
            while time.monotonic() < stop:
                kind = rng.choices(["describe", "points", "histogram", "histogram2d"], [1, 5, 2, 2])[0]
                b_lo, b_hi = box(rng)
                if kind == "describe":
                    url, params = sp, {}
                elif kind == "points":
                    cells = cells_param([(b_lo, b_hi, 0.0)] if rng.random() < 0.5 else
                                        [(lo, hi, 0.0)])
                    url, params = sp + "/points", {"cells": cells, "budget": str(rng.choice([10_000, 50_000, 200_000])),
                                                   "dtype": "f32", "columns": ",".join(["x", "y", "z", *extra])}
                else:
                    url = sp + "/histogram"
                    params = {"x": extra[0] if extra else "x", "box": ",".join(map(repr, b_lo + b_hi)),
                              "bins": "64"}
                    if kind == "histogram2d":
                        params.update(y="x", ybins="64")
                t0 = time.perf_counter()
                try:
                    # The body as sent (zstd), not decoded: the clients share the server's cores,
                    # and what is measured is the server's answer, not the client's decoding.
                    async with client.stream("GET", url, params=params, headers={"Accept-Encoding": "zstd"}) as r:
                        async for _ in r.aiter_raw():
                            pass
                    outcome = r.status_code
                except Exception as e:  # counted as an error
                    outcome = f"{type(e).__name__}: {e}"
                results.append((kind, outcome, time.perf_counter() - t0))

        await asyncio.gather(*(one(k) for k in range(clients)))
    return results
