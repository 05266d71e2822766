"""The first minutes with the tool: the wrong folder named right, notes said once, plurals,
``--explain`` in 80 columns, and the finalize hook on a retried job."""

from __future__ import annotations

import ast
import json
import logging
import re
import shutil
from pathlib import Path

import pytest
from conftest import (
    FIXTURE_NAMES,
    REPO,
    RUNS,
    _runner,
    copy_run,
    error_line,
    one_row,
    parse_csv,
    run_cli,
    step,
    write_jsonl,
    write_run_info,
)

from ezpz_amsc.cli import cli
from ezpz_amsc.errors import SeveralAttempts
from ezpz_amsc.explain import WIDTH, render
from ezpz_amsc.export import ExportOptions, batch_notes, export_run
from ezpz_amsc.hook import finalize_hook

MFU_NOTE = ("mfu is 0.0 on every step (ezpz writes 0.0 when it does not know the device's peak "
            "FLOPS); left empty")
STATUS_FAIL_HINT = "if the run failed, pass --status fail"


def notes_of(stderr: str) -> list[str]:
    return [ln[len("note: "):] for ln in stderr.splitlines() if ln.startswith("note: ")]


# --------------------------------------------------------------- the wrong folder, named


@pytest.mark.parametrize("sub", ["train", "train/assets", "plots/train/tplot"])
def test_subfolder_of_a_run_names_the_run(tmp_path, sub):
    run = copy_run("diffusion-1rank", tmp_path)
    line = error_line(run_cli(run / sub, "--config", "c"))
    assert line == (f"error: {run / sub}: no metrics found; it is inside the run {run} "
                    "(which holds metrics-0.jsonl): pass that")
    assert "--status fail" not in line


def test_subfolder_given_relative_names_the_run_relative(tmp_path, monkeypatch):
    copy_run("minimal-1rank", tmp_path)
    monkeypatch.chdir(tmp_path / "minimal-1rank" / "train")
    line = error_line(run_cli(".", "--config", "c"))
    assert line == ("error: .: no metrics found; it is inside the run .. (which holds "
                    "metrics.jsonl): pass that")
    monkeypatch.chdir(tmp_path)
    line = error_line(run_cli("minimal-1rank/train", "--config", "c"))
    assert "it is inside the run minimal-1rank (which holds metrics.jsonl)" in line


def test_subfolder_with_status_fail_exports_with_a_note(tmp_path):
    run = copy_run("fsdp_tp-2rank", tmp_path)
    r = run_cli(run / "train", "--config", "c", "--status", "fail", "--timestamp",
                "2026-01-01T00:00:00Z", "--wall-time-sec", "5")
    row = one_row(r)
    assert (row["status"], row["steps"], row["gpus"]) == ("fail", "", "2")  # report's provenance
    assert (f"no metrics found in {run / 'train'}; it is inside the run {run} (which holds "
            "metrics-0.jsonl): pass that") in notes_of(r.stderr)


def test_run_id_metrics_file_in_the_parent_is_found_by_content(tmp_path):
    run = tmp_path / "run"
    write_jsonl(run / "20260811-182837.jsonl", [step(1, dt=1.0), step(2, dt=1.0)])
    (run / "train").mkdir()
    line = error_line(run_cli(run / "train", "--config", "c"))
    assert f"it is inside the run {run} (which holds 20260811-182837.jsonl)" in line


def test_folder_of_runs_suggests_the_batch_form(tmp_path):
    runs = tmp_path / "runs"
    for name in ("minimal-1rank", "fsdp_tp-2rank"):
        copy_run(name, runs)
    line = error_line(run_cli(runs, "--config", "c"))
    assert line == (f"error: {runs}: a folder of 2 runs (fsdp_tp-2rank, minimal-1rank); pass "
                    f"one of them, or {runs}/*/ to export each (one row per run)")
    # ... and the suggested form works: one row per run.
    batch = sorted(str(p) + "/" for p in runs.iterdir())
    rows = parse_csv(run_cli(*batch, "--config", "c").stdout)
    assert [r["gpus"] for r in rows] == ["2", "1"]


def _diffusion_outputs(tmp_path: Path, *later: str) -> tuple[Path, list[Path]]:
    """outputs/<name>/<stamp>/: the announced folder left empty, and later stamped folders."""
    parent = tmp_path / "outputs" / "ezpz.examples.diffusion"
    announced = parent / "2026-11-29-222210"
    announced.mkdir(parents=True)
    made = []
    for stamp in later:
        made.append(parent / stamp)
        shutil.copytree(RUNS / "diffusion-1rank", made[-1], symlinks=True)
    return announced, made


def test_diffusion_announced_folder_names_where_ezpz_put_the_data(tmp_path):
    announced, (landed, _) = _diffusion_outputs(tmp_path, "2026-11-29-222215",
                                                "2026-11-30-101010")
    (tmp_path / "outputs" / "ezpz.examples.diffusion" / "2026-11-28-000000").mkdir()  # earlier
    line = error_line(run_cli(announced, "--config", "c"))
    assert line == (f"error: {announced}: no metrics found; ezpz probably put this run's data "
                    f"in {landed}, the next output folder beside it (History.finalize() without "
                    "an output dir writes rank 0's metrics and run_info.json into a new "
                    "timestamped folder): pass that")
    assert "--status fail" not in line
    assert one_row(run_cli(landed, "--config", "c"))["steps"] == "40"


@pytest.mark.parametrize("case", ["no-run-info", "only-earlier", "not-stamped",
                                  "announced-has-run-info"])
def test_no_sibling_advice_without_a_finalized_later_output_folder(tmp_path, case):
    stamp = "2026-11-29-222215" if case != "only-earlier" else "2026-11-29-222200"
    announced, (other,) = _diffusion_outputs(tmp_path, stamp)
    if case == "no-run-info":
        (other / "run_info.json").unlink()
    elif case == "not-stamped":
        announced = announced.rename(announced.parent / "my-run")
    elif case == "announced-has-run-info":
        write_run_info(announced)
    line = error_line(run_cli(announced, "--config", "c"))
    assert line.startswith(f"error: {announced}: no metrics found (looked for ")
    assert line.endswith(STATUS_FAIL_HINT)


def test_empty_folder_alone_still_suggests_status_fail(tmp_path):
    (tmp_path / "run").mkdir()
    assert error_line(run_cli(tmp_path / "run", "--config", "c")).endswith(STATUS_FAIL_HINT)


# --------------------------------------------------------------- --error with --status pass


def test_error_text_on_a_passing_run_gets_a_note():
    r = run_cli(RUNS / "minimal-1rank", "--config", "c", "--error", "OOM at step 9")
    assert one_row(r)["error"] == "OOM at step 9"  # kept as given: only the note is added
    assert notes_of(r.stderr) == [MFU_NOTE, "--error 'OOM at step 9' is set but the status is "
                                            "pass; pass --status fail if the run failed"]
    failed = run_cli(RUNS / "minimal-1rank", "--config", "c", "--error", "OOM", "--status",
                     "fail")
    assert notes_of(failed.stderr) == [MFU_NOTE]


# --------------------------------------------------------------- notes said once


def test_warmup_longer_than_the_run_is_one_note():
    r = run_cli(RUNS / "fsdp_tp-2rank", "--config", "c", "--warmup", "100")
    row = one_row(r)
    assert notes_of(r.stderr) == [
        MFU_NOTE,
        "--warmup 100 leaves no dt, tps, tps_per_gpu, mfu or tflops values; reduced all 30 steps"]
    # the note is true: every logged value was reduced (median of 30 = mean of the middle two)
    with open(RUNS / "fsdp_tp-2rank" / "metrics-0.jsonl") as f:
        tps = sorted(m["train/tps"] for ln in f if "train/tps" in (m := json.loads(ln)["metrics"]))
    assert len(tps) == 30
    assert row["throughput_tokens_per_sec"] == f"{(tps[14] + tps[15]) / 2:.3f}"


def test_warmup_note_names_each_count_when_series_differ(tmp_path):
    recs = [step(1, dt=1.0, tps=10.0), step(2, dt=1.0), step(3, dt=1.0, tps=30.0)]
    write_jsonl(tmp_path / "run" / "metrics-0.jsonl", recs)
    write_run_info(tmp_path / "run")
    r = run_cli(tmp_path / "run", "--config", "c", "--warmup", "5")
    assert one_row(r)["throughput_tokens_per_sec"] == "20.000"  # median of 10 and 30
    assert ("--warmup 5 leaves no dt or tps values; reduced all their steps (dt 3, tps 2)"
            in notes_of(r.stderr))


def test_batch_says_a_shared_note_once_naming_the_runs(tmp_path):
    a, b = RUNS / "minimal-1rank", RUNS / "fsdp_tp-2rank"
    r = run_cli(a, b, "--config", "c", "--warmup", "32")
    assert len(parse_csv(r.stdout)) == 2
    assert notes_of(r.stderr) == [
        f"{MFU_NOTE} (all 2 runs)",
        f"{b}: --warmup 32 leaves no dt, tps, tps_per_gpu, mfu or tflops values; reduced all "
        "30 steps"]
    c = RUNS / "fsdp_tp-1rank-launch"
    r = run_cli(a, b, c, "--config", "c", "--warmup", "32")
    assert notes_of(r.stderr) == [
        f"{MFU_NOTE} (all 3 runs)",
        "--warmup 32 leaves no dt, tps, tps_per_gpu, mfu or tflops values; reduced all 30 steps "
        f"(runs {b}, {c})"]


def test_batch_notes_lose_no_run():
    got = batch_notes([("A", ["x", "only a"]), ("B", ["x", "y"]), ("C", ["y", "x", "x"])], 4)
    assert got == ["x (runs A, B, C)", "A: only a", "y (runs B, C)"]
    assert batch_notes([("A", ["x"]), ("B", ["x"])], 2) == ["x (all 2 runs)"]
    assert batch_notes([("A", ["x"])], 1) == ["A: x"]
    assert batch_notes([], 0) == []


def test_a_single_run_keeps_its_plain_notes():
    r = run_cli(RUNS / "minimal-1rank", "--config", "c")
    assert r.stderr == f"note: {MFU_NOTE}\n"


# --------------------------------------------------------------- plurals


def _strings(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
    return out


def test_no_message_hedges_a_plural_with_parentheses():
    found = []
    for path in sorted((REPO / "ezpz_amsc").rglob("*.py")):
        for text in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            if re.search(r"[a-z]\(s\)", text):
                found.append(f"{path.name}: {text!r}")
    assert found == []


@pytest.mark.parametrize(("values", "note"), [
    ([1.0, float("nan"), 3.0], "dropped 1 non-finite value (tps 1)"),
    ([float("nan"), float("inf"), 3.0], "dropped 2 non-finite values (tps 2)"),
])
def test_counted_notes_agree_with_their_count(tmp_path, values, note):
    recs = [step(i, dt=1.0, tps=v) for i, v in enumerate(values, 1)]
    write_jsonl(tmp_path / "run" / "metrics-0.jsonl", recs)
    write_run_info(tmp_path / "run", world_size="1")
    r = run_cli(tmp_path / "run", "--config", "c", "--warmup", "0")
    assert note in notes_of(r.stderr)
    assert "derived as global / 1 gpu (no per-GPU" in r.stderr  # not "1 gpus"


# --------------------------------------------------------------- --explain in 80 columns


def _lines_of(text: str) -> list[str]:
    return re.sub(r"\x1b\[[0-9;]*m", "", text).splitlines()


@pytest.mark.parametrize("name", FIXTURE_NAMES)
@pytest.mark.parametrize("args", [[], ["--warmup", "100"], ["--warmup", "3", "--reducer", "mean"]])
def test_explain_of_every_fixture_fits_80_columns(name, args, monkeypatch):
    monkeypatch.chdir(REPO)
    r = run_cli(f"examples/runs/{name}", "--config", "c", "--explain", *args)
    one_row(r)
    lines = _lines_of(r.stderr)
    assert len(lines) > 15
    assert max(map(len, lines)) <= 80, "\n".join(ln for ln in lines if len(ln) > 80)


def test_explain_fits_with_long_keys_tiny_values_and_colour(tmp_path):
    # hf's key is the longest (train/tokens_per_sec); values near 1e-5 print widest.
    recs = [{"timestamp": 1795990000.0 + i, "rank": 0,
             "metrics": {"train/step": i, "train/tokens_per_sec": 1.234567e-5 * i,
                         "train/dt": 0.000123456 + i * 1e-9, "train/tflops": 9.87654e-5,
                         "train/mfu": 0.000123456}} for i in range(1, 200)]
    write_jsonl(tmp_path / "run" / "metrics-0.jsonl", recs)
    write_run_info(tmp_path / "run", world_size="12", WORLD_SIZE_IN_USE="12")
    res = export_run(tmp_path / "run", ExportOptions(config="c", wall_time_sec=99.0))
    for text in (render(res), render(res, colour=True)):
        lines = _lines_of(text)
        assert max(map(len, lines)) <= WIDTH, "\n".join(ln for ln in lines if len(ln) > WIDTH)
    table = next(ln for ln in _lines_of(render(res)) if "train/tokens_per_sec " in ln)
    assert float(table.split()[1]) == pytest.approx(res.details.series["tps"].value, rel=1e-3)


def test_explain_with_a_long_label_fits(tmp_path):
    # Per-GPU throughput only: the sparkline's label, "throughput per GPU", is wider than
    # the label column, and the first line of its block wraps shorter to make up for it.
    recs = [step(i, dt=0.5, tps_per_gpu=500.0 + i) for i in range(1, 40)]
    write_jsonl(tmp_path / "run" / "metrics-0.jsonl", recs)
    write_run_info(tmp_path / "run", world_size="12", WORLD_SIZE_IN_USE="12")
    text = render(export_run(tmp_path / "run", ExportOptions(config="c")))
    lines = _lines_of(text)
    assert max(map(len, lines)) <= WIDTH, "\n".join(ln for ln in lines if len(ln) > WIDTH)
    assert "  throughput per GPU no global throughput logged; showing" in text


def test_explain_wraps_words_not_numbers():
    res = export_run(RUNS / "fsdp_tp-2rank", ExportOptions(config="c"))
    text = render(res)
    joined = " ".join(ln.strip() for ln in text.splitlines())
    # The row line wraps between cells: every cell of the row appears whole.
    for k in ("wall_time_sec", "throughput_tokens_per_sec", "final_loss"):
        assert f"{k}={res.row[k]}" in text
    assert f"note: {MFU_NOTE}" in joined


# --------------------------------------------------------------- the hook on a retried job


def _retried(tmp_path: Path) -> Path:
    """ezpz launch --retries into one folder: 20 steps, then a full attempt of 30."""
    run = copy_run("fsdp_tp-1rank-launch", tmp_path)
    path = run / "metrics-0.jsonl"
    recs = [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
    first = [r for r in recs if r["metrics"].get("train/iter", 0) <= 20]
    again = [{**r, "timestamp": r["timestamp"] + 600} for r in recs]
    write_jsonl(path, first + again)
    return run


def test_several_attempts_is_its_own_error_type(tmp_path):
    run = _retried(tmp_path)
    with pytest.raises(SeveralAttempts) as info:
        export_run(run, ExportOptions(config="c"))
    assert info.value.attempts == 2
    assert "pass --attempt last" in str(info.value)


def test_hook_on_a_retried_job_exports_the_last_attempt(tmp_path, monkeypatch, caplog):
    run = _retried(tmp_path)
    expected = one_row(run_cli(run, "--config", "c", "--attempt", "last"))
    assert expected["steps"] == "30"
    for name in ("EZPZ_AMSC_APPEND", "EZPZ_AMSC_STATUS", "EZPZ_AMSC_WALL_TIME_SEC", "RANK",
                 "PMI_RANK", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    caplog.set_level(logging.INFO, logger="ezpz_amsc")
    finalize_hook(object(), run)
    assert parse_csv((run / "amsc.csv").read_text()) == [expected]
    messages = [r.getMessage() for r in caplog.records]
    assert [m for m in messages if "no row written" in m] == []
    assert ("ezpz-amsc: note: the records hold 2 attempts (a retried job); exported the last, "
            "the one this finalize ended (--attempt last)") in messages
    # The run's provenance record says how the row was made, so that it can be reproduced.
    record = json.loads((run / "amsc.json").read_text())
    assert record["options"]["attempt"] == "last"
    assert record["row"] == expected
    again = _runner().invoke(cli, ["reproduce", str(run / "amsc.json")], catch_exceptions=False)
    assert again.exit_code == 0, again.stdout + again.stderr
