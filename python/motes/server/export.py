"""Exports (docs/http-api.md, "Export"): the matching particles as CSV or Parquet, counted
first (over --max-export-rows: 413 before anything is sent; the count is held to
--query-timeout), then read and written in batches (Dataset.query_batches), each in a
worker thread, and sent as they are made; a client that leaves stops them."""

from __future__ import annotations

import re
from typing import Any, AsyncIterator, Dict, List

import numpy as np
from starlette.requests import Request
from starlette.responses import Response

from ..table import Table
from ..dtypes import numpy_dtype
from .cells import quality
from .config import EXPORT_BATCH_ROWS, Limits
from .errors import bad_request, over_limit
from .params import Params
from .queries import columns_of, where_of
from .registry import Registry, Species
from .responses import StreamResponse
from .routes import species_of, step_headers
from .work import Job

EXPORT_PARAMS = ("format", "columns", "where", "box", "quality")
MEDIA_TYPES = {"csv": "text/csv; charset=utf-8", "parquet": "application/vnd.apache.parquet"}


class _Chunks:
    """A file-like sink whose written bytes are taken out after each batch."""

    def __init__(self):
        self.parts: List[bytes] = []
        self.closed = False

    def write(self, data) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        out = b"".join(self.parts)
        self.parts = []
        return out


class _Encoder:
    """Tables in, bytes out: CSV (a header line, then rows) or Parquet (a row group per batch)."""

    def __init__(self, form: str):
        import pyarrow as pa

        self.form, self.pa = form, pa
        self.sink = _Chunks()
        self.writer = None
        self.first = True

    def batch(self, table) -> bytes:
        t = table.to_arrow()
        if self.form == "csv":
            import pyarrow.csv as pcsv

            pcsv.write_csv(t, self.sink, pcsv.WriteOptions(include_header=self.first))
        else:
            import pyarrow.parquet as pq

            if self.writer is None:
                self.writer = pq.ParquetWriter(self.pa.PythonFile(self.sink, mode="w"), t.schema)
            self.writer.write_table(t)
        self.first = False
        return self.sink.take()

    def end(self) -> bytes:
        if self.writer is not None:
            self.writer.close()
        return self.sink.take()


def filename(sp: Species, form: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{sp.dataset}-step{sp.step}-{sp.name}")
    return f"{safe}.{form}"


def make_export_routes(server) -> Dict[str, Any]:
    registry: Registry = server.registry
    limits: Limits = server.config.limits

    async def export(request: Request, job: Job) -> Response:
        params = Params(request.query_params.multi_items(), EXPORT_PARAMS)
        form = params.text("format")
        if form not in MEDIA_TYPES:
            raise bad_request(f"format must be 'csv' or 'parquet', got {form!r}")
        where = where_of(params, limits)
        box = params.numbers("box", 6)
        q = quality("quality", params.number("quality"))
        sp = await species_of(registry, request, job)
        names = columns_of(params, sp)
        headers, cached = step_headers(sp, request, params)
        if cached:
            return cached
        kw = dict(where=where, box=box, quality=q, step=sp.step, species=sp.name)
        rows = await job.run(lambda: sp.ds.count(**kw, **job.query()))
        if rows > limits.max_export_rows:
            raise over_limit(limits, "max_export_rows", rows, "rows to export")
        headers["Content-Disposition"] = f'attachment; filename="{filename(sp, form)}"'

        async def chunks() -> AsyncIterator[bytes]:
            # The count ran under --query-timeout; the transfer may take longer (the client's
            # pace, up to --max-export-rows): its batches stop only when the client leaves.
            batches = await job.run(lambda: sp.ds.query_batches(columns=names, batch_size=EXPORT_BATCH_ROWS, **kw,
                                                                **job.query(limited=False)), limited=False)
            encoder = _Encoder(form)
            while True:
                data = await job.run(_next_encoded, batches, encoder, limited=False)
                if data is None:
                    break
                if data:
                    yield data
            if encoder.first:  # no row: still a CSV header, or a Parquet file with the schema
                yield await job.run(encoder.batch, Table({n: np.empty(0, numpy_dtype(sp.column(n)["dtype"]))
                                                          for n in names}), limited=False)
            tail = await job.run(encoder.end, limited=False)
            if tail:
                yield tail

        return StreamResponse(chunks(), job, headers, MEDIA_TYPES[form])

    return {"export": export}


def _next_encoded(batches, encoder: _Encoder):
    """The next batch, encoded; None after the last."""
    for table in batches:
        return encoder.batch(table)
    return None
