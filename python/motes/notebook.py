"""The viewer inside a notebook: ``ds.view(where=..., step=..., color=...)`` shows the browser
viewer of a dataset inline (Jupyter, VS Code, anything that renders ``_repr_html_``).

The viewer is served by ``motes serve``'s own application, in this process, on a free
loopback port (127.0.0.1 only; Host and Origin checked as ``motes serve`` checks them; only
pages of this machine may frame it, :data:`FRAME_ANCESTORS`), one server per dataset, started on the first view and stopped when the kernel ends (or by
:func:`stop`). The view's arguments become the viewer's address fragment, so the picture
starts as asked and every later change in the viewer stays in its own page. Needs the
``serve`` extra (``pip install 'motes[serve]'``).
"""

from __future__ import annotations

import atexit
import html
import os
import threading
import time
from typing import Dict, Optional, Union
from urllib.parse import quote, urlencode

from .errors import UsageError

__all__ = ["View", "stop", "view"]

#: The name of a notebook server's one dataset (in its API and the viewer's address).
NAME = "data"
#: The pages that may show the viewer in a frame: notebooks served from this machine
#: (Jupyter on localhost, VS Code's webviews); no other page can overlay it.
FRAME_ANCESTORS = "'self' http://localhost:* http://127.0.0.1:* https://localhost:* https://127.0.0.1:* vscode-webview:"


class _Server:
    """``motes serve``'s application for one dataset on 127.0.0.1, in a daemon thread."""

    def __init__(self, path: str, opener):
        from .server import Config, create_app
        from .server import listen as serving

        config = Config(datasets=[(NAME, path)], host="127.0.0.1", frame_ancestors=FRAME_ANCESTORS)
        self.sock = serving.listen("127.0.0.1", 0)
        self.port = self.sock.getsockname()[1]
        self.server = serving.server(create_app(config, opener=opener), config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True,
                                       name=f"motes-view-{self.port}")
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                self.sock.close()
                raise RuntimeError(f"the viewer's server for {path} did not start")
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


_SERVERS: Dict[str, _Server] = {}
_LOCK = threading.Lock()


def stop() -> None:
    """Stops every viewer server this process started (the kernel's end does it too)."""
    with _LOCK:
        servers = list(_SERVERS.values())
        _SERVERS.clear()
    for s in servers:
        s.stop()


atexit.register(stop)


class View:
    """An inline viewer: ``url`` (the page, with the view in its fragment); a notebook shows
    it through ``_repr_html_`` (an iframe)."""

    def __init__(self, url: str, width: Union[int, str], height: int):
        self.url, self.width, self.height = url, width, height

    def __repr__(self) -> str:
        return f"<motes view {self.url}>"

    def _repr_html_(self) -> str:
        width = f"{self.width}px" if isinstance(self.width, int) else str(self.width)
        return (f'<iframe src="{html.escape(self.url, quote=True)}" style="width: {html.escape(width)}; '
                f'height: {int(self.height)}px; border: 0" allow="fullscreen" title="motes viewer"></iframe>')


def view(dataset, *, step: Optional[int] = None, species: Optional[str] = None, where: Optional[str] = None,
         color: Optional[str] = None, width: Union[int, str] = "100%", height: int = 480) -> View:
    """The viewer of ``dataset`` (a :class:`motes.Dataset`): ``step`` (default: the last),
    ``species``, a ``where`` expression and the ``color`` column, as the viewer starts."""
    if where:
        dataset.plan(where, step=step, species=species)  # a clear error here, not a red message in the frame
    if color is not None and color not in dataset.column_names(step, species):
        raise UsageError(f"unknown column '{color}' (columns: {', '.join(dataset.column_names(step, species))})")
    if step is not None:
        step = dataset.step(step).index
    path = os.path.abspath(os.fspath(dataset.path))
    with _LOCK:
        server = _SERVERS.get(path)
        if server is None or not server.thread.is_alive():
            server = _SERVERS[path] = _Server(path, type(dataset))  # opened as the dataset given was
    fragment = {"ds": NAME, "step": step, "species": species, "color": color, "where": where}
    text = urlencode({k: v for k, v in fragment.items() if v not in (None, "")}, quote_via=quote)
    return View(f"http://127.0.0.1:{server.port}/#{text}", width, height)
