"""The export workflow (flow/export.py) called as a library, stage by stage: the files found,
the steps read, the reduction, the details, and the one serialisation of a result.

The command line's own tests (tests/cli/test_export_command.py) run the same runs through
click; these call the workflow as the finalize hook and other programs do.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import (
    EXPECTED,
    MFU_NOTE,
    NO_THROUGHPUT_NOTE,
    RUNS,
    copy_run,
    expected_row,
    write_jsonl,
)

from ezpz_amsc.errors import AmscError
from ezpz_amsc.flow.export import (
    export_many,
    export_run,
    find_files,
    read_run_steps,
    reading_notes,
    reduce_run,
)
from ezpz_amsc.options import ExportOptions
from ezpz_amsc.results.schema import HEADER
from ezpz_amsc.text import spelled

OPTS = ExportOptions(config="test/cfg")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_export_run_gives_the_shipped_runs_rows(name):
    result = export_run(RUNS / name, OPTS)
    assert result.row == expected_row(name)
    assert tuple(result.row) == HEADER
    assert result.read is None  # hashing only when asked for


def test_the_stages_find_read_and_reduce_a_run():
    files = find_files(RUNS / "fsdp_tp-2rank", OPTS)
    assert files.metrics is not None and files.metrics.scheme == "per-rank"
    assert [p.name for p in files.run_info] == ["run_info.json"]
    steps = read_run_steps(files, OPTS)
    assert (steps.rank, [p.name for p in steps.files_read]) == (0, ["metrics-0.jsonl"])
    red = reduce_run(steps, files, OPTS)
    assert red.steps == 30
    assert f"{red.stats['tps'].value:.3f}" == "3930.349"  # the row's cell, before rounding
    assert reading_notes(steps, red, OPTS.max_line_bytes) == []


def test_a_failed_run_needs_no_steps_but_a_passing_one_does(tmp_path):
    empty = tmp_path / "run"
    empty.mkdir()
    with pytest.raises(AmscError) as e:
        find_files(empty, OPTS)
    assert spelled(e.value.message).endswith("if the run failed, pass --status fail")
    assert e.value.options()[0].name == "status"  # the option that settles it, as data
    files = find_files(empty, ExportOptions(config="c", status="fail"))
    assert files.metrics is None and files.notes == []
    assert read_run_steps(files, OPTS).files_read == []


def test_reading_notes_say_what_was_skipped(tmp_path):
    run = copy_run("minimal-1rank", tmp_path)
    metrics = run / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    lines.insert(3, "garbage")
    lines[5] = lines[5].replace('"loss": ', '"loss": NaN, "x": ', 1)
    metrics.write_text("\n".join(lines) + "\n" + lines[-1][:20])
    result = export_run(run, OPTS)
    assert result.notes[:3] == ["dropped 1 non-finite value (loss 1)",
                                "skipped 1 unparsable line",
                                "last line of metrics.jsonl is truncated; ignored it"]


def test_to_data_is_the_row_its_values_and_the_details_with_the_notes():
    result = export_run(RUNS / "minimal-1rank", OPTS)
    data = result.to_data()
    assert list(data) == ["row", "values", "details"]
    assert data["row"] == expected_row("minimal-1rank")
    assert data["values"]["gpus"] == 1 and data["values"]["mfu"] is None
    assert data["values"]["wall_time_sec"] == 0.027
    assert data["details"]["notes"] == [NO_THROUGHPUT_NOTE, MFU_NOTE]
    assert data["details"]["placement"]["nodes"] == "nodes 1 = NUM_NODES (GPUS_PER_NODE is 0)"
    json.dumps(data, allow_nan=False)  # JSON-ready as it is


def test_a_derivation_naming_an_option_is_stored_in_the_command_lines_words():
    result = export_run(RUNS / "minimal-1rank", ExportOptions(config="c", gpus=1, nodes=1))
    assert result.to_data()["details"]["placement"]["gpus"] == "gpus 1 = --gpus"


def test_export_many_collects_failures_in_order(tmp_path):
    bad = tmp_path / "empty"
    bad.mkdir()
    seen: list[int] = []
    done, failed = export_many([str(RUNS / "minimal-1rank"), str(bad),
                                str(RUNS / "fsdp_tp-2rank")], OPTS, progress=seen.append)
    assert [Path(d).name for d, _ in done] == ["minimal-1rank", "fsdp_tp-2rank"]
    assert [(Path(d).name, type(e)) for d, e in failed] == [("empty", AmscError)]
    assert seen == [1, 2, 3]


def test_hashing_while_reading_gives_each_metrics_files_digest(tmp_path):
    run = tmp_path / "run"
    write_jsonl(run / "metrics-0.jsonl", [
        {"timestamp": 1795990000.0 + i, "rank": 0, "metrics": {"train/iter": i, "train/dt": 1.0}}
        for i in range(1, 4)])
    (run / "run_info.json").write_text(json.dumps({"Distributed": {
        "MACHINE": "m", "WORLD_SIZE_IN_USE": "1", "world_size": "1", "NUM_NODES": "1"}}))
    result = export_run(run, OPTS, hash_files=True)
    assert result.read is not None
    import hashlib

    digest = result.read.digests[run / "metrics-0.jsonl"]
    data = (run / "metrics-0.jsonl").read_bytes()
    assert (digest.size, digest.sha256) == (len(data), hashlib.sha256(data).hexdigest())
    assert [p.name for p in result.read.provenance] == ["run_info.json"]
