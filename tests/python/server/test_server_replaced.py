"""Issue 42, item 2, in the server: a dataset deleted and written again while `motes serve`
runs is served as the new run (listing, species, points, ETags), never a mix; a step the new
run lacks is 404 and never cached."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from needs import need

need("starlette")
need("httpx")

import motes  # noqa: E402
from motes.server import Config, create_app  # noqa: E402
from server_util import make_client  # noqa: E402

SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)
SP = "/api/v1/datasets/run/steps/{}/species/particles"


def write_run(path, counts, seed):
    rng = np.random.default_rng(seed)
    with motes.Writer(path, **SMALL) as w:
        for k, n in enumerate(counts):
            w.write_step(k, {"x": rng.random(n), "y": rng.random(n), "z": rng.random(n),
                             "e": rng.random(n).astype(np.float32)}, time=float(k))


def test_a_recreated_dataset_is_served_as_the_new_run(tmp_path):
    p = tmp_path / "run.motes"
    write_run(p, [1001, 1001, 1001], seed=1)
    app = create_app(Config(datasets=[(None, str(p))]), opener=motes.open)
    with make_client(app) as client:
        old = client.get(SP.format(1))
        assert old.status_code == 200 and old.json()["count"] == 1001
        assert old.headers["cache-control"] == "private, no-cache"  # revalidated: it may be another run later
        old_points = client.get(SP.format(1) + "/points", params={"budget": "100000", "columns": "e"})
        assert old_points.status_code == 200
        listing = client.get("/api/v1/datasets/run").json()

        shutil.rmtree(p)
        write_run(p, [5001, 5001], seed=2)

        again = client.get(SP.format(1))  # the species is opened anew, not answered from the old files
        assert again.status_code == 200 and again.json()["count"] == 5001
        assert again.headers["etag"] != old.headers["etag"]
        new_listing = client.get("/api/v1/datasets/run").json()
        assert new_listing != listing and new_listing["id"] == motes.open(p).id != listing["id"]
        updates = client.get("/api/v1/datasets/run/updates").json()
        assert updates["id"] == new_listing["id"] and updates["steps"] == [0, 1]
        assert [s["index"] for s in new_listing["steps"]] == [0, 1]
        stale = client.get(SP.format(1), headers={"If-None-Match": old.headers["etag"]})
        assert stale.status_code == 200 and stale.json()["count"] == 5001
        points = client.get(SP.format(1) + "/points", params={"budget": "100000", "columns": "e"})
        assert points.status_code == 200 and points.headers["etag"] != old_points.headers["etag"]

        gone = client.get(SP.format(2))  # the old run's step 2: not in the new run
        assert gone.status_code == 404 and gone.headers["cache-control"] == "no-store"
        assert "has no step 2" in gone.json()["error"]["message"]
        gone = client.get(SP.format(2) + "/points", params={"budget": "1000"})
        assert gone.status_code == 404 and gone.headers["cache-control"] == "no-store"


def test_appends_keep_what_the_server_knows(tmp_path):
    p = tmp_path / "run.motes"
    write_run(p, [300], seed=3)
    app = create_app(Config(datasets=[(None, str(p))]), opener=motes.open)
    with make_client(app) as client:
        first = client.get(SP.format(0))
        motes.write(p, {"x": np.zeros(5), "y": np.zeros(5), "z": np.zeros(5), "e": np.zeros(5, np.float32)},
                    step=1, **SMALL)
        assert [s["index"] for s in client.get("/api/v1/datasets/run").json()["steps"]] == [0, 1]
        same = client.get(SP.format(0), headers={"If-None-Match": first.headers["etag"]})
        assert same.status_code == 304  # an append is the same run: step 0's answers stand
