"""Cross-checks before a row is published (run/crosschecks.py), from check_resumed on:
the resumed-run, mfu and final-loss notes, the rank-stopped-early file comparison, and
the unfinished-run evidence. Each case pins the exact notes and the cells they sit beside.

The earlier checks (gpus, step time, attempts, clock) are in test_crosschecks.py.
"""

from __future__ import annotations

import os
import statistics
from pathlib import Path

import pytest
from helpers import (
    H100_PEAK_TFLOPS,
    LAUNCH,
    MFU_NOTE,
    NO_THROUGHPUT_NOTE,
    RUNS,
    copy_run,
    expected_row,
    gap_estimate,
    is_step,
    launch,
    launch_records,
    notes_of,
    on_h100,
    one_row,
    read_records,
    rewrite,
    run_cli,
    set_metric,
    write_jsonl,
)

from ezpz_amsc.flow.export import export_run
from ezpz_amsc.options import ExportOptions

LAUNCH_ROW = expected_row(LAUNCH)
UNFINISHED_FLAGS = ("--timestamp", "2026-11-29T22:00:00Z", "--wall-time-sec", "10")


def _step_records() -> list[dict]:
    return launch_records()


def _not_step_records() -> list[dict]:
    """The launch fixture's all-strings precision record: a record, not a step."""
    return [r for r in read_records(RUNS / LAUNCH / "metrics-0.jsonl") if not is_step(r)]


def _as_rank(recs: list[dict], rank: int) -> list[dict]:
    return [{**x, "rank": rank} for x in recs]


# ---------------------------------------------------------------- resumed runs


def test_resumed_run_logging_every_10_steps_names_the_stride(tmp_path):
    """A resume from step 1000 of a run logging every 10th step: the stride is named."""
    run = copy_run("diffusion-1rank", tmp_path)
    kept = rewrite(run / "metrics-0.jsonl", lambda r: {**r, "metrics": {
        **r["metrics"], "train/step": r["metrics"]["train/step"] + 1000}}
        if r["metrics"]["train/step"] % 10 == 0 else None)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    dts = [x["metrics"]["train/dt"] for x in kept]
    wall, head = gap_estimate([1000, 1010, 1020, 1030], dts, 40)
    assert row["steps"] == "4"
    assert (row["wall_time_sec"], head) == (f"{wall:.3f}", 9)
    assert notes_of(r) == [
        "first logged step is 1000 (logged every 10 steps): the run was resumed, or did not "
        "log its first steps; the row covers steps 1000..1030 only",
        f"wall_time_sec is estimated for all the steps: the 4 logged steps' {sum(dts):.3f} s "
        "plus 36 steps not logged, each gap at the mean of the logged step times that bound "
        f"it (9 before the first logged step at {dts[1]:.4g} s), ~40 steps "
        "(logged every 10 steps, steps 1000..1030); pass --wall-time-sec for the job's real "
        "time", NO_THROUGHPUT_NOTE, MFU_NOTE]


def test_step_counter_without_one_finite_value_is_no_resume(tmp_path):
    """train/iter on every step, each too large for a float: no step number to compare."""
    run = launch(tmp_path)
    set_metric(run, "train/iter", lambda i, v: 10**400)
    r = run_cli(run, "--config", "c")
    assert one_row(r) == {**LAUNCH_ROW, "config": "c"}
    assert notes_of(r) == [
        "30 of 30 steps have a non-finite train/iter; ordered by timestamp, last", MFU_NOTE]


# ---------------------------------------------------------------- mfu above 100, final loss


def test_mfu_above_100_on_some_steps_keeps_the_cell_and_says_so_exactly(tmp_path):
    run = launch(tmp_path)
    set_metric(run, "train/mfu", lambda i, v: 150.0 if i in (5, 6) else 40.0 + i / 10)
    on_h100(run)
    r = run_cli(run, "--config", "c")
    kept = [40.0 + i / 10 for i in range(2, 31) if i not in (5, 6)]
    tflops = sorted([x / 100 * H100_PEAK_TFLOPS for x in kept] + [1.5 * H100_PEAK_TFLOPS] * 2)
    assert one_row(r) == {**LAUNCH_ROW, "config": "c", "mfu": f"{statistics.median(kept):.3f}",
                          "tflops": f"{statistics.median(tflops):.3f}"}
    assert notes_of(r) == [
        "dropped 2 mfu values above 100 % (FP8 measured against a BF16 peak, or fsdp_tp's "
        "tensor-parallel over-count): not a utilisation"]


@pytest.mark.parametrize(("diverged_from", "status", "stale", "hint"), [
    (28, "fail", True, False),  # the user said it failed: no --status advice
    (1, "pass", False, True),  # no finite loss at all: nothing stale to name
    (1, "fail", False, False),
])
def test_diverged_run_note_names_only_what_applies(tmp_path, diverged_from, status, stale,
                                                   hint):
    run = launch(tmp_path)
    set_metric(run, "train/loss", lambda i, v: float("nan") if i >= diverged_from else v)
    r = run_cli(run, "--config", "c", "--status", status)
    assert one_row(r) == {**LAUNCH_ROW, "config": "c", "status": status, "final_loss": ""}
    n = 31 - diverged_from
    last_finite = launch_records()[diverged_from - 2]["metrics"]["train/loss"]
    assert notes_of(r) == [
        f"dropped {n} non-finite values (loss {n})",
        f"loss is NaN or infinite on the last {n} steps that logged it (the run diverged?); "
        "final_loss left empty"
        + (f", not the stale {last_finite:.6g} of step {diverged_from - 1}" if stale else "")
        + ("; pass --status fail if the run failed" if hint else ""),
        MFU_NOTE]


# ---------------------------------------------------------------- a rank stopped early


def _interleaved(tmp_path: Path, mine: int, evals: int, others: dict[int, int]) -> Path:
    """minimal-1rank's one metrics.jsonl: rank 0's first ``mine`` steps plus ``evals``
    records without its step counter, and ``others[r]`` step records of rank r."""
    run = copy_run("minimal-1rank", tmp_path)
    recs = read_records(run / "metrics.jsonl")
    own = recs[:mine] + [{**x, "metrics": {"eval/loss": 1.5}} for x in recs[:evals]]
    write_jsonl(run / "metrics.jsonl",
                own + [x for r, n in others.items() for x in _as_rank(recs[:n], r)])
    return run


@pytest.mark.parametrize(("others", "larger"), [
    ({1: 15}, None),  # exactly 1.5x the 10 records of rank 0: not far larger
    ({1: 16}, (1, 16)),
    ({1: 30, 2: 12}, (1, 30)),  # the rank with the most records, not the highest rank
    ({1: 12, 2: 30}, (2, 30)),
])
def test_interleaved_rank_with_far_more_records(tmp_path, others, larger):
    run = _interleaved(tmp_path, 10, 0, others)
    r = run_cli(run, "--config", "c", "--gpus", str(len(others) + 1))
    row = one_row(r)
    assert row["steps"] == "10"
    stopped = [n for n in notes_of(r) if "stopped early" in n]
    assert stopped == ([] if larger is None else [
        f"rank {larger[0]} logged {larger[1]} records, rank 0 only 10: rank 0 may have stopped "
        "early; the row covers its 10 steps only"])


def test_interleaved_rank0_records_count_its_eval_records(tmp_path):
    """Rank 0's 8 steps and 6 eval records are 14 records: rank 1's 22 are 1.57x."""
    run = _interleaved(tmp_path, 8, 6, {1: 22})
    r = run_cli(run, "--config", "c", "--gpus", "2")
    assert one_row(r)["steps"] == "8"
    assert ("rank 1 logged 22 records, rank 0 only 14: rank 0 may have stopped early; the row "
            "covers its 8 steps only") in notes_of(r)


def _per_rank(tmp_path: Path, further: dict[int, int], ranks: int) -> Path:
    """The launch run with ``ranks`` per-rank files; rank k in ``further`` logged on to
    step 30 + further[k] (the others, like rank 0, to step 30)."""
    run = launch(tmp_path)
    recs = read_records(run / "metrics-0.jsonl")
    steps = [x for x in recs if is_step(x)]
    for k in range(1, ranks):
        more = [{**x, "metrics": {**x["metrics"], "train/iter": x["metrics"]["train/iter"] + 30}}
                for x in steps[:further.get(k, 0)]]
        write_jsonl(run / f"metrics-{k}.jsonl", _as_rank(recs + more, k))
    return run


@pytest.mark.parametrize(("further", "ranks", "named"), [
    ({3: 5}, 6, (3, 35)),  # others 1..5: the middle one, rank 3, is read
    ({1: 9, 3: 4}, 4, (1, 39)),  # the furthest is rank 1's, not the highest rank's
    ({2: 1}, 4, None),  # one step further on: ranks stop a step apart when killed
])
def test_per_rank_file_further_on_is_found(tmp_path, further, ranks, named):
    run = _per_rank(tmp_path, further, ranks)
    r = run_cli(run, "--config", "c")
    assert one_row(r) == {**LAUNCH_ROW, "config": "c"}
    stopped = [] if named is None else [
        f"rank {named[0]}'s last record is step {named[1]}, rank 0's step 30: rank 0 may have "
        "stopped early; the row covers its 30 steps only"]
    assert notes_of(r) == [*stopped, MFU_NOTE]


def test_files_compared_with_the_rank_used_not_the_first_file_read(tmp_path):
    """Rank 0's file holds one record and no step: rank 1's file is the row's, and rank
    2's, the same size, is not far larger (rank 0's tiny file is not the yardstick)."""
    run = launch(tmp_path)
    recs = read_records(run / "metrics-0.jsonl")
    write_jsonl(run / "metrics-0.jsonl", _not_step_records())
    for k in (1, 2):
        write_jsonl(run / f"metrics-{k}.jsonl", _as_rank(recs, k))
    r = run_cli(run, "--config", "c")
    assert one_row(r) == {**LAUNCH_ROW, "config": "c"}
    assert notes_of(r) == ["rank 0 logged no step; used rank 1", MFU_NOTE]


def test_run_without_a_step_compares_no_files(tmp_path):
    """No rank logged a step: no rank stopped early, whatever the file sizes."""
    run = launch(tmp_path)
    write_jsonl(run / "metrics-0.jsonl", _not_step_records() * 10)
    write_jsonl(run / "metrics-1.jsonl", _as_rank(_not_step_records(), 1))
    r = run_cli(run, "--config", "c", "--status", "fail", *UNFINISHED_FLAGS)
    assert one_row(r) == {**LAUNCH_ROW, "config": "c", "status": "fail",
                          "timestamp": "2026-11-29T22:00:00Z", "wall_time_sec": "10.000",
                          "throughput_tokens_per_sec": "", "throughput_tokens_per_sec_per_gpu":
                          "", "tflops": "", "final_loss": "", "steps": ""}
    assert notes_of(r) == []


# ---------------------------------------------------------------- unfinished runs


def _age(paths: list[Path], sec_before_last: float) -> None:
    last = launch_records()[-1]["timestamp"]
    for p in paths:
        os.utime(p, (last - sec_before_last, last - sec_before_last))


def test_unfinished_run_with_status_fail_gets_no_status_advice(tmp_path):
    run = launch(tmp_path)
    _age([run / "run_info.json"], 3600)
    r = run_cli(run, "--config", "c", "--status", "fail")
    assert one_row(r) == {**LAUNCH_ROW, "config": "c", "status": "fail"}
    assert notes_of(r) == [
        "run looks unfinished (run_info.json was written 60 min before the first exported "
        "record: another launch's; the row may be a relaunch into this folder that was killed "
        "before finalize); status stays 'fail'", MFU_NOTE]


@pytest.mark.parametrize(("first", "every", "written"), [
    # 300 s before the last record, 10 s before the first (within the 60 s of clock slack)
    (1795990510.0, 10.0, 1795990500.0),
    # 60 s before the first record, 205 s before the last
    (1795990560.0, 5.0, 1795990500.0),
])
def test_provenance_exactly_at_a_limit_is_not_stale(tmp_path, first, every, written):
    """Written exactly 300 s before the last record, or exactly 60 s before the first, to
    the nanosecond: not more than the limit. (One second more: the stale cases.)"""
    run = launch(tmp_path)
    rewrite(run / "metrics-0.jsonl", lambda x: {**x, "timestamp": first + every * (
        x["metrics"]["train/iter"] - 1)} if is_step(x) else x)
    for p in (run / "run_info.json", run / "train" / "report-train.md"):
        os.utime(p, ns=(int(written) * 10**9,) * 2)
        assert os.stat(p).st_mtime == written
    r = run_cli(run, "--config", "c")
    assert one_row(r)["steps"] == "30"
    assert not [n for n in notes_of(r) if "unfinished" in n]


@pytest.mark.parametrize("stale", ["run_info.json", "report.md"])
def test_only_the_provenance_used_is_checked_for_staleness(tmp_path, stale):
    """A second run_info.json (the run directory's, above the metrics folder) or a second
    report (after the metrics folder's train/report-train.md) is not the one used: an old
    one says nothing of this attempt."""
    root = tmp_path / "job"
    run = copy_run(LAUNCH, root)
    (root / "run_info.json").write_text((run / "run_info.json").read_text())
    (run / "report.md").write_text((run / "train" / "report-train.md").read_text())
    _age([run / "train" / "report-train.md"] if stale == "report.md" else
         [root / "run_info.json"], 3600)
    r = run_cli(root, "--config", "c")
    assert one_row(r) == {**LAUNCH_ROW, "config": "c"}
    assert not [n for n in notes_of(r) if "unfinished" in n], notes_of(r)


@pytest.mark.parametrize("short_file", [0, 1])
def test_files_named_by_local_rank_compare_the_file_the_steps_came_from(tmp_path, short_file):
    """metrics-0.jsonl holds rank 12, metrics-1.jsonl rank 13 (files named by local rank on
    a second node). Rank 12's steps come from metrics-0.jsonl: when it is the short one
    it stopped early; when metrics-1.jsonl is, rank 12 did not (it was once compared with
    metrics-1.jsonl as its own file, and with its own file as another rank's)."""
    run = launch(tmp_path)
    recs = read_records(run / "metrics-0.jsonl")
    short = [x for x in recs if not is_step(x) or x["metrics"]["train/iter"] <= 10]
    for k in (0, 1):
        write_jsonl(run / f"metrics-{k}.jsonl", _as_rank(short if k == short_file else recs,
                                                         12 + k))
    r = run_cli(run, "--config", "c", "--gpus", "2")
    # both files were read, rank 12's again after rank 13's: it is the last one read
    details = export_run(run, ExportOptions(config="c", gpus=2)).details
    assert details.files_read == [str(run / "metrics-1.jsonl"), str(run / "metrics-0.jsonl")]
    assert (details.rank, details.rank_files_not_read) == (12, 0)
    steps = 10 if short_file == 0 else 30
    assert one_row(r)["steps"] == str(steps)
    own, other = (os.path.getsize(run / f"metrics-{k}.jsonl") for k in (0, 1))
    stopped = [n for n in notes_of(r) if "stopped early" in n]
    assert stopped == ([] if short_file == 1 else [
        "the last record of metrics-1.jsonl is step 30, of metrics-0.jsonl (rank 12's) step "
        "10: rank 12 may have stopped early; the row covers its 10 steps only"])
    assert os.path.getsize(run / f"metrics-{short_file}.jsonl") < other + own


def test_truncated_file_named_is_the_one_the_steps_came_from(tmp_path):
    """Rank 12's metrics-0.jsonl ends in a cut line; metrics-1.jsonl (rank 13) is whole."""
    run = launch(tmp_path)
    recs = read_records(run / "metrics-0.jsonl")
    write_jsonl(run / "metrics-1.jsonl", _as_rank(recs, 13))
    write_jsonl(run / "metrics-0.jsonl", _as_rank(recs, 12))
    with open(run / "metrics-0.jsonl", "a") as f:
        f.write('{"timestamp": 1795990999.0, "rank": 12, "metr')
    r = run_cli(run, "--config", "c", "--gpus", "2")
    assert one_row(r)["steps"] == "30"
    notes = notes_of(r)
    assert "last line of metrics-0.jsonl is truncated; ignored it" in notes
    assert [n for n in notes if n.startswith("run looks unfinished")] == [
        "run looks unfinished (metrics-0.jsonl ends in a truncated line); status stays 'pass'; "
        "pass --status fail if the job failed"]


# ---------------------------------------------------------------- ezpz launch's exit status


def _launched(tmp_path: Path, status: int) -> Path:
    """The launch run whose ezpz launch log ends with ``Execution finished with N.``"""
    run = launch(tmp_path)
    (log,) = run.glob("*-rank0.jsonl")
    text = log.read_text().replace("Execution finished with 0.",
                                   f"Execution finished with {status}.")
    log.write_text(text)
    return run


@pytest.mark.parametrize(("status", "given", "hint"), [
    (1, "pass", "; pass --status fail if the job failed"),
    (137, "fail", ""),
])
def test_a_launch_log_that_says_the_job_failed_is_a_note(tmp_path, status, given, hint):
    r = run_cli(_launched(tmp_path, status), "--config", "c", "--status", given)
    assert one_row(r) == {**LAUNCH_ROW, "config": "c", "status": given}  # the user's status
    assert notes_of(r) == [
        f"2026-11-29-221908-rank0.jsonl says the job exited with status {status} (ezpz launch: "
        f"'Execution finished with {status}.'); status stays '{given}'{hint}", MFU_NOTE]


def test_a_launch_log_that_says_zero_is_silent(tmp_path):
    r = run_cli(_launched(tmp_path, 0), "--config", "test/cfg")
    assert notes_of(r) == [MFU_NOTE]


def test_rank0_s_last_numbered_step_is_compared(tmp_path):
    """Rank 0's last record has no step number (it sorts last): step 10 is its last."""
    run = launch(tmp_path)
    recs = read_records(run / "metrics-0.jsonl")
    write_jsonl(run / "metrics-1.jsonl", _as_rank(recs, 1))
    kept = [x for x in recs if not is_step(x) or x["metrics"]["train/iter"] <= 10]
    kept.append({**kept[-1], "timestamp": kept[-1]["timestamp"] + 0.05,
                 "metrics": {**kept[-1]["metrics"], "train/iter": float("nan")}})
    write_jsonl(run / "metrics-0.jsonl", kept)
    r = run_cli(run, "--config", "c", "--gpus", "2")
    assert one_row(r)["steps"] == "11"
    assert ("rank 1's last record is step 30, rank 0's step 10: rank 0 may have stopped "
            "early; the row covers its 11 steps only") in notes_of(r)
