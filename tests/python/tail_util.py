"""Tail-query tests (covering tails, derived quantities): the rows a table holds, checked
against numpy's."""

import numpy as np


def by_file_order(table, cols, mask):
    """The rows numpy selects (`mask` over `cols`), in the table's order (positions ascend in
    file order: a permutation of ids names them): their input rows, after checking the table
    holds exactly those."""
    want = np.nonzero(mask)[0]
    got = np.asarray(table["id"])
    assert np.array_equal(np.sort(got), np.sort(cols["id"][want]))
    at = np.empty(len(cols["id"]), np.int64)
    at[cols["id"]] = np.arange(len(cols["id"]))
    return at[got]  # input rows, in the table's order


def cold_equals_hot(ds, where, names):
    """`where` answered cold (decoded blocks dropped, the dataset opened again) from its cover,
    with every column of `names` equal to the hot answer; the cold table."""
    import motes
    from motes import _core

    hot = ds.query(where)
    _core.clear_block_cache()
    cold = motes.open(ds.path).query(where)
    assert cold.counters["covered_parts"] == 1
    for name in names:
        assert np.array_equal(np.asarray(hot[name]), np.asarray(cold[name])), name
    return cold
