import numpy as np
import pytest

import motes
from motes import synth

# Small leaves and treelets so that modest test data still builds deep trees with many levels.
SMALL = dict(leaf_size=64, lod_count=4, treelet_size=2048, sync=False)


def _dataset(tmp_path_factory, kind, n, seed):
    data = synth.generate(kind, n, seed=seed, with_id=True)
    path = tmp_path_factory.mktemp(kind) / f"{kind}.motes"
    motes.write(path, data, step=0, **SMALL)
    return data, motes.open(path)


@pytest.fixture(scope="session")
def uniform_ds(tmp_path_factory):
    return _dataset(tmp_path_factory, "uniform", 40_000, 11)


@pytest.fixture(scope="session")
def clustered_ds(tmp_path_factory):
    return _dataset(tmp_path_factory, "clustered", 60_000, 12)


@pytest.fixture(scope="session")
def vpic_ds(tmp_path_factory):
    return _dataset(tmp_path_factory, "vpic", 60_000, 13)


def ids_of(table):
    return np.sort(table["id"])


@pytest.fixture(scope="session")
def wide_ds(tmp_path_factory):
    return _dataset(tmp_path_factory, "wide", 20_000, 14)
