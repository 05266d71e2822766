"""Write each ``gpu-*`` case's ``case.json`` from its ``build.py`` (never from the tool).

``python tests/cases/_gpulib/make_cases.py [NAME...]`` builds each case's run directory in a
temporary folder (the base copied, then ``build(run)``), reads the records it wrote, and
calls the case's ``expectation(run)``: the expected cells computed by hand (numpy medians
and sums over the written records) with the arithmetic quoted in ``about``. The tool is
not run here; ``tests/test_cases.py`` compares it with these expectations.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

CASES = Path(__file__).resolve().parents[1]
REPO = CASES.parents[1]


def load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"gpucase_{name}", CASES / name / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make(name: str) -> dict[str, Any]:
    module = load(name)
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        base = (CASES / name / "run") if module.BASE == "run" else REPO / module.BASE
        shutil.copytree(base, run, symlinks=True)
        module.build(run)
        spec = module.expectation(run)
    base_rel = (f"tests/cases/{name}/run" if module.BASE == "run" else module.BASE)
    case = {"about": spec["about"], "base": base_rel, "args": spec.get("args", [])}
    if spec.get("env"):
        case["env"] = spec["env"]
    case["expect"] = spec["expect"]
    (CASES / name / "case.json").write_text(json.dumps(case, indent=2, ensure_ascii=False) + "\n")
    return case


def main(names: list[str]) -> int:
    names = names or sorted(p.parent.name for p in CASES.glob("gpu-*/build.py"))
    for name in names:
        case = make(name)
        print(f"{name}: exit {case['expect'].get('exit', 0)}")
        for column, want in case["expect"].get("cells", {}).items():
            print(f"    {column} = {want!r}")
        for pattern in case["expect"].get("stderr", []):
            print(f"    stderr ~ {pattern}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
