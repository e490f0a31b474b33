"""The aggregation planner, driven through the simulation entry point used by bench/aggregation.py."""

import numpy as np
import pytest

import motes
from motes import _core, synth


@pytest.mark.parametrize("kind", ["clustered", "vpic"])
def test_adaptive_plan_balances_files_where_aug_does_not(kind):
    d = synth.generate(kind, 400_000, seed=5)
    target = 400_000 * 32 // 20
    adaptive = _core.simulate_aggregation(d["x"], d["y"], d["z"], [16, 12, 8], "adaptive", 32, target)
    aug = _core.simulate_aggregation(d["x"], d["y"], d["z"], [16, 12, 8], "aug", 32, target)
    assert adaptive["ranks"] == aug["ranks"] == 1536
    assert adaptive["files"] in (20, 21)
    assert adaptive["sd_over_mean"] <= 0.25 and adaptive["max_over_mean"] <= 1.5
    assert aug["sd_over_mean"] > adaptive["sd_over_mean"]
    # every particle lands in exactly one file
    assert adaptive["mean_bytes"] * adaptive["files"] == pytest.approx(400_000 * 32)
    assert aug["mean_bytes"] * aug["files"] == pytest.approx(400_000 * 32)


def test_simulation_rejects_bad_arguments():
    x = np.zeros(10)
    with pytest.raises(motes.UsageError, match="grid"):
        _core.simulate_aggregation(x, x, x, [0, 1, 1])
    with pytest.raises(motes.UsageError, match="method"):
        _core.simulate_aggregation(x, x, x, [1, 1, 1], "magic")
