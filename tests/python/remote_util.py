"""Real remote stores for the tests, started on 127.0.0.1 by the tests themselves: an S3 API
(moto's server mode, a subprocess), a web server (Debian's nginx serving a folder), a web
server that stalls after the head of its answers, and a proxy that adds latency and counts
the requests it forwards."""

from __future__ import annotations

import http.client
import http.server
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

if __name__ == "__main__":  # the proxy's process: tests/needs.py beside tests/python
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from needs import missing, need  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=2)
            return
        except urllib.error.HTTPError:
            return  # it answers
        except (urllib.error.URLError, ConnectionError, OSError):
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not answer within {timeout:g} s")
            time.sleep(0.1)


class MotoS3:
    """moto's S3 server on 127.0.0.1 with one bucket; env() gives the variables obstore reads."""

    def __init__(self, bucket: str = "data"):
        need("moto.server", "moto's server mode: pip install 'moto[server]'")
        self.port, self.bucket = free_port(), bucket
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_http(self.url + "/")
        urllib.request.urlopen(urllib.request.Request(f"{self.url}/{bucket}", method="PUT"), timeout=10)

    def env(self) -> dict:
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test",
                "AWS_REGION": "us-east-1"}

    def upload(self, local: str, name: str) -> str:
        """Copies the folder `local` to s3://bucket/name; returns that URL."""
        import obstore
        import obstore.store

        store = obstore.store.from_url(f"s3://{self.bucket}", client_options={"allow_http": True},
                                       config={"endpoint": self.url, "access_key_id": "test",
                                               "secret_access_key": "test", "region": "us-east-1"})
        for d, _, files in os.walk(local):
            for f in files:
                p = os.path.join(d, f)
                with open(p, "rb") as fh:
                    obstore.put(store, name + "/" + os.path.relpath(p, local), fh.read())
        return f"s3://{self.bucket}/{name}"

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


NGINX_CONF = """
{user}
daemon off;
worker_processes 1;
pid {root}/nginx.pid;
error_log {root}/error.log;
events {{ worker_connections 64; }}
http {{
  access_log off;
  client_body_temp_path {root}/tmp;
  proxy_temp_path {root}/tmp;
  fastcgi_temp_path {root}/tmp;
  uwsgi_temp_path {root}/tmp;
  scgi_temp_path {root}/tmp;
  types {{ application/json json; }}
  default_type application/octet-stream;
  server {{
    listen 127.0.0.1:{port};
    root {www};
  }}
}}
"""


class Nginx:
    """Debian's nginx serving the folder `www` on 127.0.0.1 (HTTP range requests, as any
    static web server)."""

    def __init__(self, www: str):
        binary = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
        if binary is None:
            missing("nginx (Debian's nginx-light; scripts/setup.sh installs it)")
        self.root = tempfile.mkdtemp(prefix="motes-nginx-")
        os.makedirs(os.path.join(self.root, "tmp"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        conf = os.path.join(self.root, "nginx.conf")
        with open(conf, "w") as fh:
            # as root, its worker would be nobody, who may not enter pytest's private folders
            user = "user root;" if os.geteuid() == 0 else ""
            fh.write(NGINX_CONF.format(user=user, root=self.root, port=self.port, www=os.path.abspath(www)))
        self.proc = subprocess.Popen([binary, "-c", conf, "-p", self.root], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        wait_http(self.url + "/")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)
        shutil.rmtree(self.root, ignore_errors=True)


class StallingServer:
    """A web server on 127.0.0.1 serving the folder ``www`` as nginx does (HEAD, range
    requests, an ETag), in threads of this process. Once ``stall`` is set, a GET is answered
    with its head (its ETag too, when ``etag``) and then nothing, until the server stops;
    ``stalled`` counts those GETs. With ``status``, every GET is answered that status."""

    def __init__(self, www: str, etag: bool = True):
        self.www, self.etag = os.path.abspath(www), etag
        self.stall, self.released = threading.Event(), threading.Event()
        self.status = None
        self.stalled = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def answer(self, body: bool):
                path = os.path.join(owner.www, self.path.split("?")[0].lstrip("/"))
                if not os.path.isfile(path) or (body and owner.status):
                    self.send_response(owner.status if body and owner.status else 404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                with open(path, "rb") as fh:
                    data = fh.read()
                lo, hi = 0, len(data) - 1
                asked = self.headers.get("Range")
                self.send_response(206 if asked else 200)
                if asked:
                    a, _, b = asked.split("=", 1)[1].partition("-")
                    lo, hi = int(a), min(int(b), len(data) - 1) if b else len(data) - 1
                    self.send_header("Content-Range", f"bytes {lo}-{hi}/{len(data)}")
                self.send_header("Content-Length", str(hi - lo + 1))
                self.send_header("Accept-Ranges", "bytes")
                if owner.etag:
                    self.send_header("ETag", f'"{len(data):x}-{int(os.path.getmtime(path)):x}"')
                self.end_headers()
                if not body:
                    return
                if owner.stall.is_set():
                    self.wfile.flush()
                    owner.stalled += 1
                    owner.released.wait(300)
                    self.close_connection = True
                    return
                self.wfile.write(data[lo:hi + 1])

            def do_GET(self):
                self.answer(True)

            def do_HEAD(self):
                self.answer(False)

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()


class LatencyProxy:
    """Forwards GET and HEAD to `upstream` (http://host:port) after `delay` seconds, and counts
    the requests and the bytes of their answers. It runs in a process of its own (this file
    as a script), so that its work never shares a core or a GIL with the client measured;
    ``requests`` and ``bytes`` ask it (GET /__counts, never forwarded)."""

    def __init__(self, upstream: str, delay: float):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "proxy", upstream, repr(delay),
                                      str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_http(self.url + "/__counts")

    def _counts(self):
        with urllib.request.urlopen(self.url + "/__counts", timeout=10) as r:
            return [int(v) for v in r.read().split()]

    @property
    def requests(self) -> int:
        return self._counts()[0]

    @property
    def bytes(self) -> int:
        return self._counts()[1]

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def serve_proxy(upstream: str, delay: float, port: int) -> None:
    """The proxy's process: a threaded HTTP server forwarding to upstream."""
    host, uport = upstream.removeprefix("http://").split(":")
    counts = [0, 0]
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def forward(self, body: bool):
            if self.path == "/__counts":
                with lock:
                    data = f"{counts[0]} {counts[1]}".encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            time.sleep(delay)
            conn = http.client.HTTPConnection(host, int(uport), timeout=30)
            headers = {k: v for k, v in self.headers.items()
                       if k.lower() not in ("host", "connection", "keep-alive", "proxy-connection")}
            conn.request(self.command, self.path, headers=headers)
            r = conn.getresponse()
            data = r.read()
            with lock:
                counts[0] += 1
                counts[1] += len(data)
            self.send_response(r.status)
            for k, v in r.getheaders():
                if k.lower() not in ("connection", "transfer-encoding", "keep-alive"):
                    self.send_header(k, v)
            self.end_headers()
            if body:
                self.wfile.write(data)
            conn.close()

        def do_GET(self):
            self.forward(True)

        def do_HEAD(self):
            self.forward(False)

        def log_message(self, *args):
            pass

    http.server.ThreadingHTTPServer.daemon_threads = True
    http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


if __name__ == "__main__" and sys.argv[1:2] == ["proxy"]:
    serve_proxy(sys.argv[2], float(sys.argv[3]), int(sys.argv[4]))
