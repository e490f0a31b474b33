"""The request parser of motes serve takes any query string: random parameters, values and
paths (numbers, lists, expressions, percent-encoded bytes, traversal, names with odd
characters) get a 2xx/304 or a 4xx with the documented JSON error, never a 5xx, a hang or
an unhandled exception (docs/http-api.md, "Errors")."""

from __future__ import annotations

import os
from urllib.parse import quote

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from needs import need

need("starlette")
need("uvicorn")

import motes  # noqa: E402
from motes.server import Config, Limits, create_app  # noqa: E402
from server_util import make_client, write_lattice  # noqa: E402

SP = "/api/v1/datasets/lat/steps/0/species/particles"
ENDPOINTS = ["", "/api/v1/health", "/api/v1/datasets", "/api/v1/datasets/lat", SP, SP + "/points",
             SP + "/histogram", SP + "/export"]
FIELDS = "/api/v1/datasets/grid/steps/0/fields"
ENDPOINTS += [FIELDS, FIELDS + "/E", FIELDS + "/E/samples", FIELDS + "/rho/samples", FIELDS + "/nope/samples"]
PARAMS = ["columns", "where", "cells", "to", "budget", "dtype", "origin", "format", "x", "bins", "range", "y",
          "ybins", "yrange", "box", "quality", "token", "bogus", "", "index_box", "level", "component"]
EXAMPLES = int(os.environ.get("MOTES_HYPOTHESIS_EXAMPLES", 300))

# Values near what the parsers expect, and the bytes that break parsers.
number = st.one_of(st.integers(-10**20, 10**20).map(str), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                   st.sampled_from(["0", "1", "-0", "1e308", "1e-320", "0x10", "1_0", " 1", "nan", "inf", "", "+",
                                    "--1", "1.5.2", "١"]))
numbers = st.lists(number, min_size=0, max_size=8).map(",".join)
cells = st.lists(numbers, min_size=0, max_size=4).map(";".join)
names = st.sampled_from(["x", "y", "z", "energy", "ux", "nope", "", "x,x", "x,,y", "../x", "%2e%2e", "\x00",
                         "x;y", "energy,ux"])
expressions = st.one_of(st.text(max_size=40),
                        st.sampled_from(["energy > 0.5", "energy >", "(((((", "x in (1,2)", "ux**2 > 1e308",
                                         "abs(ux) < 1 and not y > 1", "1/0 > 1", "sqrt(-1) > 0", "where",
                                         "__import__('os')", "x" * 70]))
enums = st.sampled_from(["f32", "native", "f64", "arrow", "csv", "parquet", "frame", "", "F32"])
value = st.one_of(number, numbers, cells, names, expressions, enums, st.text(max_size=20))


@pytest.fixture(scope="module")
def client(tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "lat.motes"
    write_lattice(path, n=3_000)
    grid = path.parent / "grid.motes"
    rng = np.random.default_rng(0)
    motes.write(grid, None, step=0, fields={
        "E": motes.Field(rng.random((5, 6, 7, 3)).astype(np.float32), components=("x", "y", "z")),
        "rho": motes.Field(rng.random((9, 4, 3)), coords=[np.arange(3.0), np.arange(4.0) ** 2, np.arange(9.0)])})
    limits = Limits(max_cells=8, max_points=2_000, max_expression=64, max_bins=256, max_bins_2d=4096,
                    max_export_rows=2_000)
    with make_client(create_app(Config(datasets=[(None, str(path)), (None, str(grid))], limits=limits))) as c:
        yield c


def check(r):
    assert r.status_code < 500, (r.request.url, r.status_code, r.text[:500])
    if r.status_code >= 400:
        err = r.json()["error"]
        assert err["status"] == r.status_code and err["kind"] and err["message"], err


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(ENDPOINTS), st.dictionaries(st.sampled_from(PARAMS), value, max_size=6))
def test_random_parameters_never_fail_the_server(client, endpoint, params):
    check(client.get(endpoint, params=params))


@settings(max_examples=EXAMPLES // 2, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.one_of(st.sampled_from(["api", "v1", "datasets", "lat", "steps", "0", "-1", "99999999999999999999",
                                           "species", "particles", "points", "histogram", "export", "..", ".",
                                           "grid", "fields", "samples", "E", "rho",
                                           "%2e%2e", "%2f", "%00", "assets", "index.html", "~", ""]),
                          st.text(max_size=12).map(lambda s: quote(s, safe=""))), max_size=9))
def test_random_paths_never_fail_the_server(client, parts):
    check(client.get("/" + "/".join(parts).lstrip("/")))  # (httpx takes no URL that starts with //)
