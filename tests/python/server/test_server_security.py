"""What motes serve promises about who may use it (docs/http-api.md, "Security"): it answers
only the host names it was started for and no other site's pages (no DNS rebinding, no
cross-site reads), parses Host strictly, refuses --cors '*' without a token, keeps tokens
out of its logs and links, times out half-sent requests, drops clients that stop reading,
caps its connections, stops on Ctrl-C whatever its clients do, and reads integers in URLs
in one spelling only. The attacks are sent to real servers (motes serve, uvicorn) on 127.0.0.1."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from typing import Optional

import numpy as np
import pytest
from needs import need

need("starlette")
need("uvicorn")

import motes  # noqa: E402
from motes.cli import main  # noqa: E402
from motes.server import Config, create_app  # noqa: E402
from motes.server.config import Connections  # noqa: E402
from server_util import LiveServer, make_client, raw_request, start_cli_server, write_lattice  # noqa: E402

SP = "/api/v1/datasets/lat/steps/0/species/particles"
TOKEN = "s3cret-token_value"


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    path = tmp_path_factory.mktemp("security") / "lat.motes"
    write_lattice(path, n=5_000)
    rho = np.arange(4 * 5 * 6, dtype=np.float32).reshape(4, 5, 6)
    motes.write(path, None, step=1, fields={"rho": motes.Field(rho)})
    return str(path)


@pytest.fixture(scope="module")
def cli_server(dataset):
    proc, base = start_cli_server([dataset])
    yield int(base.rsplit(":", 1)[1])
    proc.terminate()
    proc.wait(10)


def routes(port: int):
    """Every kind of route: the app page, an asset, the API, a streamed export, fields, a 404."""
    app = os.path.join(os.path.dirname(motes.__file__), "server", "app", "assets")
    asset = sorted(os.listdir(app))[0] if os.path.isdir(app) else "missing.js"
    return ["/", f"/assets/{asset}", "/api/v1/health", "/api/v1/datasets", "/api/v1/datasets/lat", SP,
            SP + "/points?budget=100", SP + "/histogram?x=energy", SP + "/export?format=csv",
            "/api/v1/datasets/lat/steps/1/fields", "/api/v1/datasets/lat/steps/1/fields/rho/samples",
            "/no/such/path"]


def forbidden(status, body) -> str:
    assert status == 403, (status, body[:200])
    error = json.loads(body)["error"]
    assert error["kind"] == "forbidden" and error["status"] == 403
    return error["message"]


# ---- DNS rebinding and other sites' pages ---------------------------------------------------------
def test_dns_rebinding_is_refused_on_every_route(cli_server):
    """A page of attacker.example, whose name the attacker points at 127.0.0.1, is same-origin
    with the server for the browser: the server must refuse its Host."""
    port = cli_server
    for target in routes(port):
        status, _, body = raw_request(port, target, headers={"Host": f"attacker.example:{port}",
                                                             "Origin": f"http://attacker.example:{port}"})
        message = forbidden(status, body)
        assert "--allow-host" in message and "attacker.example" in message and b"energy" not in body, target
        status, _, body = raw_request(port, target, headers={"Host": f"attacker.example:{port}"})
        forbidden(status, body)
    # The names it was started for answer, with or without a port, and their own Origin.
    for host in (f"127.0.0.1:{port}", "127.0.0.1", f"localhost:{port}", f"LocalHost:{port}", f"[::1]:{port}"):
        status, _, body = raw_request(port, SP + "/export?format=csv", headers={"Host": host})
        assert status == 200 and body.startswith(b'"x","y","z"'), host
        status, _, _ = raw_request(port, SP, headers={"Host": host, "Origin": f"http://{host}"})
        assert status == 200, host
    for host in ("127.0.0.1.attacker.example", "localhost.attacker.example", "", "[::1", "127.0.0.2"):
        status, _, body = raw_request(port, SP, headers={"Host": host})
        assert status in (400, 403), (host, status)


def test_the_host_is_parsed_strictly(cli_server):
    """A Host that is not host[:port] or [IPv6][:port] is refused (400), however a loose
    parser would read it (the name before the '@', the first of a list), and so are two."""
    port = cli_server
    for host in (f"localhost:{port}@attacker.example", f"127.0.0.1:{port}, attacker.example",
                 f"127.0.0.1:{port} attacker.example", f"attacker.example@localhost:{port}", f"localhost:{port}/x",
                 f"localhost:{port}:{port}", f"[::1]:{port}@attacker.example", "localhost:http", f"[::1]x:{port}",
                 f"[127.0.0.1]:{port}", f"localhost:{port}#x", f"localhost:{port}?x", "localhost,127.0.0.1",
                 f"user:pass@127.0.0.1:{port}", f"127.0.0.1:{port}.attacker.example"):
        status, _, body = raw_request(port, SP, headers={"Host": host})
        assert status == 400 and b"energy" not in body, (host, status, body[:200])
        error = json.loads(body)["error"]
        assert error["kind"] == "usage" and "Host" in error["message"], (host, error)
    status, _, body = raw_request(port, SP, headers={"Host": f"127.0.0.1:{port}", "host": "attacker.example"})
    assert status == 400 and b"energy" not in body, (status, body[:200])
    for host in (f"127.0.0.1:{port}", "localhost", f"[::1]:{port}", f"[0:0:0:0:0:0:0:1]:{port}", f"localhost.:{port}"):
        assert raw_request(port, SP, headers={"Host": host})[0] in (200, 403), host
    assert raw_request(port, SP, headers={"Host": f"[0:0:0:0:0:0:0:1]:{port}"})[0] == 200


def test_other_sites_pages_are_refused(dataset):
    with make_client(create_app(Config(datasets=[(None, dataset)]), opener=motes.open)) as c:
        for origin in ("http://evil.example", "null", "http://127.0.0.1:8765.evil.example", "http://127.0.0.1:9999",
                       "file://", "https://attacker.example:8765"):
            r = c.get(SP, headers={"Origin": origin})
            assert r.status_code == 403 and "--cors ORIGIN" in r.json()["error"]["message"], origin
            assert "access-control-allow-origin" not in r.headers
        for origin in ("http://127.0.0.1:8765", "HTTP://127.0.0.1:8765"):
            assert c.get(SP, headers={"Origin": origin}).status_code == 200, origin
        assert c.get("/", headers={"Origin": "http://evil.example"}).status_code == 403
    origin = "http://localhost:5173"
    with make_client(create_app(Config(datasets=[(None, dataset)], cors=origin), opener=motes.open)) as c:
        ok = c.get(SP, headers={"Origin": origin})
        assert ok.status_code == 200 and ok.headers["access-control-allow-origin"] == origin
        assert c.get(SP, headers={"Origin": "http://localhost:5174"}).status_code == 403


def test_allow_host_names_a_proxy(dataset):
    config = Config(datasets=[(None, dataset)], allow_hosts=("motes.example.org",))
    with make_client(create_app(config, opener=motes.open), base_url="https://motes.example.org") as c:
        assert c.get(SP).status_code == 200
        assert c.get(SP, headers={"Origin": "https://motes.example.org"}).status_code == 200
        assert c.get(SP, headers={"Host": "other.example.org"}).status_code == 403
    with make_client(create_app(Config(datasets=[(None, dataset)], allow_hosts=("*",)), opener=motes.open),
                     base_url="http://anything.example") as c:
        assert c.get(SP).status_code == 200
    for bad in ("a/b", "", "x y", "user@host"):
        with pytest.raises(motes.UsageError, match="--allow-host"):
            Config(datasets=[(None, dataset)], allow_hosts=(bad,))


def test_every_interface_answers_its_addresses_not_other_names(dataset):
    config = Config(datasets=[(None, dataset)], host="0.0.0.0", token=TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with make_client(create_app(config, opener=motes.open), base_url="http://192.0.2.7:8765") as c:
        assert c.get(SP, headers=auth).status_code == 200  # an address of this machine
        assert c.get(SP, headers={**auth, "Host": f"{socket.gethostname()}:8765"}).status_code == 200
        assert c.get(SP, headers={**auth, "Host": "attacker.example:8765"}).status_code == 403
    config = Config(datasets=[(None, dataset)], host="192.0.2.7", token=TOKEN)
    with make_client(create_app(config, opener=motes.open), base_url="http://192.0.2.7:8765") as c:
        assert c.get(SP, headers=auth).status_code == 200
        assert c.get(SP, headers={**auth, "Host": "192.0.2.8:8765"}).status_code == 403


def test_cors_any_origin_needs_a_token(dataset, capsys):
    assert main(["serve", dataset, "--cors", "*", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "--token" in err and "--cors-any-origin-without-token" in err and "every web page" in err
    with pytest.raises(motes.UsageError, match="--cors-any-origin-without-token"):
        Config(datasets=[(None, dataset)], cors="*")
    with pytest.raises(motes.UsageError, match="not an origin"):
        Config(datasets=[(None, dataset)], cors="evil.example")
    for config in (Config(datasets=[(None, dataset)], cors="*", token=TOKEN),
                   Config(datasets=[(None, dataset)], cors="*", cors_any_origin_without_token=True)):
        with make_client(create_app(config, opener=motes.open)) as c:
            r = c.get(SP, headers={"Origin": "http://anywhere.example", "Authorization": f"Bearer {TOKEN}"})
            assert r.status_code == 200 and r.headers["access-control-allow-origin"] == "*"


# ---- tokens stay out of logs and links ------------------------------------------------------------
def test_the_access_log_never_shows_a_token(dataset, caplog):
    app = create_app(Config(datasets=[(None, dataset)], token=TOKEN), opener=motes.open)
    access = logging.getLogger("uvicorn.access")  # uvicorn's own handler; it does not propagate
    with caplog.at_level(logging.INFO, logger="uvicorn.access"), LiveServer(app, log_level="info") as live:
        access.addHandler(caplog.handler)
        try:
            for target in (f"{SP}?token={TOKEN}", f"/?token={TOKEN}&x=1", f"{SP}/points?budget=10&token={TOKEN}",
                           f"{SP}?TOKEN={TOKEN}", f"{SP}?token=wrong-{TOKEN}"):
                raw_request(live.port, target)
            deadline = time.monotonic() + 5
            while caplog.text.count('HTTP/1.1" ') < 5:
                assert time.monotonic() < deadline, caplog.text
                time.sleep(0.05)
        finally:
            access.removeHandler(caplog.handler)
    assert "token=[redacted]" in caplog.text and "TOKEN=[redacted]" in caplog.text
    assert TOKEN not in caplog.text, caplog.text


@pytest.mark.parametrize("query", ["tok%65n=S", "a=1&%74%6F%6B%65%6E=S", "TOKEN=S", "x=1&token=S&token=T",
                                   "tok%2565n=S", "tok+en=S", "b?token=S", "a=1;token=S"])
def test_a_token_parameter_is_redacted_wherever_it_is_taken(query):
    """One rule names the token parameter, for taking it and for redacting it: a value taken
    as the token never reaches the log (tok%65n= is token=)."""
    from motes.server.security import redact, token_parameters

    shown = redact(f"/api/v1/health?{query}")
    for value in token_parameters(query):
        assert f"={value}" not in shown, shown
    assert token_parameters("tok%65n=S") == ["S"]


def test_a_percent_encoded_token_name_is_taken_and_redacted(dataset, caplog):
    app = create_app(Config(datasets=[(None, dataset)], token=TOKEN), opener=motes.open)
    access = logging.getLogger("uvicorn.access")
    targets = [f"{SP}?tok%65n={TOKEN}", f"{SP}/points?budget=10&%74%6F%6B%65%6E={TOKEN}"]
    with caplog.at_level(logging.INFO, logger="uvicorn.access"), LiveServer(app, log_level="info") as live:
        access.addHandler(caplog.handler)
        try:
            assert [raw_request(live.port, t)[0] for t in targets] == [200, 200]
            deadline = time.monotonic() + 5
            while caplog.text.count('HTTP/1.1" ') < len(targets):
                assert time.monotonic() < deadline, caplog.text
                time.sleep(0.05)
        finally:
            access.removeHandler(caplog.handler)
    assert "tok%65n=[redacted]" in caplog.text and TOKEN not in caplog.text, caplog.text


def test_the_cli_log_never_shows_a_token(dataset, tmp_path):
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    proc, base = start_cli_server([dataset, "--token-file", str(token_file), "--log-level", "info"])
    try:
        port = int(base.rsplit(":", 1)[1])
        assert raw_request(port, f"{SP}?token={TOKEN}")[0] == 200
        assert raw_request(port, f"/?token={TOKEN}")[0] == 303
    finally:
        proc.terminate()
        out, err = proc.communicate(timeout=10)
    log = out + err  # uvicorn's access log goes to stdout
    assert " 200" in log and " 303" in log and "token=[redacted]" in log and TOKEN not in log, log


# ---- connections: half-sent requests, idle ones, too many ---------------------------------------
def _read_all(s: socket.socket, timeout: float) -> bytes:
    s.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                return data
            data += chunk
    except socket.timeout:
        return data + b"<still open>"


def test_half_sent_requests_time_out(dataset):
    rules = Connections(header_timeout=0.5, idle_timeout=1.0, max_connections=100)
    with LiveServer(create_app(Config(datasets=[(None, dataset)], connections=rules), opener=motes.open)) as live:
        t0 = time.monotonic()
        socks = [socket.create_connection(("127.0.0.1", live.port)) for _ in range(60)]
        for k, s in enumerate(socks):
            s.sendall([b"", b"GET ", f"GET {SP} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()][k % 3])
        # The server still answers others meanwhile.
        assert raw_request(live.port, SP)[0] == 200
        answers = [_read_all(s, 5.0) for s in socks]
        elapsed = time.monotonic() - t0
        for s in socks:
            s.close()
        for a in answers:
            assert a.startswith(b"HTTP/1.1 408") and b"--header-timeout" in a and a.endswith(b"}"), a
        assert elapsed < 4.0, elapsed
        # Bytes trickled in one at a time do not extend the deadline (a slow loris).
        s = socket.create_connection(("127.0.0.1", live.port))
        t0 = time.monotonic()
        try:
            for b in b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n":
                s.sendall(bytes([b]))
                time.sleep(0.05)
        except OSError:
            pass  # closed by the server already
        assert _read_all(s, 3.0).startswith(b"HTTP/1.1 408") and time.monotonic() - t0 < 2.5
        s.close()
        # A kept-alive connection is closed once idle, and its next request gets a new deadline.
        s = socket.create_connection(("127.0.0.1", live.port))
        s.sendall(f"GET {SP} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        first = _read_all(s, 3.0)
        assert first.startswith(b"HTTP/1.1 200") and not first.endswith(b"<still open>"), first[-40:]
        s.close()


def test_connections_are_capped(dataset):
    rules = Connections(max_connections=4)
    with LiveServer(create_app(Config(datasets=[(None, dataset)], connections=rules), opener=motes.open)) as live:
        held = [socket.create_connection(("127.0.0.1", live.port)) for _ in range(4)]
        time.sleep(0.2)
        extra = socket.create_connection(("127.0.0.1", live.port))
        answer = _read_all(extra, 3.0)
        assert answer.startswith(b"HTTP/1.1 503") and b"--max-connections" in answer, answer
        extra.close()
        for s in held:
            s.close()
        time.sleep(0.2)
        assert raw_request(live.port, SP)[0] == 200


# ---- clients that ask for an export and stop reading ----------------------------------------------
@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """A dataset whose CSV export (about 15 MB) outgrows the sockets' buffers."""
    path = tmp_path_factory.mktemp("big") / "lat.motes"
    write_lattice(path, n=200_000)
    return str(path)


def _stalled_export(port: int) -> socket.socket:
    """A client that asks for an export, reads the status line, and reads no more."""
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect(("127.0.0.1", port))
    s.sendall(f"GET {SP}/export?format=csv HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    s.settimeout(60)
    head = b""
    while len(head) < 12:
        chunk = s.recv(12 - len(head))
        assert chunk, head
        head += chunk
    assert head == b"HTTP/1.1 200", head
    return s


def _closed(s: socket.socket, timeout: float) -> bool:
    """Whether the server closed the connection (what it had sent read first)."""
    s.settimeout(timeout)
    try:
        while s.recv(1 << 20):
            pass
        return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def _full(port: int) -> bool:
    """Whether a new connection is refused (503) for want of room."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        return _read_all(s, 5.0).startswith(b"HTTP/1.1 503")


def _status(port: int) -> Optional[int]:
    """A request's status; None when the server refused the connection before reading it."""
    try:
        return raw_request(port, SP)[0]
    except ConnectionResetError:
        return None


def test_clients_that_stop_reading_are_dropped(big):
    """Three clients hold every connection of --max-connections 3 with exports they do not
    read: each is dropped once it has taken no byte for --idle-timeout, and others are served."""
    proc, base = start_cli_server([big, "--max-connections", "3", "--idle-timeout", "2", "--header-timeout", "1"])
    port = int(base.rsplit(":", 1)[1])
    held = []
    try:
        held = [_stalled_export(port) for _ in range(3)]
        assert _full(port)  # meanwhile
        deadline = time.monotonic() + 60
        while _status(port) != 200:
            assert time.monotonic() < deadline, "the stalled clients were never dropped"
            time.sleep(0.25)
        assert all(_closed(s, 10.0) for s in held)
    finally:
        for s in held:
            s.close()
        proc.kill()
        proc.communicate(timeout=10)


def test_ctrl_c_stops_a_server_whose_clients_stopped_reading(big):
    import signal
    import subprocess

    proc, base = start_cli_server([big, "--max-connections", "3", "--idle-timeout", "300"])
    port = int(base.rsplit(":", 1)[1])
    held = []
    try:
        held = [_stalled_export(port) for _ in range(3)]
        assert _full(port)
        proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=20)  # SHUTDOWN_GRACE (2 s) and the exit
        except subprocess.TimeoutExpired:
            pytest.fail("motes serve did not stop on SIGINT while clients held stalled exports")
        assert all(_closed(s, 10.0) for s in held)
    finally:
        for s in held:
            s.close()
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=10)


# ---- integers in URLs: one spelling --------------------------------------------------------------
@pytest.mark.parametrize("step", ["+0", "-0", "00", "0" * 4400, "9" * 4400, "\u0660", "\uff10", "0x0", " 0",
                                  "99999999999999999999", "1e0"])
def test_a_step_has_one_spelling(dataset, step):
    from urllib.parse import quote

    with make_client(create_app(Config(datasets=[(None, dataset)]), opener=motes.open)) as c:
        r = c.get(f"/api/v1/datasets/lat/steps/{quote(step)}/species/particles")
        assert r.status_code == 400 and r.json()["error"]["kind"] == "usage", (step, r.status_code, r.text[:200])
        assert "integer" in r.json()["error"]["message"] or "out of range" in r.json()["error"]["message"]
        assert c.get("/api/v1/datasets/lat/steps/0/species/particles").status_code == 200


def test_numbers_in_parameters_are_ascii_and_bounded(dataset):
    with make_client(create_app(Config(datasets=[(None, dataset)]), opener=motes.open)) as c:
        for params in ({"budget": "+1000"}, {"budget": "01000"}, {"budget": "\uff11\uff10\uff10"},
                       {"budget": "1" * 4400}, {"to": "\uff10.5"}, {"to": "0." + "5" * 100}):
            r = c.get(SP + "/points", params=params)
            assert r.status_code == 400 and r.json()["error"]["kind"] == "usage", (params, r.text[:200])
        assert c.get(SP + "/points", params={"budget": "1000"}).status_code == 200
        assert c.get(SP + "/points", params={"to": "0.5"}).status_code == 200


# ---- a field whose file is missing ---------------------------------------------------------------
def test_a_missing_field_file_is_not_found(tmp_path):
    path = tmp_path / "lat.motes"
    write_lattice(path, n=2_000)
    motes.write(path, None, step=1, fields={"rho": motes.Field(np.ones((4, 5, 6), np.float32))})
    os.remove(path / "steps" / "000001" / "rho.mfd")
    with make_client(create_app(Config(datasets=[(None, str(path))]), opener=motes.open)) as c:
        for url in ("/api/v1/datasets/lat/steps/1/fields/rho", "/api/v1/datasets/lat/steps/1/fields/rho/samples"):
            r = c.get(url)
            assert r.status_code == 404 and r.json()["error"]["kind"] == "not_found", (url, r.text)
            assert "rho" in r.json()["error"]["message"]


def test_no_other_page_may_frame_the_viewer_but_a_notebooks(dataset, tmp_path):
    """The app page's CSP: frame-ancestors 'none' for `motes serve`; the notebook's server
    (motes.notebook) lets pages of this machine frame it, and no others."""
    from motes.notebook import FRAME_ANCESTORS

    app_dir = tmp_path / "app"
    app_dir.mkdir()
    (app_dir / "index.html").write_text("<!doctype html><title>viewer</title>")
    for frames, expected in ((None, "frame-ancestors 'none';"), (FRAME_ANCESTORS, f"frame-ancestors {FRAME_ANCESTORS};")):
        extra = {} if frames is None else {"frame_ancestors": frames}
        client = make_client(create_app(Config(datasets=[(None, dataset)], app_dir=str(app_dir), **extra), opener=motes.open))
        csp = client.get("/").headers["content-security-policy"]
        assert expected in csp and "default-src 'self'" in csp
    assert "*" not in FRAME_ANCESTORS.replace(":*", "")  # ports of local hosts only, no other host
