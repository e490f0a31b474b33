"""The settings of a server: where it listens, who may ask, and its limits. Every default
and limit is defined here, once: the command line (``motes serve``) makes its options from
these fields, and the server's messages name the option of the limit a request exceeded."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Optional, Sequence, Tuple

HOST = "127.0.0.1"
PORT = 8765

#: Where the viewer's build (index.html, assets/) is found; absent until it is built.
APP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "app")

#: Histograms: bins of an axis and particles read when the request names neither.
HISTOGRAM_BINS = 64
HISTOGRAM_BUDGET = 2_000_000

#: Bodies at least this long are compressed (when the client accepts it).
COMPRESS_MIN_BYTES = 1024

#: Rows per batch of an export.
EXPORT_BATCH_ROWS = 1 << 18

#: Cache-Control of responses about one step (which never changes) and about a dataset.
CACHE_STEP = "private, max-age=86400"
CACHE_DATASET = "no-cache"

COOKIE = "motes_token"


def _limit(default, option: str, what: str, status: int = 413):
    """A limit: its default, its option of `motes serve` ("" when fixed), what it counts."""
    return field(default=default, metadata={"option": option, "what": what, "status": status})


@dataclass(frozen=True)
class Limits:
    """What one request may ask for. Over a limit, the answer is ``status`` with a message
    naming the limit and its option."""

    max_url: int = _limit(16 * 1024, "", "bytes of a URL", 414)
    max_expression: int = _limit(4096, "--max-expression", "characters of a filter expression (where)")
    max_cells: int = _limit(4096, "--max-cells", "cells per points request")
    max_points: int = _limit(8_000_000, "--max-points", "points per response")
    max_bins: int = _limit(4096, "--max-bins", "bins per histogram axis")
    max_bins_2d: int = _limit(1 << 20, "--max-bins-2d", "bins of a 2-D histogram")
    max_export_rows: int = _limit(100_000_000, "--max-export-rows", "rows per export")
    query_timeout: float = _limit(30.0, "--query-timeout", "seconds a query may run", 408)

    @staticmethod
    def describe(name: str) -> dataclasses.Field:
        return next(f for f in dataclasses.fields(Limits) if f.name == name)


@dataclass(frozen=True)
class Config:
    """A server: the datasets it serves (``(name or None, path)``: a name None is derived
    from the path), its token (None: no authentication), the one origin allowed by CORS,
    the number of queries run at once, its limits and the directory of the viewer's build."""

    datasets: Sequence[Tuple[Optional[str], str]]
    token: Optional[str] = None
    cors: Optional[str] = None
    workers: int = field(default_factory=lambda: os.cpu_count() or 1)
    limits: Limits = field(default_factory=Limits)
    app_dir: str = APP_DIR

    @property
    def query_threads(self) -> int:
        """Threads per query: the cores shared by the queries that run at once."""
        return max(1, (os.cpu_count() or 1) // max(1, self.workers))
