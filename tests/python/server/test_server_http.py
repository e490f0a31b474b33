"""HTTP behaviour of motes serve (docs/http-api.md): ETags and 304, zstd and gzip, HEAD,
and the guard: methods, bodies, URL length, parameters, limits, the token (header,
parameter, cookie), the app page and its assets, CORS only when asked."""

from __future__ import annotations

import gzip
import os

import pytest

from needs import need

need("starlette")
need("uvicorn")
zstandard = need("zstandard")

import motes  # noqa: E402
from motes.cli import main  # noqa: E402
from motes.cli.serve import is_loopback  # noqa: E402
from motes.server import Config, Limits, create_app  # noqa: E402
from server_util import make_client, parse_frame, write_lattice  # noqa: E402

SP = "/api/v1/datasets/lat/steps/0/species/particles"
TOKEN = "s3cret-token_value"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("http") / "lat.motes"
    write_lattice(path, n=20_000)
    return str(path)


@pytest.fixture(scope="module")
def client(dataset):
    limits = Limits(max_cells=8, max_points=15_000, max_expression=64)
    with make_client(create_app(Config(datasets=[(None, dataset)], limits=limits), opener=motes.open)) as c:
        yield c


@pytest.fixture(scope="module")
def app_dir(tmp_path_factory):
    """A built app: index.html and assets/, next to a file no request may reach."""
    root = tmp_path_factory.mktemp("site")
    (root / "app" / "assets").mkdir(parents=True)
    (root / "app" / "index.html").write_text("<!doctype html><title>viewer</title>")
    (root / "app" / "assets" / "main.js").write_text("console.log('viewer');\n" * 100)
    (root / "secret.txt").write_text("TOP SECRET")
    return str(root / "app")


# ---- caching and compression ----------------------------------------------------------------

def test_etags_and_304(client):
    for url, params, cache in ((SP, {}, "private, no-cache"),
                               (SP + "/points", {"budget": "1000", "columns": "x"}, "private, no-cache"),
                               (SP + "/histogram", {"x": "energy"}, "private, no-cache"),
                               (SP + "/export", {"format": "csv", "quality": "0.3"}, "private, no-cache"),
                               ("/api/v1/datasets/lat", {}, "no-cache"), ("/api/v1/datasets", {}, "no-cache")):
        r = client.get(url, params=params)
        assert r.status_code == 200 and r.headers["cache-control"] == cache
        tag = r.headers["etag"]
        again = client.get(url, params=params, headers={"If-None-Match": tag})
        assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == tag
        assert client.get(url, params=params, headers={"If-None-Match": 'W/"other", ' + tag}).status_code == 304
        assert client.get(url, params=params, headers={"If-None-Match": '"other"'}).status_code == 200
    a = client.get(SP + "/points", params={"budget": "1000"}).headers["etag"]
    b = client.get(SP + "/points", params={"budget": "1001"}).headers["etag"]
    c = client.get(SP + "/points", params={"budget": "1000", "token": "ignored"}).headers["etag"]
    assert a != b and a == c


def test_zstd_and_gzip_decode_to_the_same_bytes(client):
    url, params = SP + "/points", {"budget": "5000", "dtype": "f32"}
    plain = client.get(url, params=params, headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in plain.headers and plain.headers["vary"] == "Accept-Encoding"
    header, _ = parse_frame(plain.content)
    for accept, encoding, decode in (("gzip, deflate, br, zstd", "zstd", zstandard.ZstdDecompressor().decompressobj),
                                     ("gzip", "gzip", None), ("zstd;q=0, gzip", "gzip", None)):
        with client.stream("GET", url, params=params, headers={"Accept-Encoding": accept}) as r:
            assert r.headers["content-encoding"] == encoding and r.headers["vary"] == "Accept-Encoding"
            raw = b"".join(r.iter_raw())
        body = decode().decompress(raw) if decode else gzip.decompress(raw)
        assert int(r.headers["content-length"]) == len(raw) < len(body)
        # The same frame (but for query_ms in the header: each request runs the query).
        got_header, got = parse_frame(body)
        assert len(body) == len(plain.content) and body[:16] == plain.content[:16]
        assert {**got_header, "query_ms": 0} == {**header, "query_ms": 0}
        assert body[got_header["columns"][0]["offset"]:] == plain.content[header["columns"][0]["offset"]:]
    small = client.get("/api/v1/health", headers={"Accept-Encoding": "zstd"})
    assert "content-encoding" not in small.headers  # under 1 KiB


def test_streamed_exports_are_compressed_too(client):
    plain = client.get(SP + "/export", params={"format": "csv"}, headers={"Accept-Encoding": "identity"}).content
    with client.stream("GET", SP + "/export", params={"format": "csv"}, headers={"Accept-Encoding": "zstd"}) as r:
        assert r.headers["content-encoding"] == "zstd" and "content-length" not in r.headers
        raw = b"".join(r.iter_raw())
    assert zstandard.ZstdDecompressor().decompressobj().decompress(raw) == plain
    with client.stream("GET", SP + "/export", params={"format": "parquet"}, headers={"Accept-Encoding": "zstd"}) as r:
        assert "content-encoding" not in r.headers  # Parquet is compressed inside


def test_head_has_the_headers_of_get(client):
    for url, params in ((SP, {}), (SP + "/points", {"budget": "100"})):
        g = client.get(url, params=params, headers={"Accept-Encoding": "gzip"})
        h = client.head(url, params=params, headers={"Accept-Encoding": "gzip"})
        assert h.status_code == 200 and h.content == b""
        for k in ("content-type", "etag", "cache-control", "content-encoding"):
            assert h.headers.get(k) == g.headers.get(k), k


# ---- the guard ----------------------------------------------------------------------------

def test_only_get_and_head(client):
    for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
        r = client.request(method, SP)
        assert r.status_code == 405 and r.json()["error"]["kind"] == "method" and r.headers["allow"] == "GET, HEAD"
    assert "access-control-allow-origin" not in client.get(SP, headers={"Origin": "http://evil.example"}).headers


def test_bodies_urls_parameters_and_limits(client):
    r = client.request("GET", SP, content=b"x" * 10)
    assert r.status_code == 413 and "no body" in r.json()["error"]["message"]
    r = client.get(SP + "/points", params={"where": "x > " + "1" * 17000})
    assert r.status_code == 414 and "URL" in r.json()["error"]["message"]
    cases = [({"to": "abc"}, 400, "not a number"), ({"to": "nan"}, 400, "not a number"),
             ({"to": "inf"}, 400, "not a number"), ({"to": "0x1"}, 400, "not a number"),
             ({"to": "1", "budget": "5"}, 400, "not both"), ({"bogus": "1"}, 400, "unknown parameter 'bogus'"),
             ({"cells": "0,0,0,1,1,1"}, 400, "7 comma-separated numbers"),
             ({"cells": "0,0,0,1,1,1,0;"}, 400, "7 comma-separated numbers"),
             ({"cells": "0,0,0,1,1,1,q"}, 400, "not a number"),
             ({"cells": "1,0,0,0,1,1,0"}, 422, "empty on x"), ({"cells": "0,0,0,1,1,1,2"}, 422, "not in [0, 1]"),
             ({"cells": ";".join(["0,0,0,1,1,1,0"] * 9)}, 413, "--max-cells"),
             ({"to": "1"}, 413, "--max-points"), ({"to": "0"}, 422, "(0, 1]"), ({"to": "1.5"}, 422, "(0, 1]"),
             ({"columns": "x,nope"}, 422, "unknown column 'nope'"), ({"columns": "x,,y"}, 400, "empty name"),
             ({"columns": "x,x"}, 400, "given twice"), ({"where": "energy >"}, 422, "expected"),
             ({"where": "enrgy > 1"}, 422, "unknown column 'enrgy'"),
             ({"where": "energy > 0 and " * 10}, 413, "--max-expression"),
             ({"dtype": "f16"}, 400, "dtype"), ({"format": "csv"}, 400, "format"),
             ({"origin": "1,2,3"}, 400, "origin needs dtype=f32"),
             ({"dtype": "f32", "origin": "1,2"}, 400, "3 comma-separated")]
    for params, status, needle in cases:
        r = client.get(SP + "/points", params=params)
        err = r.json()["error"]
        assert r.status_code == status == err["status"] and needle in err["message"], (params, r.status_code, err)
        assert err["kind"] == {400: "usage", 422: "usage", 413: "too_large"}[status]
        assert r.headers["cache-control"] == "no-store"
    r = client.get(SP + "/points", params={"where": "energy > 0.5", "budget": "2000", "token": "anything"})
    assert r.status_code == 200  # the token is no parameter of an endpoint


def test_responses_carry_nosniff_and_no_cors_by_default(client):
    for r in (client.get(SP), client.get("/nope"), client.post(SP)):
        assert r.headers["x-content-type-options"] == "nosniff"
        assert not any(k.startswith("access-control") for k in r.headers)


def test_names_are_never_paths(client, dataset):
    """Traversal in dataset and species names (the raw-socket forms are in test_server_live)."""
    for url in ("/api/v1/datasets/..", "/api/v1/datasets/%2e%2e", "/api/v1/datasets/lat/steps/0/species/..%2f..",
                "/api/v1/datasets/lat/steps/0/species/%2e%2e%2fmanifest.json",
                f"/api/v1/datasets/{os.path.basename(dataset)}"):
        r = client.get(url)
        assert r.status_code in (404,) and r.json()["error"]["kind"] == "not_found", url


def test_token(dataset, app_dir):
    app = create_app(Config(datasets=[(None, dataset)], token=TOKEN, app_dir=app_dir), opener=motes.open)
    cookie = "motes_token_8765"  # the cookie of a server on port 8765 (make_client's)
    with make_client(app) as c:
        c.cookies.set(cookie, TOKEN[:-1])
        wrong_cookie = c.get(SP)
        c.cookies.clear()
        c.cookies.set("motes_token_8766", TOKEN)  # another port's server's cookie is not this one's
        other_port = c.get(SP)
        c.cookies.clear()
        for r in (c.get(SP), c.get(SP, headers={"Authorization": "Bearer wrong"}), c.get(SP, params={"token": "x"}),
                  wrong_cookie, other_port, c.get("/"), c.get("/api/v1/health"),
                  c.get(SP, headers={"Authorization": f"Basic {TOKEN}"})):
            assert r.status_code == 401 and r.json()["error"]["kind"] == "auth"
            assert r.headers["www-authenticate"].startswith("Bearer")
        assert c.get(SP, headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
        assert c.get(SP, params={"token": TOKEN}).status_code == 200
        c.cookies.set(cookie, TOKEN)
        assert c.get(SP).status_code == 200
        c.cookies.clear()
        # The app page moves the token into a cookie and sends the browser to the page
        # without it (other parameters kept), so it stays out of the address bar and links.
        first = c.get("/", params={"token": TOKEN, "x": "1"}, follow_redirects=False)
        assert first.status_code == 303 and first.headers["location"] == "./?x=1", first.headers
        assert TOKEN not in first.headers["location"] and first.headers["cache-control"] == "no-store"
        set_cookie = first.headers["set-cookie"]
        assert f"{cookie}={TOKEN}" in set_cookie and "HttpOnly" in set_cookie and "SameSite=strict" in set_cookie
        assert "Path=/" in set_cookie
        page = c.get("/", params={"token": TOKEN})  # followed: the page, with the cookie only
        assert page.status_code == 200 and "viewer" in page.text and str(page.url) == "http://127.0.0.1:8765/"
        assert "default-src 'self'" in page.headers["content-security-policy"]
        assert c.get(SP).status_code == 200 and c.get("/assets/main.js").status_code == 200


def test_app_page_and_assets(dataset, app_dir, tmp_path):
    with make_client(create_app(Config(datasets=[(None, dataset)], app_dir=app_dir), opener=motes.open)) as c:
        assert c.get("/").text.startswith("<!doctype html><title>viewer")
        js = c.get("/assets/main.js", headers={"Accept-Encoding": "gzip"})
        assert js.status_code == 200 and js.text.startswith("console.log") and js.headers["x-content-type-options"]
        for url in ("/assets/../secret.txt", "/assets/..%2fsecret.txt", "/assets/%2e%2e/secret.txt",
                    "/assets/%2e%2e%2fsecret.txt", "/assets/../../app/index.html", "/secret.txt", "/index.html"):
            r = c.get(url)
            assert r.status_code == 404 and "TOP SECRET" not in r.text, url
    with make_client(create_app(Config(datasets=[(None, dataset)], app_dir=str(tmp_path / "none")), opener=motes.open)) as c:
        r = c.get("/")
        assert r.status_code == 200 and "not built" in r.text and "MOTES_VIEWER=OFF" in r.text
        assert "Node.js &ge; 18" in r.text and "pip install ." in r.text
        assert c.get("/assets/main.js").status_code == 404


def test_cors_only_for_the_origin_given(dataset):
    origin = "http://localhost:5173"
    with make_client(create_app(Config(datasets=[(None, dataset)], cors=origin, token=TOKEN), opener=motes.open)) as c:
        ok = c.get(SP, headers={"Origin": origin, "Authorization": f"Bearer {TOKEN}"})
        assert ok.headers["access-control-allow-origin"] == origin and "ETag" in ok.headers["access-control-expose-headers"]
        other = c.get(SP, headers={"Origin": "http://evil.example", "Authorization": f"Bearer {TOKEN}"})
        assert "access-control-allow-origin" not in other.headers
        pre = c.options(SP, headers={"Origin": origin, "Access-Control-Request-Method": "GET",
                                     "Access-Control-Request-Headers": "authorization"})
        assert pre.status_code == 200 and pre.headers["access-control-allow-origin"] == origin


def test_non_loopback_needs_a_token(dataset, tmp_path, capsys):
    for host in ("0.0.0.0", "192.0.2.7", "::", "example.org"):
        assert not is_loopback(host)
        assert main(["serve", dataset, "--host", host, "--port", "0"]) == 2
        err = capsys.readouterr().err
        assert f"refusing to serve on {host}" in err and "--token" in err and "--no-auth" in err
    for host in ("127.0.0.1", "127.5.0.1", "::1", "localhost"):
        assert is_loopback(host)
    (tmp_path / "empty").write_text("\n")
    assert main(["serve", dataset, "--host", "0.0.0.0", "--token-file", str(tmp_path / "empty")]) == 1
    assert "is empty" in capsys.readouterr().err
    assert main(["serve", dataset, "--token", "x", "--no-auth"]) == 2  # argparse: one or the other


def test_dataset_names():
    from motes.server.registry import dataset_names

    assert dataset_names([(None, "/d/run.motes"), (None, "/e/run.motes/"), ("x", "/f/a"), (None, "/g/x"),
                          (None, "/h/.motes"), ("run", "/i")]) == [
        ("run", "/d/run.motes"), ("run-2", "/e/run.motes/"), ("x", "/f/a"), ("x-2", "/g/x"), (".motes", "/h/.motes"),
        ("run-3", "/i")]
    from motes.cli.serve import _dataset_specs

    assert _dataset_specs(["a=/p/q", "/p/a=b", "p/q", "=x"]) == [("a", "/p/q"), (None, "/p/a=b"), (None, "p/q"),
                                                                  (None, "=x")]
    for bad in ("..", "."):
        with pytest.raises(motes.UsageError, match="cannot name a dataset"):
            dataset_names([(bad, "/x")])


def test_freed_memory_is_given_back_at_most_every_few_seconds(monkeypatch):
    import threading

    from motes.server.memory import Trimmer

    calls = []
    done = threading.Event()
    t = Trimmer(every=60)
    assert t._trim is not None  # glibc: malloc_trim found
    monkeypatch.setattr(t, "_trim", lambda pad: (calls.append(pad), done.set()))
    t.after_work()
    assert done.wait(5)
    for _ in range(10):
        t.after_work()  # within the minute: nothing more
    assert calls == [0]


def test_a_histogram_range_whose_width_overflows_is_refused(client):
    for params in ({"x": "energy", "range": "-1e308,1e308"}, {"x": "energy", "y": "ux", "yrange": "-1e308,1e308"}):
        r = client.get(SP + "/histogram", params=params)
        assert r.status_code == 422 and "too wide" in r.json()["error"]["message"], (params, r.text)
