"""Finding a run's files (run/layout.py): the metrics file schemes, a wrong folder
named right, broken and unreadable files, provenance above and beside the metrics,
and a tree of 100,000 files."""

from __future__ import annotations

import errno
import json
import os
import shutil
from pathlib import Path

import pytest
from helpers import (
    LAUNCH,
    MFU_NOTE,
    NO_THROUGHPUT_NOTE,
    RUNS,
    copy_run,
    error_line,
    expected_row,
    fail_for,
    good_run,
    launch,
    notes_of,
    one_row,
    parse_csv,
    run_cli,
    step,
    write_jsonl,
    write_run_info,
)

from ezpz_amsc.errors import AmscError
from ezpz_amsc.flow.export import export_run
from ezpz_amsc.options import ExportOptions
from ezpz_amsc.run.layout import (
    LOG_TAIL_BYTES,
    RankFiles,
    finalized_beside,
    find_run_files,
    holds_metrics,
    launch_exit_status,
    rel_to,
    sniff_jsonl,
    where_the_run_is,
)

LAUNCH_ROW = expected_row(LAUNCH)


# ------------------------------------------------------------------- the metrics files


def test_no_metrics_says_what_was_looked_for(tmp_path):
    run = tmp_path / "r"
    write_run_info(run)
    line = error_line(run_cli(run, "--config", "c"))
    assert "no metrics found (looked for metrics-<rank>.jsonl, metrics.jsonl" in line
    assert "pass --status fail" in line


def test_run_id_named_metrics_file(tmp_path, fixture_run):
    run = fixture_run("fsdp_tp-1rank-launch")
    (run / "metrics-0.jsonl").rename(run / "20260811-182837.jsonl")
    row = one_row(run_cli(run, "--config", "test/cfg"))
    assert row["throughput_tokens_per_sec"] == "7443.215"


def test_structured_log_is_never_read_as_metrics(tmp_path, fixture_run):
    run = fixture_run("fsdp_tp-1rank-launch")
    # Only the structured log left: nothing to export, and it says so.
    (run / "metrics-0.jsonl").unlink()
    r = run_cli(run, "--config", "c")
    assert r.exit_code == 1
    assert "no metrics found" in r.stderr


def test_unreadable_run_id_jsonl_is_noted(tmp_path, monkeypatch):
    run = tmp_path / "run"
    write_run_info(run)
    write_jsonl(run / "metrics-0.jsonl", [step(i, dt=1.0) for i in range(1, 3)])
    write_jsonl(run / "20260811-182837.jsonl", [step(1, dt=1.0)])
    fail_for(monkeypatch, run / "20260811-182837.jsonl", errno.EACCES)
    r = run_cli(run, "--config", "c")
    assert one_row(r)["steps"] == "2"
    assert "note: skipped 20260811-182837.jsonl: cannot be read" in r.stderr


def test_rank_files_mapping(tmp_path):
    for r in (0, 1, 2, 10):
        write_jsonl(tmp_path / f"metrics-{r}.jsonl", [step(1, loss=1.0, rank=r)])
    source = find_run_files(tmp_path).metrics
    files = source.per_rank
    assert isinstance(files, RankFiles)
    assert sorted(files) == [0, 1, 2, 10] and len(files) == 4
    assert files[10] == tmp_path / "metrics-10.jsonl"
    assert dict(files.items()) == {r: tmp_path / f"metrics-{r}.jsonl" for r in (0, 1, 2, 10)}
    assert 3 not in files
    with pytest.raises(KeyError):
        files[3]
    assert repr(files) == f"RankFiles({str(tmp_path)!r}, 4 ranks)"


def test_only_the_chosen_rank_file_is_read_among_200(tmp_path, monkeypatch):
    run = tmp_path / "run"
    write_run_info(run, WORLD_SIZE_IN_USE="200", world_size="200", GPUS_PER_NODE="12",
                   NUM_NODES="17")
    for r in range(200):
        write_jsonl(run / f"metrics-{r}.jsonl", [step(i, rank=r, dt=1.0) for i in range(1, 4)])
    opened: list[str] = []
    real_open = os.open

    def counting_open(file, *a, **kw):  # every file is read through os.open (fs/read.py)
        opened.append(str(file))
        return real_open(file, *a, **kw)

    monkeypatch.setattr(os, "open", counting_open)
    row = one_row(run_cli(run, "--config", "c"))
    rank_files = [p for p in opened if "metrics-" in p]
    # rank 0's is read; the first, middle and last other ranks' only at their end (their
    # last step against rank 0's: tests/run/test_crosschecks.py)
    assert rank_files == [str(run / f"metrics-{r}.jsonl") for r in (0, 1, 100, 199)]
    assert (row["gpus"], row["nodes"]) == ("200", "17")


@pytest.mark.slow
def test_run_directory_with_100000_files(tmp_path):
    """A 100,000-rank run: every per-rank file is named by the walk, only rank 0 is read."""
    run = tmp_path / "run"
    good_run(run, GPUS_PER_NODE="12", world_size="100000", WORLD_SIZE_IN_USE="100000",
             NUM_NODES="8334")
    for r in range(1, 100_000):
        os.close(os.open(run / f"metrics-{r}.jsonl", os.O_CREAT | os.O_WRONLY, 0o644))
    res = export_run(run, ExportOptions(config="c"))
    assert (res.row["gpus"], res.row["nodes"], res.row["steps"]) == ("100000", "8334", "4")
    assert res.details.files_read == [str(run / "metrics-0.jsonl")]
    assert res.details.rank_files_not_read == 99_999


def test_metrics_in_two_folders_is_refused(tmp_path):
    for sub in ("a", "b"):
        write_run_info(tmp_path / sub)
        write_jsonl(tmp_path / sub / "metrics-0.jsonl", [step(1, dt=1.0)])
    line = error_line(run_cli(tmp_path, "--config", "c"))
    # each in a subfolder of its own: a folder of runs, exported as a batch
    assert line == (f"error: {tmp_path}: a folder of 2 runs (a, b); pass one of them, or "
                    f"{tmp_path}/*/ to export each (one row per run)")


@pytest.mark.parametrize("layout", [("", "b"), ("a/x", "a/y")])
def test_metrics_in_two_folders_of_one_run_is_refused(tmp_path, layout):
    # Not one run per subfolder (metrics at the top too, or two in one subfolder): DIR/*/
    # would not export them, so the only advice is to pass a single run.
    for sub in layout:
        write_run_info(tmp_path / sub)
        write_jsonl(tmp_path / sub / "metrics-0.jsonl", [step(1, dt=1.0)])
    line = error_line(run_cli(tmp_path, "--config", "c"))
    assert "metrics files in 2 folders" in line
    assert line.endswith("; pass the directory of a single run")


# ------------------------------------------------------------------------ broken files


def _break(path: Path, fault: str) -> None:
    """Put something at ``path`` that is not a readable regular file."""
    if fault == "directory":
        path.mkdir()
    elif fault == "dangling-symlink":
        path.symlink_to(path.parent / "gone.jsonl")
    elif fault == "symlink-loop":
        path.symlink_to(path)
    else:
        os.mkfifo(path)


@pytest.mark.parametrize("fault", ["directory", "dangling-symlink", "symlink-loop", "fifo"])
def test_broken_rank0_file_is_passed_over_for_the_next_rank(tmp_path, fault, no_hang):
    run = tmp_path / "run"
    write_run_info(run)
    write_jsonl(run / "metrics-1.jsonl", [step(i, rank=1, dt=0.5, tps=1000.0 + i, loss=2.0)
                                          for i in range(1, 5)])
    _break(run / "metrics-0.jsonl", fault)
    r = run_cli(run, "--config", "c")
    row = one_row(r)
    assert row["steps"] == "4"
    assert "rank 0 logged no step; used rank 1" in notes_of(r)


@pytest.mark.parametrize("fault", ["directory", "dangling-symlink", "symlink-loop", "fifo"])
def test_only_metrics_file_broken_is_a_clear_error(tmp_path, fault, no_hang):
    run = tmp_path / "run"
    write_run_info(run)
    bad = run / "metrics.jsonl"
    _break(bad, fault)
    for extra in ("run_info.json", "x.jsonl"):  # FIFOs/loops also where others are sniffed
        p = run / "sub" / extra
        p.parent.mkdir(exist_ok=True)
        if fault == "fifo":
            os.mkfifo(p)
        elif fault == "symlink-loop":
            p.symlink_to(p)
    assert "no metrics found" in error_line(run_cli(run, "--config", "c"))


def test_symlinked_folder_loop_is_not_followed(tmp_path, no_hang):
    run = good_run(tmp_path / "run")
    (run / "train").mkdir()
    (run / "train" / "up").symlink_to(run, target_is_directory=True)
    assert one_row(run_cli(run, "--config", "c"))["steps"] == "4"


# ------------------------------------------------------------- the wrong folder, named


STATUS_FAIL_HINT = "if the run failed, pass --status fail"


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
            "metrics-0.jsonl): pass that") in notes_of(r)


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


def _rank_1_fragment(announced: Path, landed: Path) -> None:
    """Rank 1's records left in the announced folder (rank 0's went with finalize)."""
    lines = (landed / "metrics-0.jsonl").read_text().splitlines()
    (announced / "metrics-1.jsonl").write_text(
        "".join(ln.replace('"rank": 0', '"rank": 1') + "\n" for ln in lines))


def test_a_rank_fragment_folder_names_the_folder_finalize_wrote(tmp_path):
    """A 2-rank diffusion run: the announced folder keeps rank 1's file, nothing else."""
    announced, (landed,) = _diffusion_outputs(tmp_path, "2026-11-29-222215")
    _rank_1_fragment(announced, landed)
    advice = (f"ezpz probably put this run's data in {landed}, the next output folder beside "
              "it (History.finalize() without an output dir writes rank 0's metrics and "
              "run_info.json into a new timestamped folder): pass that")
    assert error_line(run_cli(announced, "--config", "c")) == (
        "error: cannot tell system, gpus, nodes of this run (provenance: no run_info.json, "
        "config.json or report with ### Distributed found); pass --system NAME --gpus N "
        f"--nodes N; but {advice}")
    r = run_cli(announced, "--config", "c", "--system", "S", "--nodes", "1", "--gpus", "2")
    assert one_row(r)["steps"] == "40"
    assert notes_of(r) == [  # finalize did run: the run is not called unfinished
        f"no run_info.json or report here; {advice}", "rank 0 logged no step; used rank 1",
        NO_THROUGHPUT_NOTE, MFU_NOTE]
    assert finalized_beside(announced) == advice
    assert finalized_beside(landed) is None  # it has run_info.json itself


@pytest.mark.parametrize("provenance", ["config.json", "report-train.md"])
def test_a_folder_with_its_own_provenance_is_no_fragment(tmp_path, provenance):
    announced, (landed,) = _diffusion_outputs(tmp_path, "2026-11-29-222215")
    _rank_1_fragment(announced, landed)
    (announced / provenance).write_text("{}" if provenance.endswith(".json") else "# r\n")
    r = run_cli(announced, "--config", "c", "--system", "S", "--nodes", "1", "--gpus", "2")
    assert not any("probably put" in n for n in notes_of(r))


def test_a_fragment_without_a_finalized_folder_beside_it_looks_unfinished(tmp_path):
    announced, (landed,) = _diffusion_outputs(tmp_path, "2026-11-29-222215")
    _rank_1_fragment(announced, landed)
    (landed / "run_info.json").unlink()
    r = run_cli(announced, "--config", "c", "--system", "S", "--nodes", "1", "--gpus", "2")
    assert notes_of(r)[:2] == [
        "rank 0 logged no step; used rank 1",
        "run looks unfinished (no run_info.json and no report: History.finalize() did not run); "
        "status stays 'pass'; pass --status fail if the job failed"]


def test_empty_folder_alone_still_suggests_status_fail(tmp_path):
    (tmp_path / "run").mkdir()
    assert error_line(run_cli(tmp_path / "run", "--config", "c")).endswith(STATUS_FAIL_HINT)


# --------------------------------------- provenance files above and beside the metrics


def test_provenance_of_a_sibling_folder_is_not_used(tmp_path):
    """diffusion's finalize writes into a new timestamped folder beside the announced one."""
    run = launch(tmp_path)
    (run / "attempt2").mkdir()
    (run / "metrics-0.jsonl").rename(run / "attempt2" / "metrics-0.jsonl")
    (run / "attempt1").mkdir()
    (run / "run_info.json").rename(run / "attempt1" / "run_info.json")
    assert error_line(run_cli(run, "--config", "c")).startswith(
        "error: cannot tell system, gpus, nodes of this run (provenance: no run_info.json")
    r = run_cli(run, "--config", "c", "--system", "S", "--nodes", "1", "--gpus", "1")
    assert one_row(r)["system"] == "S"
    assert notes_of(r) == [
        "ignored attempt1/run_info.json: not in the metrics folder or a folder above it "
        "(another run's or attempt's?)",
        "ignored train/report-train.md: not in the metrics folder or a folder above it "
        "(another run's or attempt's?)",
        "run looks unfinished (no run_info.json and no report: History.finalize() did not run); "
        "status stays 'pass'; pass --status fail if the job failed",
        MFU_NOTE]


def test_provenance_of_a_parent_folder_is_used(tmp_path):
    run = launch(tmp_path)
    (run / "attempt2").mkdir()
    (run / "metrics-0.jsonl").rename(run / "attempt2" / "metrics-0.jsonl")
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r) == {**LAUNCH_ROW, "config": "test/cfg"}
    assert notes_of(r)[-1] == MFU_NOTE


# ------------------------------------------- what the walk skips, sniffs, names and refuses


def _metrics(path: Path) -> Path:
    return write_jsonl(path, [step(1, dt=1.0)])


def _refusal(run_dir: Path) -> str:
    with pytest.raises(AmscError) as e:
        find_run_files(run_dir)
    return str(e.value)


@pytest.mark.parametrize("name", [
    "plots", "mplot", "tplot", "assets", "wandb", "mlruns", "tensorboard", "tb", "runs_tb",
    "aim", "__pycache__", "cache", "lightning_logs", "hub", "datasets",
    # by prefix
    "checkpoint", "checkpoints", "checkpoint-100", "ckpt", "ckpts", "ckpt_5", "global_step10",
    "step_3", ".git", ".cache", ".aim", ".hidden",
    # in any case
    "Plots", "WandB", "Checkpoint-7",
])
def test_a_skipped_folder_is_not_walked(tmp_path, name):
    _metrics(tmp_path / "metrics-0.jsonl")
    _metrics(tmp_path / name / "metrics-0.jsonl")
    write_run_info(tmp_path / name)
    (tmp_path / name / "report.md").write_text("# another run\n")
    files = find_run_files(tmp_path)
    assert (files.metrics.scheme, files.metrics.folder) == ("per-rank", tmp_path)
    assert (files.run_info, files.reports, files.notes) == ([], [], [])


@pytest.mark.parametrize("name", ["plot", "tbx", "steps", "my_checkpoint", "hubs"])
def test_a_folder_named_like_a_skipped_one_is_walked(tmp_path, name):
    _metrics(tmp_path / "metrics-0.jsonl")
    _metrics(tmp_path / name / "metrics-0.jsonl")
    assert _refusal(tmp_path) == (f"{tmp_path}: metrics files in 2 folders (., {name}); "
                                  "pass the directory of a single run")


JUNK = b"not json\n"
METRICS_LINE = json.dumps(step(1, dt=1.0)).encode() + b"\n"


@pytest.mark.parametrize("lines,kind", [
    ([JUNK] * 7 + [METRICS_LINE], "metrics"),  # the 8th line is read ...
    ([JUNK] * 8 + [METRICS_LINE], "unknown"),  # ... the 9th is not
    ([b'{"other": 1}\n', b"[1]\n", METRICS_LINE], "metrics"),
    ([b'{"level": "INFO"}\n', METRICS_LINE], "log"),
    ([b'{"message": "hi"}\n', METRICS_LINE], "log"),
    ([b'"a string"\n', b"{}\n", b"{\n"], "unknown"),
    ([b"x" * ((1 << 20) - 200) + b"\n", METRICS_LINE], "metrics"),  # within the 1 MiB read
    ([b"x" * (1 << 20) + b"\n", METRICS_LINE], "unknown"),  # past it
], ids=["8th-line", "9th-line", "other-dict", "level", "message", "none", "1MiB", "past-1MiB"])
def test_a_jsonl_is_told_by_its_first_lines_within_1_mib(tmp_path, lines, kind):
    path = tmp_path / "x.jsonl"
    path.write_bytes(b"".join(lines))
    assert sniff_jsonl(path) == kind


def test_jsonl_files_are_told_apart_by_content(tmp_path):
    run_id = _metrics(tmp_path / "20260811-182837.jsonl")
    write_jsonl(tmp_path / "train.jsonl", [{"level": "INFO", "message": "step 1"}])
    (tmp_path / "notes.jsonl").write_text("not json\n")
    files = find_run_files(tmp_path)
    assert (files.metrics.scheme, files.metrics.single) == ("run-id", run_id)
    assert files.skipped_logs == [tmp_path / "train.jsonl"]
    assert files.notes == []


def test_only_report_md_files_are_reports(tmp_path):
    _metrics(tmp_path / "metrics-0.jsonl")
    for name in ("report.md", "report-train.md", "report.txt", "notes.md", "my_report.md"):
        (tmp_path / name).write_text("x")
    assert find_run_files(tmp_path).reports == [tmp_path / "report-train.md",
                                                tmp_path / "report.md"]


@pytest.mark.parametrize("sub,names,shown", [
    ("", ["metrics-0.jsonl", "metrics.jsonl"], "metrics-<rank>.jsonl, metrics.jsonl"),
    ("a", ["metrics-0.jsonl", "metrics.jsonl"], "metrics-<rank>.jsonl, metrics.jsonl"),
    ("", ["metrics.jsonl", "20260811-182837.jsonl"], "metrics.jsonl, 20260811-182837.jsonl"),
    # one rank's file plain and gzipped: two schemes, not one file read twice
    ("", ["metrics-0.jsonl", "metrics-0.jsonl.gz", "metrics-1.jsonl"],
     "metrics-<rank>.jsonl, metrics-<rank>.jsonl.gz"),
    ("", ["metrics.jsonl", "metrics.jsonl.gz"], "metrics.jsonl, metrics.jsonl.gz"),
    # rank files, one gzipped (one scheme), beside a run-id file: two
    ("", ["metrics-0.jsonl.gz", "metrics-1.jsonl", "20260811-182837.jsonl"],
     "metrics-<rank>.jsonl, 20260811-182837.jsonl"),
])
def test_two_metrics_schemes_in_one_folder_are_refused(tmp_path, sub, names, shown):
    for name in names:
        _metrics(tmp_path / sub / name)
    assert _refusal(tmp_path) == (f"{sub or '.'}: more than one metrics file scheme ({shown}); "
                                  "keep one run per directory")


@pytest.mark.parametrize("n,shown", [(4, "a, b, c, d"), (5, "a, b, c, d and 1 more"),
                                     (6, "a, b, c, d and 2 more")])
def test_a_folder_of_many_runs_names_the_first_four(tmp_path, n, shown):
    for sub in "abcdef"[:n]:
        _metrics(tmp_path / sub / "metrics-0.jsonl")
    assert _refusal(tmp_path) == (f"{tmp_path}: a folder of {n} runs ({shown}); pass one of "
                                  f"them, or {tmp_path}/*/ to export each (one row per run)")


def test_a_file_given_as_the_run_directory_is_refused(tmp_path):
    path = _metrics(tmp_path / "metrics-0.jsonl")
    assert _refusal(path) == f"{path}: not a directory; pass the run directory ezpz wrote"


@pytest.mark.parametrize("where", ["run", "subfolder"])
def test_a_folder_that_cannot_be_listed(tmp_path, monkeypatch, where):
    _metrics(tmp_path / "metrics-0.jsonl")
    (tmp_path / "sub").mkdir()
    denied = tmp_path if where == "run" else tmp_path / "sub"
    real = os.scandir

    def scandir(path):
        if Path(path) == denied:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    if where == "run":
        assert _refusal(tmp_path) == f"{tmp_path}: cannot list directory: Permission denied"
    else:
        files = find_run_files(tmp_path)
        assert files.metrics.folder == tmp_path
        assert files.notes == ["skipped folder sub: Permission denied"]


def test_paths_in_messages_are_relative_to_the_run(tmp_path):
    assert rel_to(tmp_path, tmp_path) == "."
    assert rel_to(tmp_path, tmp_path / "a" / "b.json") == "a/b.json"
    assert rel_to(tmp_path / "run", tmp_path / "other") == str(tmp_path / "other")


@pytest.mark.parametrize("name", ["metrics.jsonl", "metrics-3.jsonl"])
def test_a_metrics_file_is_known_by_its_name_alone(tmp_path, name):
    (tmp_path / "a.jsonl").touch()
    (tmp_path / name).touch()  # empty: named, not sniffed
    assert holds_metrics(tmp_path) == name


def test_the_run_is_looked_for_three_folders_up_at_most(tmp_path):
    run = tmp_path / "run"
    _metrics(run / "metrics-0.jsonl")
    (run / "a" / "b" / "c" / "d").mkdir(parents=True)
    assert where_the_run_is(run / "a" / "b" / "c") == (
        f"it is inside the run {run} (which holds metrics-0.jsonl): pass that")
    assert where_the_run_is(run / "a" / "b" / "c" / "d") is None


def test_the_next_output_folder_is_a_later_one_not_the_announced_one(tmp_path):
    # The announced folder names a metrics file that is not there (a dangling link):
    # the advice still names the later folder, never the announced one itself.
    announced, (landed,) = _diffusion_outputs(tmp_path, "2026-11-29-222215")
    (announced / "metrics-0.jsonl").symlink_to(tmp_path / "gone.jsonl")
    assert find_run_files(announced).metrics is None
    assert f"ezpz probably put this run's data in {landed}, " in where_the_run_is(announced)


def test_reports_sort_by_nearness_to_the_metrics(tmp_path):
    attempt = tmp_path / "attempt"
    _metrics(attempt / "metrics-0.jsonl")
    for report in (tmp_path / "report.md", attempt / "train" / "report-train.md",
                   attempt / "report.md"):
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text("x")
    assert find_run_files(tmp_path).reports == [
        attempt / "report.md", attempt / "train" / "report-train.md", tmp_path / "report.md"]


def test_run_info_and_config_below_the_metrics_folder_are_ignored(tmp_path):
    _metrics(tmp_path / "metrics-0.jsonl")
    write_run_info(tmp_path / "train")
    (tmp_path / "train" / "config.json").write_text("{}")
    files = find_run_files(tmp_path)
    assert (files.run_info, files.config) == ([], [])
    assert files.notes == [
        f"ignored train/{name}: not in the metrics folder or a folder above it (another "
        "run's or attempt's?)" for name in ("run_info.json", "config.json")]


# ------------------------------------------------------------------- ezpz launch's log


def _log(path: Path, messages: list[str], pad: int = 0) -> Path:
    recs = [{"timestamp": "2026-11-29T22:19:21", "level": "INFO", "message": m, "pad": "x" * pad}
            for m in messages]
    write_jsonl(path, recs)
    return path


@pytest.mark.parametrize(("messages", "status"), [
    (["----[ezpz.launch][started]----", "Execution finished with 0.",
      "Executing finished in 11.36 seconds."], 0),
    (["Execution finished with 0.", "Execution finished with 137."], 137),  # the last one
    (["Execution finished with -9."], -9),
    (["Execution finished with 1. (and more)"], None),  # not the line ezpz writes
    (["Training step 3"], None),
])
def test_launch_exit_status(tmp_path, messages, status):
    assert launch_exit_status(_log(tmp_path / "x-rank0.jsonl", messages)) == status


def test_launch_exit_status_reads_the_end_only(tmp_path):
    """The status 40 KB before the end is past the 16 KiB read: unknown."""
    p = _log(tmp_path / "x-rank0.jsonl", ["Execution finished with 3."] + ["filler"] * 40, 1000)
    assert p.stat().st_size > 2 * LOG_TAIL_BYTES
    assert launch_exit_status(p) is None
    assert launch_exit_status(tmp_path / "missing-rank0.jsonl") is None


# ------------------------------------------------ a rank's file gzipped beside plain ones


@pytest.mark.parametrize("gzipped", [(0,), (1,), (0, 1)])
def test_some_rank_files_gzipped_are_one_scheme(tmp_path, json_paths, gzipped):
    """Issue 33: a quota clean-up gzipped rank 0's file (the largest) and left the others
    plain: one per-rank scheme, each rank's file read as it is; the row is the plain run's,
    word for word, with no new note."""
    import gzip

    run = copy_run("fsdp_tp-2rank", tmp_path)
    for rank in gzipped:
        plain = run / f"metrics-{rank}.jsonl"
        (run / f"metrics-{rank}.jsonl.gz").write_bytes(gzip.compress(plain.read_bytes()))
        plain.unlink()
    files = find_run_files(run)
    assert files.metrics.scheme == "per-rank"
    assert files.metrics.per_rank[0].name == ("metrics-0.jsonl.gz" if 0 in gzipped
                                              else "metrics-0.jsonl")
    r = run_cli(run, "--config", "test/cfg")
    assert one_row(r) == expected_row("fsdp_tp-2rank")
    assert notes_of(r) == [MFU_NOTE]
