"""The details behind a row, as ``--format json`` prints them.

The golden files pin the whole JSON of real fixture runs byte for byte, so
that a change in how the details are built or serialised cannot alter the
output unnoticed. After an intended change to the output, regenerate them:

    python tests/run/test_details.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers import REPO, run_cli  # noqa: E402

GOLDEN = Path(__file__).resolve().parent / "golden"
# golden file -> the export's arguments, run from the repository root
CASES: dict[str, list[str]] = {
    "fsdp_tp-2rank.json": ["examples/runs/fsdp_tp-2rank", "--config", "agpt-2b/bs1"],
    "minimal-1rank.json": ["examples/runs/minimal-1rank", "--config", "agpt-2b/bs1"],
    "diffusion-1rank-warmup3-mean.json": ["examples/runs/diffusion-1rank", "--config",
                                          "agpt-2b/bs1", "--warmup", "3", "--reducer", "mean"],
}


def _json_of(args: list[str]) -> str:
    result = run_cli(*args, "--format", "json")
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("name", sorted(CASES))
def test_json_is_byte_identical_to_golden(name, monkeypatch):
    monkeypatch.chdir(REPO)  # relative run dirs: the paths in the JSON do not depend on the clone
    assert _json_of(CASES[name]) == (GOLDEN / name).read_text(encoding="utf-8")


if __name__ == "__main__":
    import os

    os.chdir(REPO)
    for name, args in CASES.items():
        (GOLDEN / name).write_text(_json_of(args), encoding="utf-8")
        print(f"wrote {(GOLDEN / name).relative_to(REPO)}")
