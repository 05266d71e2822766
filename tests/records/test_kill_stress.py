"""benchmarks/kill_stress.py, small: concurrent appends with and without records, killed
at random and at named instants and retried, lose, tear and double nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from kill_stress import main  # noqa: E402


@pytest.mark.slow
def test_random_kills_lose_tear_and_double_nothing(tmp_path):
    got = main(["--rounds", "4", "--writers", "4", "--kill-share", "0.75", "--seed", "3",
                "--dir", str(tmp_path)])
    assert got["problems"] == [] and got["failed (not killed)"] == got["gave up"] == 0
    assert got["runs appended"] == 16 and got["records"] == 8
    assert got["killed"] > 0 and got["processes started"] == 16 + got["killed"]
