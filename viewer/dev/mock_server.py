"""DEVELOPMENT TOOL ONLY: a small stand-in for `motes serve`, for working on the viewer
before the real server (python/motes/server/) exists. It follows docs/http-api.md closely
enough for the app (points frames with cells and budgets, histograms, export, tokens) but
skips what a real server must do (limits, ETags, compression, cancellation, time limits)
and is slow on big data (it estimates budgets from every particle's level, in memory).

    .venv/bin/python viewer/dev/mock_server.py DATASET [NAME=DATASET ...] [--port 8765] [--token T]

Then open http://127.0.0.1:8765/ (the app built into python/motes/server/app/).
Never ship or deploy this file; the browser tests use the real `motes serve`.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import os
import struct
import time
from pathlib import Path

import numpy as np
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

import motes
from motes.errors import MotesError, NotFoundError, UsageError

APP_DIR = Path(__file__).resolve().parents[2] / "python" / "motes" / "server" / "app"
MAGIC, VERSION, ALIGN = b"MOTESFRM", 1, 8
DTYPES = {"float32": "f32", "float64": "f64", "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
          "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64"}


class HttpError(Exception):
    def __init__(self, status: int, kind: str, message: str):
        super().__init__(message)
        self.status, self.kind, self.message = status, kind, message


def _floats(text: str, n: int, what: str) -> list:
    try:
        v = [float(t) for t in text.split(",")]
    except ValueError:
        raise HttpError(400, "usage", f"{what}: not numbers: {text!r}") from None
    if len(v) != n:
        raise HttpError(400, "usage", f"{what}: expected {n} numbers, got {len(v)}")
    return v


class Species:
    """One species of one step, with each particle's ladder rung (for budgets)."""

    def __init__(self, ds: motes.Dataset, step: int, name: str):
        self.ds, self.step, self.name = ds, step, name
        src = ds.source(step, name)
        self.K = max(src.part(k).level_count for k in range(src.part_count))
        self.ladder_q = [k / self.K for k in range(self.K + 1)]
        self.ladder_n = [ds.count(quality=q, step=step, species=name) if q > 0 else 0 for q in self.ladder_q]
        pos, rung = [], []
        for k in range(1, self.K + 1):
            t = ds.query(quality=((k - 1) / self.K, k / self.K), columns=["x", "y", "z"], step=step, species=name)
            pos.append(np.stack([t["x"], t["y"], t["z"]], axis=1).astype(np.float64))
            rung.append(np.full(len(t["x"]), k, np.int64))
        self.pos, self.rung = np.concatenate(pos), np.concatenate(rung)
        lo, hi = ds.bounds(step, name)
        self.lo, self.hi = np.array(lo, np.float64), np.array(hi, np.float64)

    def rung_of(self, q: float) -> int:
        return min(self.K, max(0, math.ceil(q * self.K - 1e-9)))

    def in_cell(self, pos: np.ndarray, c) -> np.ndarray:
        m = np.ones(len(pos), bool)
        for a in range(3):
            m &= pos[:, a] >= c[a]
            m &= (pos[:, a] < c[3 + a]) | (c[3 + a] >= self.hi[a])
        return m

    def cumulative(self, mask: np.ndarray) -> np.ndarray:
        return np.cumsum(np.bincount(self.rung[mask], minlength=self.K + 1))

    def pick(self, cells, budget: int) -> tuple:
        """(to, estimate): the largest rung whose total over the cells stays within budget."""
        cums = [(self.cumulative(self.in_cell(self.pos, c)), self.rung_of(c[6])) for c in cells]
        k_min = min(k0 for _, k0 in cums)
        best = None
        for k in range(k_min + 1, self.K + 1):
            total = sum(int(cum[k] - cum[k0]) for cum, k0 in cums if k > k0)
            if total <= budget or best is None:
                best = (k, total)
            if total > budget:
                break
        if best is None:
            return 1.0, 0
        return self.ladder_q[best[0]], best[1]

    def describe(self) -> dict:
        cols = {c["name"]: c for c in self.ds.describe(self.step, self.name)["files"][0]["columns"]}
        st = self.ds.step(self.step)
        return {"dataset": None, "step": self.step, "time": st.time, "species": self.name,
                "count": self.ds.count_total(self.step, self.name),
                "bounds": {"min": self.lo.tolist(), "max": self.hi.tolist()},
                "columns": [{k: c[k] for k in ("name", "dtype", "unit", "unit_label", "index", "error_bound", "min",
                                              "max", "nan_count")} for c in cols.values()],
                "hierarchy": {"parts": 1, "lod_count": 8},
                "ladder": {"quality": self.ladder_q, "count": self.ladder_n}}


class Server:
    def __init__(self, datasets: dict, token: str | None, max_points: int):
        self.datasets = {n: motes.open(p) for n, p in datasets.items()}
        self.token, self.max_points = token, max_points
        self.cache: dict = {}

    def species(self, ds: str, step: str, sp: str) -> Species:
        d = self.datasets.get(ds)
        if d is None:
            raise HttpError(404, "not_found", f"no dataset '{ds}'")
        try:
            step_i = int(step)
            d.step(step_i)
        except (ValueError, UsageError):
            raise HttpError(404, "not_found", f"dataset '{ds}' has no step {step}") from None
        if sp not in d.step(step_i).species:
            raise HttpError(404, "not_found", f"step {step_i} has no species '{sp}'")
        key = (ds, step_i, sp)
        if key not in self.cache:
            self.cache[key] = Species(d, step_i, sp)
        return self.cache[key]

    def check_token(self, request: Request) -> None:
        if self.token is None:
            return
        got = request.query_params.get("token") or request.cookies.get("motes_token")
        auth = request.headers.get("authorization", "")
        if auth.startswith("Bearer "):
            got = auth[7:]
        if got != self.token:
            raise HttpError(401, "auth", "token missing or wrong")


def frame(columns: dict, header: dict) -> bytes:
    cols, offset = [], 0
    for name, arr in columns.items():
        cols.append({"name": name, "dtype": DTYPES[arr.dtype.name], "offset": 0, "bytes": arr.nbytes})
    for _ in range(2):  # the header's length depends on the offsets; two passes settle it
        head = json.dumps({**header, "columns": cols}).encode()
        offset = -(-(16 + len(head)) // ALIGN) * ALIGN
        for c, arr in zip(cols, columns.values()):
            c["offset"] = offset
            offset += -(-arr.nbytes // ALIGN) * ALIGN
    head = json.dumps({**header, "columns": cols}).encode()
    out = bytearray(offset)
    out[0:16] = MAGIC + struct.pack("<II", VERSION, len(head))
    out[16:16 + len(head)] = head
    for c, arr in zip(cols, columns.values()):
        out[c["offset"]:c["offset"] + arr.nbytes] = np.ascontiguousarray(arr).astype(arr.dtype.newbyteorder("<")).tobytes()
    return bytes(out)


def build_app(server: Server) -> Starlette:
    def endpoint(fn):
        async def handler(request: Request):
            try:
                server.check_token(request)
                return fn(request, **request.path_params)
            except HttpError as e:
                return JSONResponse({"error": {"status": e.status, "kind": e.kind, "message": e.message}}, e.status)
            except NotFoundError as e:
                return JSONResponse({"error": {"status": 404, "kind": "not_found", "message": str(e)}}, 404)
            except MotesError as e:
                return JSONResponse({"error": {"status": 422, "kind": "usage", "message": str(e)}}, 422)
        return handler

    def health(request):
        return JSONResponse({"ok": True, "version": motes.__version__, "datasets": len(server.datasets), "mock": True})

    def datasets(request):
        return JSONResponse({"datasets": [{"name": n, "steps": len(d.steps), "species": d.species_names(),
                                           "particles": sum(d.count_total(d.steps[-1], s) for s in d.species_names())}
                                          for n, d in server.datasets.items()]})

    def dataset(request, ds):
        d = server.datasets.get(ds)
        if d is None:
            raise HttpError(404, "not_found", f"no dataset '{ds}'")
        info = d.describe()
        return JSONResponse({"name": ds, "attributes": info["attributes"], "steps": info["steps"]})

    def species(request, ds, step, sp):
        s = server.species(ds, step, sp)
        return JSONResponse({**s.describe(), "dataset": ds})

    def points(request, ds, step, sp):
        s = server.species(ds, step, sp)
        p = request.query_params
        names = [c.name for c in s.ds.schema(s.step, s.name)]
        cols = p["columns"].split(",") if "columns" in p else names
        for c in cols:
            if c not in names:
                raise HttpError(422, "usage", f"unknown column '{c}' (columns: {', '.join(names)})")
        cells = [_floats(c, 7, "cells") for c in p["cells"].split(";")] if "cells" in p else \
            [[*s.lo, *s.hi, 0.0]]
        t0 = time.perf_counter()
        estimate = None
        if "budget" in p:
            to, estimate = s.pick(cells, int(p["budget"]))
        else:
            to = float(p.get("to", "1"))
        f32 = p.get("dtype", "native") == "f32"
        origin = _floats(p["origin"], 3, "origin") if "origin" in p else list(s.lo)
        parts, counts = [], []
        for c in cells:
            if c[6] >= to:
                counts.append(0)
                continue
            t = s.ds.query(p.get("where"), box=c[:6], quality=(c[6], to), columns=sorted(set(cols) | {"x", "y", "z"}),
                           step=s.step, species=s.name)
            m = s.in_cell(np.stack([t["x"], t["y"], t["z"]], axis=1), c)
            parts.append({k: t[k][m] for k in cols})
            counts.append(int(m.sum()))
        if sum(counts) > server.max_points:
            raise HttpError(413, "too_large", f"points found: {sum(counts):,} is over the limit of "
                                              f"{server.max_points:,} (--max-points)")
        out = {}
        for k in cols:
            arr = np.concatenate([q[k] for q in parts]) if parts else np.zeros(0, s.ds.schema(s.step, s.name)[0].dtype)
            if f32:
                arr = (arr.astype(np.float64) - origin["xyz".index(k)]) if k in ("x", "y", "z") else arr
                arr = arr.astype(np.float32)
            out[k] = arr
        header = {"rows": sum(counts), "to": to, "cells": [{"rows": n} for n in counts],
                  "query_ms": (time.perf_counter() - t0) * 1e3}
        if f32:
            header["origin"] = origin
        if estimate is not None:
            header["estimate"] = estimate
        return Response(frame(out, header), media_type="application/vnd.motes.frame")

    def histogram(request, ds, step, sp):
        s = server.species(ds, step, sp)
        p = request.query_params
        box = _floats(p["box"], 6, "box") if "box" in p else None
        if "quality" in p:
            quality = float(p["quality"])
        else:
            budget = int(p.get("budget", 2_000_000))
            inside = np.ones(len(s.pos), bool) if box is None else \
                np.all((s.pos >= box[:3]) & (s.pos <= box[3:]), axis=1)
            cum = s.cumulative(inside)
            k = max([1] + [k for k in range(1, s.K + 1) if cum[k] <= budget])
            quality = s.ladder_q[k]
        axes = [p["x"]] + ([p["y"]] if "y" in p else [])
        bins = [int(p.get("bins", 64))] + ([int(p.get("ybins", 64))] if "y" in p else [])
        ranges = [_floats(p["range"], 2, "range") if "range" in p else None]
        if "y" in p:
            ranges.append(_floats(p["yrange"], 2, "yrange") if "yrange" in p else None)
        cols = {c["name"]: c for c in s.describe()["columns"]}
        for i, a in enumerate(axes):
            if a not in cols:
                raise HttpError(422, "usage", f"unknown column '{a}'")
            if ranges[i] is None:
                ranges[i] = [cols[a]["min"], cols[a]["max"]]
        t0 = time.perf_counter()
        h = s.ds.histogram(axes[0], axes[1] if len(axes) > 1 else None, bins=bins if len(axes) > 1 else bins[0],
                           range=ranges if len(axes) > 1 else ranges[0], where=p.get("where"), box=box,
                           quality=quality, step=s.step, species=s.name)
        counts = h[0]
        body = {"x": {"column": axes[0], "bins": bins[0], "range": ranges[0]}, "counts": counts.tolist(),
                "quality": quality, "exact": quality >= 1, "total": int(counts.sum()),
                "query_ms": (time.perf_counter() - t0) * 1e3}
        if len(axes) > 1:
            body["y"] = {"column": axes[1], "bins": bins[1], "range": ranges[1]}
        return JSONResponse(body)

    def export(request, ds, step, sp):
        import pyarrow as pa
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq

        s = server.species(ds, step, sp)
        p = request.query_params
        fmt = p.get("format", "csv")
        box = _floats(p["box"], 6, "box") if "box" in p else None
        cols = p["columns"].split(",") if "columns" in p else None
        t = s.ds.query(p.get("where"), box=box, quality=float(p.get("quality", 1)), columns=cols, step=s.step,
                       species=s.name).to_arrow()
        buf = io.BytesIO()
        (pacsv.write_csv if fmt == "csv" else pq.write_table)(t, buf)
        name = f"{ds}-step{s.step}-{s.name}.{fmt}"
        return Response(buf.getvalue(), media_type="text/csv" if fmt == "csv" else "application/vnd.apache.parquet",
                        headers={"Content-Disposition": f'attachment; filename="{name}"'})

    async def index(request):
        if server.token is not None and request.query_params.get("token") != server.token:
            return JSONResponse({"error": {"status": 401, "kind": "auth", "message": "token missing or wrong"}}, 401)
        return FileResponse(APP_DIR / "index.html", headers={
            "Content-Security-Policy": "default-src 'self'; img-src 'self' data: blob:; style-src 'self'"})

    base = "/api/v1/datasets/{ds}/steps/{step}/species/{sp}"
    routes = [Route("/api/v1/health", endpoint(health)), Route("/api/v1/datasets", endpoint(datasets)),
              Route("/api/v1/datasets/{ds}", endpoint(dataset)), Route(base, endpoint(species)),
              Route(base + "/points", endpoint(points)), Route(base + "/histogram", endpoint(histogram)),
              Route(base + "/export", endpoint(export)), Route("/", index)]
    if (APP_DIR / "assets").is_dir():
        routes.append(Mount("/assets", StaticFiles(directory=APP_DIR / "assets")))
    return Starlette(routes=routes)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("datasets", nargs="+", metavar="[NAME=]PATH")
    ap.add_argument("--port", type=int, default=8765)
    ap.add_argument("--token")
    ap.add_argument("--max-points", type=int, default=8_000_000)
    args = ap.parse_args()
    named = {}
    for d in args.datasets:
        name, _, path = d.rpartition("=") if "=" in d else (Path(d.rstrip("/")).name.removesuffix(".motes"), "", d)
        named[name] = os.path.abspath(path)
    print(f"mock server (development only): http://127.0.0.1:{args.port}/", flush=True)
    uvicorn.run(build_app(Server(named, args.token, args.max_points)), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
