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
    with make_client(create_app(Config(datasets=[(None, str(path)), (None, str(grid))], limits=limits), opener=motes.open)) as c:
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


# ---- the Host field and the token parameter (issue 42, item 6) ---------------------------------
HOST_PIECES = st.sampled_from(["127.0.0.1", "localhost", "LOCALHOST", "[::1]", "[::ffff:127.0.0.1]", "8765", ":",
                               "@", ",", " ", "\t", "attacker.example", "/", "?", "#", "%40", "..", "[", "]", "_",
                               "-", "xn--d1acpjx3f.xn--p1ai", "\x00", "é", "1" * 6])
HOSTS = st.one_of(st.lists(HOST_PIECES, min_size=0, max_size=6).map("".join), st.text(max_size=30))
SHAPE = __import__("re").compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+)(:[0-9]{1,5})?\Z")


@settings(max_examples=EXAMPLES * 3, deadline=None)
@given(HOSTS)
def test_host_is_parsed_strictly(host):
    """A Host is taken only as host[:port] or [IPv6][:port]: anything with userinfo, a list,
    spaces, a path or other bytes names no host, so no such Host passes for a known one."""
    from motes.server.security import host_name

    name = host_name(host)
    if name is not None:
        assert SHAPE.match(host), host
        assert not any(c in host for c in "@, \t/?#%\x00"), host


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(HOSTS)
def test_random_host_fields_are_answered_or_refused(client, host):
    """The server answers a random Host with 200 only when it names the loopback server
    (127.0.0.1, localhost, ::1) in the strict form, else a 4xx; never a 5xx."""
    from motes.server.security import host_name

    if not host.isascii() or any(c in host for c in "\r\n"):
        return  # not sendable as an HTTP header by the client
    r = client.get("/api/v1/health", headers={"Host": host})
    assert r.status_code < 500, (host, r.status_code)
    if r.status_code == 200:
        # the names of a loopback server (HTTP drops the spaces around a field value)
        assert host_name(host.strip(" \t")) in ("127.0.0.1", "localhost", "::1"), host


@settings(max_examples=EXAMPLES * 3, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["token", "tok%65n", "TOKEN", "t%6Fken", "to+ken", "tokens", "x", "%74oken",
                                           "token%00", ""]),
                          st.text(alphabet="abcXYZ019%-_.~", min_size=1, max_size=12)), max_size=5))
def test_every_token_parameter_is_redacted(pairs):
    """Whatever spelling names the token parameter when the server takes it, redaction takes
    its value out of a logged URL too."""
    from motes.server.security import redact, token_parameters

    from urllib.parse import unquote_plus

    query = "&".join(f"{k}={v}" for k, v in pairs)
    logged = redact("GET /api/v1/health?" + query + " HTTP/1.1").split("?", 1)[1].rsplit(" ", 1)[0]
    taken = token_parameters(query)
    kept = [p.partition("=") for p in logged.split("&")] if pairs else []
    assert len(kept) == len(pairs)
    assert sum(unquote_plus(k) == "token" for k, _, _ in kept) == len(taken), (query, logged)
    for k, _, v in kept:
        if unquote_plus(k).lower() == "token":
            assert v == "[redacted]", (query, logged)
