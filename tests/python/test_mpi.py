"""The parallel writer and reader under mpirun (oversubscribed ranks on this machine).

Each case runs tests/mpi/mpi_check.py, whose checks compare against the seeded input
exactly; a failed check aborts the MPI job, which fails the test with its output.
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import motes
from needs import missing

ROOT = Path(__file__).resolve().parents[2]
CHECK = ROOT / "tests" / "mpi" / "mpi_check.py"

if shutil.which("mpirun") is None:
    missing("mpirun is not installed (scripts/setup.sh installs Open MPI)")
if not getattr(motes._core, "has_mpi", False):
    missing("motes was built without MPI (no MPI library when it was built)")


def mpirun(ranks, *args, expect_ok=True, timeout=300, env_extra=None, script=CHECK):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", PYTHONUNBUFFERED="1", **(env_extra or {}))
    cmd = ["mpirun", "--oversubscribe", "-n", str(ranks), sys.executable, str(script), *map(str, args)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    if expect_ok:
        assert p.returncode == 0, f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout[-6000:]}\n{p.stderr[-6000:]}"
    return p


@pytest.mark.parametrize("write_ranks,read_ranks", [(1, 2), (2, 3), (3, 4), (4, 3), (8, 1), (4, 8)])
def test_written_on_p_ranks_reads_back_on_q(tmp_path, write_ranks, read_ranks):
    out = mpirun(write_ranks, "write", tmp_path / "run.motes")
    assert "write checks passed" in out.stdout
    out = mpirun(read_ranks, "read", tmp_path / "run.motes")
    assert "read checks passed" in out.stdout


def test_files_are_written_by_the_ranks_holding_their_particles(tmp_path):
    # Slabs held in the reverse of space order: local aggregators move nothing, spread ones most.
    out = mpirun(4, tmp_path, script=ROOT / "tests" / "mpi" / "aggregation_check.py")
    assert "aggregation checks passed" in out.stdout


def test_transfers_split_into_many_messages(tmp_path):
    # Messages above 2 GiB are split; a 1000-byte limit exercises the same path on small data.
    small = {"MOTES_MPI_MAX_MESSAGE": "1000"}
    mpirun(3, "write", tmp_path / "run.motes", env_extra=small)
    mpirun(2, "read", tmp_path / "run.motes", env_extra=small)


@pytest.mark.parametrize("scenario", ["empty", "one", "overlap"])
@pytest.mark.parametrize("method", ["adaptive", "aug"])
def test_uneven_ranks(tmp_path, scenario, method):
    mpirun(3, "write", tmp_path / "run.motes", "--scenario", scenario, "--method", method)
    mpirun(2, "read", tmp_path / "run.motes")


@pytest.mark.parametrize("scenario", ["grid", "overlap"])
def test_error_bounded_columns_written_in_parallel(tmp_path, scenario):
    out = mpirun(3, "lossy", tmp_path / "run.motes", "--scenario", scenario, "--target", 300_000)
    assert "lossy checks passed" in out.stdout


@pytest.mark.parametrize("ranks,read_ranks", [(1, 3), (2, 5), (3, 1), (5, 2), (8, 3)])
def test_fields_written_in_parallel_from_blocks_with_ghosts(tmp_path, ranks, read_ranks):
    # 300 kB files: the 480 kB rho goes into 2 parts (1 on one rank), E's 2.9 MB into one per rank.
    out = mpirun(ranks, "fields", tmp_path / "run.motes", "--target", 300_000)
    assert "fields checks passed" in out.stdout
    out = mpirun(read_ranks, "fields_read", tmp_path / "run.motes")
    assert "fields read checks passed" in out.stdout


def test_parallel_step_layout_on_disk(tmp_path):
    mpirun(4, "write", tmp_path / "run.motes", "--target", 300_000)
    manifest = json.loads((tmp_path / "run.motes" / "manifest.json").read_text())
    entry = manifest["steps"][0]["species"]["electrons"]
    assert entry["file"] == "steps/000000/electrons.mpi"
    assert entry["count"] == 120_000 and entry["parts"] > 4
    step_dir = tmp_path / "run.motes" / "steps" / "000000"
    parts = sorted(p.name for p in step_dir.glob("electrons.p*.mpf"))
    assert parts == [f"electrons.p{k:06d}.mpf" for k in range(entry["parts"])]
    src = motes.open(tmp_path / "run.motes").source(0, "electrons")
    assert src.part_count == entry["parts"] and sum(src.part_counts) == 120_000
    # Box queries open only the parts their box meets.
    sel = motes.open(tmp_path / "run.motes").select(box=(0, 0, 0, 0.2, 0.2, 0.2), step=0, species="electrons")
    assert sel.counters["parts_pruned"] > 0


def test_errors_are_raised_on_every_rank_and_keep_earlier_steps(tmp_path):
    out = mpirun(4, "errors", tmp_path / "run.motes")
    assert "error checks passed" in out.stdout


def test_rank_dying_mid_write_leaves_the_step_invisible(tmp_path):
    path = tmp_path / "run.motes"
    p = mpirun(4, "crash", path, "--delay", "0.4", expect_ok=False, timeout=120)
    assert p.returncode != 0
    ds = motes.open(path)
    assert ds.steps == [0], "the interrupted step must not be published"
    assert ds.count() == 120_000
    ds.verify()
    # Writing the step again clears what the crash left behind.
    motes.write(path, motes.synth.uniform(1000, seed=1), step=1, sync=False)
    assert motes.open(path).steps == [0, 1]
    assert not list((path / "steps" / "000001").glob("*.p*.mpf"))


@pytest.mark.parametrize("ranks", [1, 3, 4])
def test_analysis_collective_count_stats_histograms_equal_the_serial_calls(tmp_path, ranks):
    out = mpirun(ranks, "analysis", tmp_path / "run.motes", "--target", 300_000)
    assert "analysis checks passed" in out.stdout


@pytest.mark.parametrize("ranks", [2, 4])
def test_background_collective_writes(tmp_path, ranks):
    out = mpirun(ranks, "background", tmp_path / "run.motes", "--target", 300_000)
    assert "background checks passed" in out.stdout
