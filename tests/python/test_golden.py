"""Every golden folder (tests/golden/<version>/) reads back as it did when it was written:
the reads of its ``queries.json`` give its stored answers, bit for bit (see
tests/golden/readback.py). The checks that pin each version's bytes are in
test_golden_<version>.py."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "golden"))
import readback  # noqa: E402


@pytest.mark.parametrize("name", readback.folders())
def test_folder_reads_as_its_answers(name, tmp_path):
    folder = readback.copy(name, tmp_path)
    stored = readback.stored_answers(folder)
    inputs = tuple(readback.queries(folder).get("inputs", ()))  # arrays written, not read back
    expected = {k: v for k, v in stored.items() if not k.startswith(inputs)} if inputs else stored
    assert readback.as_stored(readback.answers_of(folder)) == expected


def test_every_folder_has_its_reads():
    """A golden folder without queries.json would be skipped silently."""
    here = os.path.join(os.path.dirname(__file__), "..", "golden")
    assert readback.folders() == sorted(d for d in os.listdir(here) if os.path.isdir(os.path.join(here, d))
                                        and d != "__pycache__")
