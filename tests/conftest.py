"""Shared test helpers: the real fixture runs, synthetic runs, and the CLI runner."""

from __future__ import annotations

import builtins
import csv
import inspect
import io
import json
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, settings

from ezpz_amsc.cli import export_amsc
from ezpz_amsc.row import HEADER

REPO = Path(__file__).resolve().parents[1]
RUNS = REPO / "examples" / "runs"  # copies of shared/fixtures/runs, written by real ezpz
FIXTURE_NAMES = sorted(p.name for p in RUNS.iterdir() if p.is_dir())

# Hypothesis profiles for tests/test_fuzz_*.py:
# - "ci": derandomized (the same cases every run, no example database), chosen
#   when CI is set, so that CI never fails at random;
# - "default": a fresh random search on every local run (failing cases are
#   saved in .hypothesis/ and replayed first next time);
# - "long": a longer random hunt, on purpose:
#   HYPOTHESIS_PROFILE=long pytest tests/test_fuzz_export.py
#   pytest --hypothesis-profile=long tests/test_fuzz_export.py   (the flag wins)
_FUZZ_SETTINGS: dict[str, Any] = {
    "deadline": None,  # wall-clock limits flake on a shared machine; bounds are tested apart
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
    "print_blob": True,
}
settings.register_profile("ci", max_examples=500, derandomize=True, database=None,
                          **_FUZZ_SETTINGS)
settings.register_profile("default", max_examples=500, **_FUZZ_SETTINGS)
settings.register_profile("long", max_examples=4000, **_FUZZ_SETTINGS)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE")
                      or ("ci" if os.environ.get("CI") else "default"))

DIST_CPU_1RANK = {
    "MACHINE": "localhost", "HOSTNAME": "localhost", "NUM_NODES": "1", "NGPUS": "0",
    "GPUS_PER_NODE": "0", "WORLD_SIZE_IN_USE": "1", "world_size": "1",
}


def _runner() -> CliRunner:
    if "mix_stderr" in inspect.signature(CliRunner.__init__).parameters:
        return CliRunner(mix_stderr=False)  # click < 8.2
    return CliRunner()


def run_cli(*args: Any, input: str | None = None):
    """Invoke the command as a user would; exceptions propagate (no hidden tracebacks)."""
    return _runner().invoke(export_amsc, [str(a) for a in args], input=input,
                            catch_exceptions=False)


def parse_csv(text: str) -> list[dict[str, str]]:
    rows = list(csv.reader(io.StringIO(text)))
    assert rows, "no CSV output"
    assert tuple(rows[0]) == HEADER, rows[0]
    return [dict(zip(HEADER, r, strict=True)) for r in rows[1:]]


def one_row(result) -> dict[str, str]:
    assert result.exit_code == 0, result.stderr
    rows = parse_csv(result.stdout)
    assert len(rows) == 1
    return rows[0]


def error_line(result) -> str:
    """The single ``error:`` line of a failed run; asserts the SPEC §2.7 shape."""
    assert result.exit_code != 0, result.stdout
    lines = [ln for ln in result.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    return lines[0]


def copy_run(name: str, dest: Path) -> Path:
    """A writable copy of a real fixture run (the originals are read-only)."""
    out = dest / name
    shutil.copytree(RUNS / name, out, symlinks=True)
    for p in [out, *out.rglob("*")]:
        if not p.is_symlink():
            p.chmod(p.stat().st_mode | stat.S_IWUSR)
    return out


def write_jsonl(path: Path, records: list[Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        for r in records:
            f.write((r if isinstance(r, str) else json.dumps(r)) + "\n")
    return path


def write_run_info(folder: Path, **distributed: Any) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    dist = {**DIST_CPU_1RANK, **distributed}
    dist = {k: v for k, v in dist.items() if v is not None}
    p = folder / "run_info.json"
    p.write_text(json.dumps({"Paths": {}, "Distributed": dist}, indent=2))
    return p


def step(i: int, *, rank: int = 0, ts: float = 1795990000.0, **metrics: Any) -> dict:
    """One ezpz-shaped record: ``train/iter`` plus ``train/<name>`` metrics."""
    m = {"train/iter": i, **{f"train/{k}": v for k, v in metrics.items()}}
    return {"timestamp": ts + i, "rank": rank, "metrics": m}


@pytest.fixture
def fixture_run(tmp_path):
    return lambda name: copy_run(name, tmp_path)


def fail_for(monkeypatch, target: Path, err: int, name: str = "open") -> None:
    """Make ``builtins.<name>`` fail with ``err`` for ``target`` only."""
    real = getattr(builtins, name)

    def fake(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and Path(file) == target:
            raise OSError(err, os.strerror(err), str(file))
        return real(file, *args, **kwargs)

    monkeypatch.setattr(builtins, name, fake)
