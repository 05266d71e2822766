"""mypy strict (configured in pyproject's [tool.mypy]) passes on the whole package."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest
from helpers import REPO


@pytest.mark.slow
def test_the_package_type_checks_strictly():
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (it is in the test extra: pip install -e '.[test]')")
    # The repository's own configuration (strict, the package), run where it is found;
    # no cache, so that a cache written by another mypy version cannot hide an error.
    out = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental",
                          "--cache-dir", "/dev/null", "ezpz_amsc"],
                         cwd=REPO, capture_output=True, text=True)
    errors = [line for line in out.stdout.splitlines() if ": error:" in line]
    assert errors == [], "\n".join(errors)
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.startswith("Success: no issues found in ")
