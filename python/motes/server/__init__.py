"""``motes serve``: the datasets over HTTP, read-only, for the browser viewer and any HTTP
client. The contract is docs/http-api.md. One module per job:

* ``config``: where it listens, the token, the limits (every default, once);
* ``application``: ``create_app(Config, opener=motes.open)``, the ASGI app (Starlette), its middleware and routes;
* ``registry``: the datasets by name, and what is known about each species of a step;
* ``routes``, ``queries``, ``export``: the endpoints; ``params``: their parameters;
* ``cells``: half-open cells, the quality ladder, budgets estimated from the tree;
* ``frames``: the binary frame and the Arrow stream of points;
* ``work``: queries in worker threads, cancelled on disconnect or past the time limit;
  ``memory``: freed memory given back to the system after work;
* ``security``: methods, bodies, URL length, the token, headers; ``compression``: zstd, gzip;
* ``errors``: the JSON error bodies; ``responses``: endpoints, ETags, streamed bodies.

``import motes`` does not import this package; importing it loads Starlette only when
``create_app`` is first used (``motes --help`` reads the limits from ``config`` alone).
"""

from .config import Config, Limits

__all__ = ["create_app", "Config", "Limits"]


def __getattr__(name):
    if name == "create_app":
        from .application import create_app

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
