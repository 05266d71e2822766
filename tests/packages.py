"""Shared by the tests of describe and of the data package: a published results folder.
"""

from __future__ import annotations

import json
from pathlib import Path

import frictionless
from helpers import (
    EXPECTED,
    FIXTURE_NAMES,
    REPO,
    RUNS,
    copy_run,
    records_in,
    run_cli,
    run_group,
    simple_steps,
    write_run,
)

from ezpz_amsc.flow.describe import describe
from ezpz_amsc.results.fields import table_schema
from ezpz_amsc.results.package import (
    PACKAGE_FILE,
)
from ezpz_amsc.results.schema import HEADER

HEADER_LINE = ",".join(HEADER)


GOOD_ROW = EXPECTED["fsdp_tp-2rank"]


def _results(folder: Path, *rows: str, name: str = "runs.csv") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text("\n".join([HEADER_LINE, *rows]) + "\n")
    return p


def _read(path: Path) -> dict:
    return json.loads(path.read_text())


def _records_in_line_order(results: Path, folder: Path) -> list[Path]:
    lines = results.read_text().splitlines()[1:]
    by_line = {",".join(json.loads(p.read_text())["row"][c] for c in HEADER): p
               for p in records_in(folder)}
    return [by_line[line] for line in lines]


def _package_with(tmp_path: Path, schema: object) -> Path:
    results = _results(tmp_path, GOOD_ROW)
    describe(results)
    target = tmp_path / PACKAGE_FILE
    package = _read(target)
    package["resources"][0]["schema"] = schema
    target.write_text(json.dumps(package))
    return results


def _edited(edit) -> dict:
    schema = table_schema()
    edit(schema)
    return json.loads(json.dumps(schema))


def _set_mfu_max(s):
    s["fields"][9]["constraints"]["maximum"] = 200


def _frictionless_errors(package: Path) -> list[str]:
    report = frictionless.validate(str(package))
    return [e.type for task in report.tasks for e in task.errors] + [
        e.type for e in report.errors]


def _check(results: Path) -> int:
    return run_group("check", results, "-q").exit_code


def _tiny_run(tmp_path: Path) -> Path:
    steps = simple_steps(4)
    for s in steps:
        s["metrics"]["train/tps"] = 0.0000123
    return write_run(tmp_path / "tiny", steps)


WRITTEN = ["every shipped run", "a failed run", "a tiny rate", "CRLF and a BOM", "an empty file",
           "the docs' sweep"]


def _written(name: str, tmp_path: Path) -> Path:
    """A results file as this tool writes it (the docs' sweep: as check passes it)."""
    results = tmp_path / "out" / "runs.csv"
    if name == "every shipped run":
        runs = [copy_run(n, tmp_path) for n in FIXTURE_NAMES]
        args = [*runs, "--config", "agpt/x", "--provenance", results.parent / "records"]
    elif name == "a failed run":
        args = [RUNS / "minimal-1rank", "--config", "c", "--status", "fail", "--error",
                'NCCL timeout, rank 3 "hung"; see job.log']
    elif name == "a tiny rate":
        args = [_tiny_run(tmp_path), "--config", "c"]
    elif name == "CRLF and a BOM":
        results.parent.mkdir()
        results.write_bytes(b"\xef\xbb\xbf" + HEADER_LINE.encode() + b"\r\n")
        args = [RUNS / "fsdp_tp-2rank", "--config", "c"]
    elif name == "an empty file":
        results.parent.mkdir()
        results.write_text(HEADER_LINE + "\n")
        return results
    else:
        results.parent.mkdir()
        results.write_bytes((REPO / "docs" / "report-example" / "sweep.csv").read_bytes())
        return results
    r = run_cli(*args, "--append", results, "-q")
    assert r.exit_code == 0, r.stderr
    return results


ROW_2 = GOOD_ROW.replace("2026-11-29T22:18:43Z", "2026-11-29T23:00:00Z")


# Files check refuses, each with the frictionless error type that refuses it too.
BAD = [
    ("nodes 0", [GOOD_ROW.replace(",1,2,", ",0,2,")], "constraint-error"),
    ("gpus 2.5", [GOOD_ROW.replace(",1,2,", ",1,2.5,")], "type-error"),
    ("nodes one", [GOOD_ROW.replace(",1,2,", ",one,2,")], "type-error"),
    ("empty wall time", [GOOD_ROW.replace(",4.034,", ",,")], "constraint-error"),
    ("blank wall time", [GOOD_ROW.replace(",4.034,", ", ,")], "type-error"),
    ("wall time fast", [GOOD_ROW.replace(",4.034,", ",fast,")], "type-error"),
    ("negative wall time", [GOOD_ROW.replace(",4.034,", ",-4.034,")], "constraint-error"),
    ("tokens/s n/a", [GOOD_ROW.replace("3930.349", "n/a")], "type-error"),
    ("negative tokens/s", [GOOD_ROW.replace("3930.349", "-3930.349")], "constraint-error"),
    ("infinite tflops", [GOOD_ROW.replace(",0.014,", ",inf,")], "constraint-error"),
    ("NaN loss", [GOOD_ROW.replace("7.989204", "NaN")], "constraint-error"),
    ("loss 1e400", [GOOD_ROW.replace("7.989204", "1e400")], "constraint-error"),
    ("mfu 150", [GOOD_ROW.replace(",,0.014,", ",150,0.014,")], "constraint-error"),
    ("steps 30.5", [GOOD_ROW.replace(",30,", ",30.5,")], "type-error"),
    ("steps 0", [GOOD_ROW.replace(",30,", ",0,")], "constraint-error"),
    ("status ok", [GOOD_ROW.replace(",pass,", ",ok,")], "constraint-error"),
    ("empty status", [GOOD_ROW.replace(",pass,", ",,")], "constraint-error"),
    ("timestamp 29/11/2026", [GOOD_ROW.replace("2026-11-29T22:18:43Z", "29/11/2026")],
     "type-error"),
    ("empty system", [GOOD_ROW.replace(",localhost,", ",,")], "constraint-error"),
    ("blank config", [GOOD_ROW.replace(",test/cfg,", ", ,")], "constraint-error"),
    ("an extra cell", [GOOD_ROW + ",x"], "extra-cell"),
    ("a missing cell", [GOOD_ROW.rsplit(",", 1)[0]], "missing-cell"),
    ("the same run twice", [GOOD_ROW, GOOD_ROW.replace(",30,", ",31,")], "primary-key"),
    ("columns in another order", "swap", "incorrect-label"),
    ("a column missing", "drop", "missing-label"),
    ("not UTF-8", "latin-1", "encoding-error"),
    ("an empty file", "empty", "source-error"),
]


def _bad_file(results: Path, rows: object) -> None:
    if rows == "swap":
        header = HEADER_LINE.replace("system,config", "config,system")
        row = GOOD_ROW.replace("localhost,test/cfg", "test/cfg,localhost")
        results.write_text(f"{header}\n{row}\n")
    elif rows == "drop":
        results.write_text(HEADER_LINE.rsplit(",", 1)[0] + "\n" + GOOD_ROW[:-1] + "\n")
    elif rows == "latin-1":
        results.write_bytes(f"{HEADER_LINE}\n{GOOD_ROW}\n{ROW_2}caf\xe9\n".encode("latin-1"))
    elif rows == "empty":
        results.write_bytes(b"")
    else:
        assert isinstance(rows, list)
        results.write_text("\n".join([HEADER_LINE, *rows]) + "\n")
