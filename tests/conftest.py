"""Pytest fixtures and hypothesis profiles shared by every test file.

Plain helpers (the CLI runners, run builders, CSV parsing) are in ``helpers.py``.
"""

from __future__ import annotations

import csv
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import CSV_FIELD_LIMIT, FIXTURE_NAMES, HOOK_ENV, copy_run, run_cli, sunspot_run
from hypothesis import HealthCheck, settings

# Hypothesis profiles for tests/test_fuzz_*.py (and every other @given):
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


@pytest.fixture(autouse=True)
def csv_field_limit_of_a_plain_process() -> Iterator[None]:
    """frictionless raises the csv module's process-wide field limit when it is imported
    (tests/results/test_package.py): every test reads at the limit a plain process has."""
    old = csv.field_size_limit(CSV_FIELD_LIMIT)
    yield
    csv.field_size_limit(old)


@pytest.fixture
def fixture_run(tmp_path: Path) -> Callable[[str], Path]:
    """``fixture_run(name)``: a writable copy of a shipped run in ``tmp_path``."""
    return lambda name: copy_run(name, tmp_path)


@pytest.fixture
def clean_hook_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """None of the variables the finalize hook reads: each test sets what it needs."""
    for name in HOOK_ENV:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder per module for property tests (function-scoped tmp_path cannot serve
    the many examples of one @given test)."""
    return tmp_path_factory.mktemp("scratch")


@pytest.fixture
def no_hang() -> Iterator[None]:
    """Fail, instead of blocking the suite, if the code under test waits on a FIFO."""

    def boom(signum, frame):
        raise TimeoutError("blocked for 10 s (opened a FIFO?)")

    old = signal.signal(signal.SIGALRM, boom)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


# --------------------------------------------------------------------------- a fake ezpz
#
# The real ezpz cannot be installed here (docs/ezpz-integration.md), so every test that needs an
# ``ezpz`` writes one into a temporary folder placed first on ``sys.path``.

# The layout of PyPI's ``ezpz`` 0.1.2 (2016, "Easy pan-zoom crop-resizing"): an
# empty ``__init__.py`` and a ``main.py`` that needs ImageMagick bindings.
NAMESAKE = {
    "ezpz/__init__.py": "",
    "ezpz/main.py": "from wand.image import Image  # noqa: F401\n",
}

# An ezpz exposing get_machine the way the real one does (``ezpz.get_machine``).
WITH_GET_MACHINE = {
    "ezpz/__init__.py": (
        "def get_machine(hostname=None):\n"
        "    return 'Fake-' + hostname\n"
    ),
}

# An ezpz whose ``history`` module holds a History like the real one (finalize + update).
WITH_HISTORY = {
    "ezpz/__init__.py": "",
    "ezpz/history.py": (
        "from standin_history import StandInHistory\n\n\n"
        "class History(StandInHistory):\n"
        "    pass\n"
    ),
}

LAYOUTS: dict[str, dict[str, str] | None] = {
    "absent": None, "namesake": NAMESAKE, "get_machine": WITH_GET_MACHINE,
    "history": WITH_HISTORY,
}


def forget_ezpz() -> None:
    for name in [n for n in sys.modules if n == "ezpz" or n.startswith("ezpz.")]:
        del sys.modules[name]


@pytest.fixture
def ezpz_pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
             ) -> Iterator[Callable[[str | dict[str, str]], None]]:
    """``make(layout)`` installs an ``ezpz`` package for this test.

    ``layout`` is ``{path: source}``, or one of :data:`LAYOUTS` by name;
    ``"absent"`` hides any installed ezpz.
    """

    def make(layout: str | dict[str, str]) -> None:
        forget_ezpz()
        files = LAYOUTS[layout] if isinstance(layout, str) else layout
        if files is None:
            monkeypatch.setitem(sys.modules, "ezpz", None)  # import fails, find_spec → None
            return
        site = tmp_path / "fake-site"
        for rel, src in files.items():
            (site / rel).parent.mkdir(parents=True, exist_ok=True)
            (site / rel).write_text(src)
        monkeypatch.syspath_prepend(str(site))

    yield make
    forget_ezpz()


@pytest.fixture
def sunspot(tmp_path: Path) -> Path:
    """A SunSpot run of six steps (helpers.SUNSPOT_TPS, helpers.SUNSPOT_DT)."""
    return sunspot_run(tmp_path / "sunspot")


@pytest.fixture
def published(tmp_path: Path) -> tuple[Path, Path]:
    """Every shipped run in results/runs.csv, its records in results/records/ (describe's and
    the data package's tests)."""
    runs = [copy_run(n, tmp_path / "runs") for n in FIXTURE_NAMES]
    results = tmp_path / "results" / "runs.csv"
    folder = results.parent / "records"
    r = run_cli(*runs, "--config", "agpt/x", "--append", results, "--provenance", folder, "-q")
    assert r.exit_code == 0, r.stderr
    return results, folder


@pytest.fixture(params=["default", "stdlib"])
def json_paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each JSON path an export can take in this process: the default (orjson when the
    ``fast`` extra is installed) and the standard library's (``EZPZ_AMSC_JSON=stdlib``)."""
    from ezpz_amsc.run import steps

    if request.param == "stdlib":
        monkeypatch.setattr(steps, "FAST_LOADS", None)
    return str(request.param)
