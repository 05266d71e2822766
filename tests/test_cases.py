"""The realistic cases of ``tests/cases/`` (written without reading the code; see its README).

``python tests/test_cases.py [NAME...]`` prints one line per case, PASS or FAIL with what
differed, and the pass rate: how the rules are measured against evidence nobody fitted
them to.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
CASES = REPO / "tests" / "cases"
# Cases whose expectation the rules do not meet yet, each with why (case name -> reason).
KNOWN: dict[str, str] = {}


def case_names() -> list[str]:
    return sorted(p.parent.name for p in CASES.glob("*/case.json"))


def build_case(name: str, dest: Path) -> tuple[Path, dict[str, Any]]:
    """The case's run directory, made in ``dest``, and its ``case.json``."""
    folder = CASES / name
    case = json.loads((folder / "case.json").read_text())
    run = dest / "run"
    if case.get("base"):
        shutil.copytree(REPO / case["base"], run, symlinks=True)
        for p in [run, *run.rglob("*")]:
            if not p.is_symlink():
                p.chmod(p.stat().st_mode | 0o200)
    else:
        run.mkdir()
    if (folder / "build.py").is_file():
        spec = importlib.util.spec_from_file_location(f"case_{name}", folder / "build.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.build(run)
    return run, case


def run_case(name: str) -> list[str]:
    """What differs from the case's expectation (empty: it passes)."""
    with tempfile.TemporaryDirectory() as tmp:
        run, case = build_case(name, Path(tmp))
        args = [a.replace("{run}", str(run)) for a in case.get("args", [])]
        if not any("{run}" in a for a in case.get("args", [])):
            args = [str(run), *args]
        env = {**os.environ, **case.get("env", {})}
        proc = subprocess.run([sys.executable, "-m", "ezpz_amsc", *args], capture_output=True,
                              text=True, env=env, cwd=tmp, timeout=300)
    return compare(case["expect"], proc.returncode, proc.stdout, proc.stderr)


def compare(expect: dict[str, Any], code: int, out: str, err: str) -> list[str]:
    import csv
    import io

    problems = []
    if code != expect.get("exit", 0):
        problems.append(f"exit {code}, expected {expect.get('exit', 0)}: {err.strip()[:300]}")
    if "Traceback" in err:
        problems.append("a traceback on stderr")
    if expect.get("cells") and code == 0:
        rows = list(csv.DictReader(io.StringIO(out)))
        if len(rows) != 1:
            problems.append(f"{len(rows)} rows on stdout, expected 1")
        else:
            for col, want in expect["cells"].items():
                got = rows[0].get(col)
                if not cell_matches(got, want):
                    problems.append(f"{col} {got!r}, expected {want!r}")
    for pattern in expect.get("stderr", []):
        if not re.search(pattern, err):
            problems.append(f"stderr lacks /{pattern}/")
    for pattern in expect.get("stderr_not", []):
        if re.search(pattern, err):
            problems.append(f"stderr has /{pattern}/")
    return problems


def cell_matches(got: str | None, want: Any) -> bool:
    if got is None:
        return False
    if isinstance(want, str):
        return got == want
    if want is None:
        return got == ""
    try:
        value = float(got)
    except ValueError:
        return False
    tol = want.get("abs", abs(want["approx"]) * want.get("rel", 0.0))
    return math.isfinite(value) and abs(value - want["approx"]) <= tol


@pytest.mark.slow
@pytest.mark.parametrize("name", case_names())
def test_case(name: str, request: pytest.FixtureRequest) -> None:
    if name in KNOWN:  # strict: a case that starts to pass must leave the list
        request.node.add_marker(pytest.mark.xfail(reason=KNOWN[name], strict=True))
    assert run_case(name) == []


def main(names: list[str]) -> int:
    names = names or case_names()
    passed = 0
    for name in names:
        problems = run_case(name)
        passed += not problems
        print(f"{'PASS' if not problems else 'FAIL'} {name}" +
              "".join(f"\n    {p}" for p in problems))
    print(f"{passed} of {len(names)} cases pass")
    return 0 if passed == len(names) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
