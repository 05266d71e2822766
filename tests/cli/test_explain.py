"""``--explain`` and ``--format json`` (render/explain.py): what they say, that the JSON is the
CSV row plus its details, colour rules, and the report fitting 80 columns."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from helpers import (
    FIXTURE_NAMES,
    MFU_NOTE,
    REPO,
    RUNS,
    one_row,
    parse_csv,
    run_cli,
    step,
    strip_ansi,
    write_jsonl,
    write_run,
    write_run_info,
)

from ezpz_amsc.cli.explain import (
    ABSENT,
    BARS,
    WARMUP_MARK,
    _rel,
    _scale,
    _table,
    _table_lines,
    _trend_lines,
    render,
    sparkline,
    spread,
)
from ezpz_amsc.cli.output import use_colour
from ezpz_amsc.flow.export import export_run
from ezpz_amsc.options import ExportOptions
from ezpz_amsc.run.details import Trend
from ezpz_amsc.text import WIDTH, Paint, number, wrap, wrap_at_commas

ANSI = "\x1b["


SPARK = re.compile(f"^[{BARS}{WARMUP_MARK}{ABSENT}]+$")


def _sparklines(text: str) -> list[str]:
    return [t for ln in text.splitlines() if SPARK.match(t := ln.strip())]


def flat(text: str) -> str:
    """The report with its wrapped lines joined, for matching phrases across a line break."""
    return " ".join(ln.strip() for ln in text.splitlines())


def _json(stdout: str) -> list[dict]:
    def no_nan(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")

    return [json.loads(ln, parse_constant=no_nan) for ln in stdout.splitlines()]


# --- --explain -----------------------------------------------------------------------------


def test_explain_real_run_tells_where_numbers_came_from():
    result = run_cli(RUNS / "fsdp_tp-2rank", "--config", "c", "--explain")
    row = one_row(result)  # the row on stdout is untouched
    err, text = result.stderr, flat(result.stderr)
    assert "metrics-0.jsonl (rank 0)" in text
    assert "1 other rank file not read" in text
    assert "run_info.json (tier 1 of 3" in text
    assert "gpus 2 = max(WORLD_SIZE_IN_USE 2, world_size 2)" in text
    assert "nodes 1 = NUM_NODES (GPUS_PER_NODE is 0)" in text
    assert "system localhost = MACHINE from run_info.json" in text
    assert "30 steps logged, 1 dropped as warmup (--warmup 1), 29 reduced with median" in text
    # The sparkline: one glyph per step, the warmup step left of the mark.
    (line,) = _sparklines(err)
    warm, used = line.split(WARMUP_MARK)
    assert (len(warm), len(used)) == (1, 29)
    assert "1 warmup step dropped" in text and "below the scale" in text
    assert f"throughput_tokens_per_sec={row['throughput_tokens_per_sec']}" in text
    # every note, once (not also printed before the row)
    assert text.count("mfu is 0.0 on every step") == 1
    assert ANSI not in err


def test_explain_numbers_match_details():
    res = export_run(RUNS / "fsdp_tp-2rank-torchrun", ExportOptions(config="c"))
    text = render(res)
    tps = res.details.series["tps"]
    sp = spread(tps.value, tps.p10, tps.p90)
    assert sp == pytest.approx((tps.p90 - tps.p10) / tps.value)
    table = next(ln for ln in text.splitlines() if "train/tps " in ln)
    cells = table.split()
    assert cells[0] == "train/tps"
    assert float(cells[1]) == pytest.approx(tps.value, rel=1e-5)
    assert float(cells[2]) == pytest.approx(tps.p10, rel=1e-5)
    assert float(cells[3]) == pytest.approx(tps.p90, rel=1e-5)
    assert cells[4] == f"{sp:.1%}"
    assert cells[5:] == [str(tps.used), str(tps.dropped_warmup)]
    # torchrun's WORLD_SIZE_IN_USE=1 is visible in the derivation, and lost to world_size.
    assert "gpus 2 = max(WORLD_SIZE_IN_USE 1, world_size 2)" in flat(text)


def test_explain_marks_warmup_with_any_count(tmp_path):
    recs = [step(i, dt=1.0, tps=100.0 if i <= 3 else 1000.0 + i) for i in range(1, 11)]
    run = write_run(tmp_path / "run", recs)
    err = run_cli(run, "--config", "c", "--warmup", "3", "--explain").stderr
    (line,) = _sparklines(err)
    warm, used = line.split(WARMUP_MARK)
    assert warm == BARS[0] * 3  # clipped to the bottom of the used steps' scale
    assert len(used) == 7 and used[0] == BARS[0] and used[-1] == BARS[-1]
    assert "3 warmup steps dropped" in flat(err) and "100, 100, 100" in flat(err)


def test_explain_one_step_run(tmp_path):
    run = write_run(tmp_path / "run", [step(1, dt=2.0, tps=500.0, loss=1.0)])
    result = run_cli(run, "--config", "c", "--explain", "--status", "fail")
    assert one_row(result)["throughput_tokens_per_sec"] == ""  # one step is no rate
    err = result.stderr
    assert _sparklines(err) == [BARS[3]]  # a single value: mid glyph, no warmup mark
    assert "--warmup 1 would leave none, so all were reduced" in flat(err)
    assert "no warmup step dropped" in flat(err)
    assert ("throughput_tokens_per_sec left empty: 0 steps after --warmup 1 (1 step logged) "
            "is not a measurement of the run's rate") in flat(err)


@pytest.mark.parametrize("name", ["diffusion-1rank", "minimal-1rank"])
def test_explain_without_throughput_falls_back_to_step_time(name):
    result = run_cli(RUNS / name, "--config", "c", "--explain")
    assert one_row(result)["throughput_tokens_per_sec"] == ""
    err = result.stderr
    assert "no throughput series logged; showing step time" in flat(err)
    (line,) = _sparklines(err)
    assert WARMUP_MARK in line
    assert "tokens/s" not in err  # no row for a series that was never logged


def test_explain_with_nothing_to_draw(tmp_path):
    run = write_run(tmp_path / "run", [step(i, loss=1.0 / i) for i in (1, 2, 3)])
    result = run_cli(run, "--config", "c", "--wall-time-sec", "10", "--explain")
    one_row(result)
    assert "no throughput or step-time series logged; nothing to draw" in flat(result.stderr)
    assert _sparklines(result.stderr) == []


def test_explain_long_series_is_bucketed(tmp_path):
    recs = [step(i, dt=1.0, tps=float(i)) for i in range(1, 601)]
    run = write_run(tmp_path / "run", recs)
    err = run_cli(run, "--config", "c", "--warmup", "20", "--explain").stderr
    (line,) = _sparklines(err)
    warm, used = line.split(WARMUP_MARK)
    assert len(warm) + len(used) == 60
    assert len(warm) == 2  # 20 of 600 steps -> 2 of 60 glyphs; 580 steps -> 58 glyphs of 10
    assert used == "".join(sorted(used))  # a rising series stays rising after bucketing
    assert "60 glyphs wide, each the mean of ~10 steps" in flat(err)


def test_explain_shows_gap_and_provenance_from_two_tiers(tmp_path):
    recs = [step(i, dt=0.5, tps=1000.0) for i in range(10, 301, 10)]
    run = write_run(tmp_path / "run", recs, world_size=None, WORLD_SIZE_IN_USE=None)
    (run / "train").mkdir()
    (run / "train" / "report-train.md").write_text(
        "# r\n\n### Distributed\n\n- **world_size**: 4\n\n### Next\n")
    result = run_cli(run, "--config", "c", "--explain")
    assert one_row(result)["gpus"] == "4"
    err = result.stderr
    assert "run_info.json (tier 1 of 3, run_info.json: MACHINE" in flat(err)
    assert "train/report-train.md (tier 3 of 3, report ### Distributed: world_size)" in flat(err)
    assert "gpus 4 = max(WORLD_SIZE_IN_USE ?, world_size 4)" in flat(err)
    assert "step numbers 10..300 have gaps (stride 10): 30 of ~300 steps logged" in flat(err)
    assert "note: wall_time_sec is estimated for all the steps: the 30 logged steps'" in flat(err)


def test_explain_flags_show_as_flags(tmp_path):
    run = write_run(tmp_path / "run", [step(i, dt=1.0, tps=10.0) for i in (1, 2, 3)])
    err = run_cli(run, "--config", "c", "--explain", "--system", "Aurora", "--gpus", "24",
                  "--nodes", "2").stderr
    for text in ("system Aurora = --system", "gpus 24 = --gpus", "nodes 2 = --nodes"):
        assert text in flat(err)


def test_explain_quiet_hides_notes_but_keeps_report():
    result = run_cli(RUNS / "fsdp_tp-2rank", "--config", "c", "--explain", "-q")
    one_row(result)
    assert "note:" not in result.stderr
    assert "1 hidden by --quiet" in flat(result.stderr)
    assert "gpus 2 = max(" in flat(result.stderr)


def test_explain_after_append(tmp_path):
    out = tmp_path / "results.csv"
    result = run_cli(RUNS / "fsdp_tp-1rank-launch", "--config", "c", "--append", out,
                     "--explain")
    assert result.exit_code == 0 and result.stdout == ""
    assert len(parse_csv(out.read_text())) == 1
    assert "explain:" in flat(result.stderr)


def test_narrow_scale_gets_enough_digits(tmp_path):
    recs = [step(i, dt=1.0, tps=1003.0 + (i % 2) * 0.01) for i in range(1, 8)]
    err = run_cli(write_run(tmp_path / "run", recs), "--config", "c", "--explain").stderr
    assert f"scale {BARS[0]} 1003 .. {BARS[-1]} 1003.01" in flat(err)


# --- --explain in 80 columns ------------------------------------------------------------------


def _lines_of(text: str) -> list[str]:
    return strip_ansi(text).splitlines()


@pytest.mark.parametrize("name", FIXTURE_NAMES)
@pytest.mark.parametrize("args", [[], ["--warmup", "100", "--status", "fail"],
                                  ["--warmup", "3", "--reducer", "mean"]])
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


@pytest.mark.parametrize(("top", "dt_row"), [
    # 6 digits would make the table 77 wide, 81 with its indent: it loses a digit
    (0.00012345, "train/dt           5.0000e-05  5.0000e-05  0.00012345  146.9%    11       0"),
    # 6 digits make it 76 wide, 80 with its indent: it keeps them
    (0.0001234, "train/dt           5.00000e-05  5.00000e-05  0.0001234  146.8%    11       0"),
])
def test_the_reduced_table_fills_80_columns_and_no_more(tmp_path, top, dt_row):
    dts = [5e-5] * 9 + [top] * 2  # median and p10 5e-5, p90 top
    run = write_run(tmp_path / "run", [step(i, dt=dt, tps=100.0, tps_per_gpu=100.0)
                                       for i, dt in enumerate(dts, 1)])
    lines = render(export_run(run, ExportOptions(config="c", warmup=0))).splitlines()
    assert "    " + dt_row in lines
    assert max(map(len, lines)) <= WIDTH

# --- the whole report, word for word --------------------------------------------------------
# Every figure checked by hand or against numpy: fsdp_tp-2rank's 29 used steps give median
# 3930.35, p10 3544.68, p90 4645.22 (numpy.percentile, linear); the built run's attempt #2
# has per-GPU 808, 810, 812 after 3 warmup steps 802, 804, 806: p10 808.4, p90 811.6.

FSDP_2RANK_REPORT = [
    '  files read   metrics-0.jsonl (rank 0)',
    '               1 other rank file not read (ranks log near-identical values)',
    '  provenance   run_info.json (tier 1 of 3, run_info.json)',
    '  placement    system localhost = MACHINE from run_info.json',
    '               gpus 2 = max(WORLD_SIZE_IN_USE 2, world_size 2)',
    '               nodes 1 = NUM_NODES (GPUS_PER_NODE is 0)',
    '  steps        30 steps logged, 1 dropped as warmup (--warmup 1), 29 reduced',
    '               with median',
    '  throughput   train/tps, 30 steps, 1 glyph per step',
    '               scale ▁ 3356.6 .. █ 6861.29',
    '               ▁┊▁▂▂▃▁▁▂▃▂▂▂▂█▅▂▂▂▃▂▄▁▂▂▂▂▄▂▂▃',
    '               1 warmup step dropped, left of ┊: 1558.31 (below the scale, drawn',
    '               clipped)',
    '  reduced (spread = (p90 - p10) / value)',
    '    key                   median        p10        p90  spread  used  warmup',
    '    train/tps            3930.35    3544.68    4645.22   28.0%    29       1',
    '    train/tps_per_gpu    1965.17    1772.34    2322.61   28.0%    29       1',
    '    train/mfu            unknown          -          -       -    29       1',
    '    train/tflops       0.0139093  0.0125444  0.0164392   28.0%    29       1',
    '    train/dt            0.130268   0.110224   0.144442   26.3%    29       1',
    '  row          wall_time_sec=4.034, throughput_tokens_per_sec=3930.349,',
    '               throughput_tokens_per_sec_per_gpu=1965.174, mfu=, tflops=0.014,',
    '               final_loss=7.989204',
    '  notes        1',
    '    note: mfu is 0.0 on every step (ezpz writes 0.0 when it does not know the',
    "          device's peak FLOPS); left empty",
]


GAPPED_RETRY_REPORT = [
    '  files read   metrics-0.jsonl (rank 0)',
    '  provenance   run_info.json (tier 1 of 3, run_info.json)',
    '  placement    system localhost = MACHINE from run_info.json',
    '               gpus 2 = max(WORLD_SIZE_IN_USE 2, world_size 2)',
    '               nodes 1 = NUM_NODES (GPUS_PER_NODE is 0)',
    '  steps        6 steps logged, 3 dropped as warmup (--warmup 3), 3 reduced with',
    '               median',
    '               step numbers 2..12 have gaps (stride 2): 6 of ~12 steps logged',
    '               2 attempts in the records; exported #2',
    '  throughput per GPU no global throughput logged; showing throughput per GPU',
    '               (train/tps_per_gpu)',
    '               train/tps_per_gpu, 6 steps, 1 glyph per step',
    '               scale ▁ 808 .. █ 812',
    '               ▁▁▁┊▁▅█',
    '               3 warmup steps dropped, left of ┊: 802, 804, 806 (below the',
    '               scale, drawn clipped)',
    '  reduced (spread = (p90 - p10) / value)',
    '    key                    median         p10         p90  spread  used  warmup',
    '    train/tps_per_gpu         810       808.4       811.6    0.4%     3       3',
    '    train/mfu          1.0000e-05  8.4000e-06  1.1600e-05   32.0%     3       3',
    '    train/dt                 0.25        0.25        0.25    0.0%     3       3',
    '  row          wall_time_sec=3.000, throughput_tokens_per_sec=1620.000,',
    '               throughput_tokens_per_sec_per_gpu=810.000, mfu=0.0000100,',
    '               tflops=, final_loss=1.000000',
    '  notes        3',
    '    note: exported attempt #2 steps 2..12 from 2026-11-29T22:16:42Z (6 records)',
    '          of 2; left out 10 records of the others',
    "    note: wall_time_sec is estimated for all the steps: the 6 logged steps'",
    '          1.500 s plus 6 steps not logged, each gap at the mean of the logged',
    '          step times that bound it (1 before the first logged step at 0.25 s),',
    '          ~12 steps (logged every 2 steps, steps 2..12); pass --wall-time-sec',
    "          for the job's real time",
    '    note: throughput_tokens_per_sec derived as per-GPU x 2 gpus (no global',
    '          throughput logged)',
]


def _gapped_retry(tmp_path):
    """Per-GPU throughput only, logged every 2nd step, tiny mfu, a retry: warmup 3, last."""
    first = [step(i, dt=0.5, tps_per_gpu=500.0 + i, mfu=1e-5 * i, loss=3.0 - i / 10)
             for i in range(2, 21, 2)]
    again = [step(i, ts=1795990600.0, dt=0.25, tps_per_gpu=800.0 + i, mfu=1e-6 * i, loss=1.0)
             for i in range(2, 13, 2)]
    run = write_run(tmp_path / "run", first + again, world_size="2", WORLD_SIZE_IN_USE="2")
    return run, export_run(run, ExportOptions(config="c", warmup=3, attempt="last"))


def test_explain_report_word_for_word_real_run():
    run = RUNS / "fsdp_tp-2rank"
    first, *rest = render(export_run(run, ExportOptions(config="c"))).splitlines()
    assert first == f"explain: {run}"
    assert rest == FSDP_2RANK_REPORT


def test_explain_report_word_for_word_gapped_retry(tmp_path):
    run, res = _gapped_retry(tmp_path)
    first, *rest = render(res).splitlines()
    assert first == f"explain: {run}"
    assert rest == GAPPED_RETRY_REPORT
    quiet = render(res, quiet=True).splitlines()
    assert quiet[1:] == [*GAPPED_RETRY_REPORT[:-10], "  notes        3 hidden by --quiet"]


# No step at all (a failed run); 600 steps bucketed, 40 warmup steps above the scale, tflops
# all 0.0 (a zero that is a value, unlike mfu's), system from config.json; one step of a
# failed run, warmup kept and its rate not published; no run_info.json, the placement from
# the flags. Long run: steps 41..600 used, median
# 320.5, p10 41 + 0.1 * 559 = 96.9, p90 544.1; buckets of 10 steps, the first 41..50: 45.5.
NO_STEPS_REPORT = [
    '  files read   metrics-0.jsonl (rank 0)',
    '  provenance   run_info.json (tier 1 of 3, run_info.json)',
    '  placement    system localhost = MACHINE from run_info.json',
    '               gpus 1 = max(WORLD_SIZE_IN_USE 1, world_size 1)',
    '               nodes 1 = NUM_NODES (GPUS_PER_NODE is 0)',
    '  steps        no step records',
    '  throughput   no throughput or step-time series logged; nothing to draw',
    '  reduced (spread = (p90 - p10) / value)',
    '    no reduced series (no step records)',
    '  row          wall_time_sec=5.000, throughput_tokens_per_sec=,',
    '               throughput_tokens_per_sec_per_gpu=, mfu=, tflops=, final_loss=',
    '  notes        none',
]


LONG_REPORT = [
    '  files read   metrics-0.jsonl (rank 0)',
    '  provenance   run_info.json (tier 1 of 3, run_info.json: HOSTNAME, NUM_NODES,',
    '               NGPUS, GPUS_PER_NODE); config.json (tier 2 of 3, config.json:',
    '               MACHINE, world_size)',
    '  placement    system Polaris = MACHINE from config.json',
    '               gpus 1 = max(WORLD_SIZE_IN_USE ?, world_size 1)',
    '               nodes 1 = NUM_NODES (GPUS_PER_NODE is 0)',
    '  steps        600 steps logged, 40 dropped as warmup (--warmup 40), 560 reduced',
    '               with median',
    '  throughput   train/tps, 600 steps, 60 glyphs wide, each the mean of ~10 steps',
    '               scale ▁ 45.5 .. █ 595.5',
    '               ████┊▁▁▁▁▂▂▂▂▂▂▂▂▃▃▃▃▃▃▃▃▄▄▄▄▄▄▄▄▅▅▅▅▅▅▅▅▆▆▆▆▆▆▆▆▇▇▇▇▇▇▇▇████',
    '               40 warmup steps dropped, left of ┊: 5000, 5000, 5000, .. (above',
    '               the scale, drawn clipped)',
    '  reduced (spread = (p90 - p10) / value)',
    '    key           median   p10    p90  spread  used  warmup',
    '    train/tps      320.5  96.9  544.1  139.5%   560      40',
    '    train/tflops       0     0      0       -   560      40',
    '    train/dt           1     1      1    0.0%   560      40',
    '  row          wall_time_sec=600.000, throughput_tokens_per_sec=320.500,',
    '               throughput_tokens_per_sec_per_gpu=320.500, mfu=, tflops=0.000,',
    '               final_loss=1.000000',
    '  notes        1',
    '    note: throughput_tokens_per_sec_per_gpu derived as global / 1 gpu (no',
    '          per-GPU throughput logged)',
]


ONE_STEP_REPORT = [
    '  files read   metrics-0.jsonl (rank 0)',
    '  provenance   run_info.json (tier 1 of 3, run_info.json)',
    '  placement    system localhost = MACHINE from run_info.json',
    '               gpus 1 = max(WORLD_SIZE_IN_USE 1, world_size 1)',
    '               nodes 1 = NUM_NODES (GPUS_PER_NODE is 0)',
    '  steps        1 step logged; --warmup 1 would leave none, so all were reduced',
    '  throughput   train/tps, 1 step, 1 glyph per step',
    '               scale ▁ 500 .. █ 500',
    '               ▄',
    '               no warmup step dropped',
    '  reduced (spread = (p90 - p10) / value)',
    '    key        median  p10  p90  spread  used  warmup',
    '    train/tps     500  500  500    0.0%     1    kept',
    '    train/dt        2    2    2    0.0%     1    kept',
    '  row          wall_time_sec=2.000, throughput_tokens_per_sec=,',
    '               throughput_tokens_per_sec_per_gpu=, mfu=, tflops=,',
    '               final_loss=1.000000',
    '  notes        1',
    '    note: throughput_tokens_per_sec left empty: 0 steps after --warmup 1 (1 step',
    "          logged) is not a measurement of the run's rate",
]


BARE_REPORT = [
    '  files read   metrics-0.jsonl (rank 0)',
    '  provenance   none found (no run_info.json, config.json or report ###',
    '               Distributed)',
    '  placement    system X = --system',
    '               gpus 1 = --gpus',
    '               nodes 1 = --nodes',
    '  steps        3 steps logged, 0 dropped as warmup (--warmup 0), 3 reduced with',
    '               median',
    '  throughput   train/tps, 3 steps, 1 glyph per step',
    '               scale ▁ 101 .. █ 103',
    '               ▁▅█',
    '               no warmup step dropped',
    '  reduced (spread = (p90 - p10) / value)',
    '    key        median    p10    p90  spread  used  warmup',
    '    train/tps     102  101.2  102.8    1.6%     3       0',
    '    train/dt        1      1      1    0.0%     3       0',
    '  row          wall_time_sec=3.000, throughput_tokens_per_sec=102.000,',
    '               throughput_tokens_per_sec_per_gpu=102.000, mfu=, tflops=,',
    '               final_loss=',
    '  notes        2',
    '    note: run looks unfinished (no run_info.json and no report:',
    "          History.finalize() did not run); status stays 'pass'; pass --status",
    '          fail if the job failed',
    '    note: throughput_tokens_per_sec_per_gpu derived as global / 1 gpu (no',
    '          per-GPU throughput logged)',
]


def _other_reports(tmp_path):
    nosteps = write_run(tmp_path / "nosteps", [])
    recs = [step(i, dt=1.0, tps=5000.0 if i <= 40 else float(i), tflops=0.0, loss=1.0)
            for i in range(1, 601)]
    long = write_run(tmp_path / "long", recs, world_size=None, WORLD_SIZE_IN_USE=None,
                     MACHINE=None)
    (long / "config.json").write_text(json.dumps({"MACHINE": "Polaris", "world_size": 1}))
    one = write_run(tmp_path / "one", [step(1, dt=2.0, tps=500.0, loss=1.0)])
    bare = tmp_path / "bare"
    write_jsonl(bare / "metrics-0.jsonl", [step(i, dt=1.0, tps=100.0 + i) for i in (1, 2, 3)])
    return [
        (nosteps, ExportOptions(config="c", status="fail", error="OOM", wall_time_sec=5.0,
                                timestamp="2026-01-01T00:00:00Z"), NO_STEPS_REPORT),
        (long, ExportOptions(config="c", warmup=40), LONG_REPORT),
        (one, ExportOptions(config="c", status="fail"), ONE_STEP_REPORT),
        (bare, ExportOptions(config="c", system="X", nodes=1, gpus=1, warmup=0), BARE_REPORT),
    ]


@pytest.mark.parametrize("case", range(4), ids=["no-steps", "long", "one-step", "bare"])
def test_explain_report_word_for_word_other_shapes(tmp_path, case):
    run, opts, want = _other_reports(tmp_path)[case]
    first, *rest = render(export_run(run, opts)).splitlines()
    assert first == f"explain: {run}"
    assert rest == want


@pytest.mark.parametrize(("warm", "where"), [
    (4.0, " (below the scale, drawn clipped)"), (5.0, ""), (7.0, ""), (10.0, ""),
    (11.0, " (above the scale, drawn clipped)"),
])
def test_warmup_outside_the_scale_is_said_so(warm, where):
    t = Trend(series="tps", key="train/tps", steps=3, warmup_steps=1, steps_per_point=1,
              warmup=[warm], used=[5.0, 10.0])
    lines = [plain for plain, _ in _trend_lines(t, Paint(False))]
    assert lines[1:] == ["scale ▁ 5 .. █ 10", sparkline([warm], 5.0, 10.0) + "┊▁█",
                         f"1 warmup step dropped, left of ┊: {number(warm)}{where}"]


def test_table_loses_digits_only_when_it_must(tmp_path):
    # The gapped retry's table: 78 columns with 6 digits, 75 with 5, 72 with 4, 69 with 3.
    _, res = _gapped_retry(tmp_path)
    d = res.details
    shown = [(n, d.series[n]) for n in ("tps_per_gpu", "mfu", "dt")]
    assert _table(d, 78) == _table_lines(shown, "median", 6)
    assert _table(d, 77) == _table_lines(shown, "median", 5)
    assert _table(d, 69) == _table(d, 70) == _table_lines(shown, "median", 3)
    assert _table(d, 60) == _table_lines(shown, "median", 3)  # 3 digits at least, too wide
    assert _table(d, 69)[2] == ("train/mfu          1.00e-05  8.40e-06  1.16e-05   32.0%"
                                "     3       3")


def test_explain_draws_the_step_used_after_a_long_warmup(tmp_path):
    # 198 warmup steps of 200 once took all 60 glyphs: the reduced steps were not drawn and
    # the scale was the warmup's.
    recs = [step(i, dt=1.0, tps=100.0 if i <= 198 else 5000.0) for i in range(1, 201)]
    run = write_run(tmp_path / "run", recs)
    lines = render(export_run(run, ExportOptions(config="c", warmup=198))).splitlines()
    at = lines.index("  throughput   train/tps, 200 steps, 60 glyphs wide, each the mean of ~2 "
                     "steps")
    assert lines[at + 1:at + 5] == [
        "               scale ▁ 5000 .. █ 5000",
        "               " + "▄" * 59 + "┊▄",
        "               198 warmup steps dropped, left of ┊: 100, 100, 100, .. (below the",
        "               scale, drawn clipped)"]


def test_rel_keeps_a_path_outside_the_run():
    assert _rel("/data/run/train/metrics-0.jsonl", "/data/run") == "train/metrics-0.jsonl"
    assert _rel("/elsewhere/metrics-0.jsonl", "/data/run") == "/elsewhere/metrics-0.jsonl"


def _files_read_lines(run: Path, opts: ExportOptions) -> list[str]:
    lines = render(export_run(run, opts)).splitlines()
    return lines[1:lines.index(next(ln for ln in lines if ln.startswith("  provenance")))]


def test_explain_names_the_files_read(tmp_path):
    silent = write_run(tmp_path / "silent", [], metrics_name="metrics-0.jsonl")
    write_jsonl(silent / "metrics-1.jsonl", [step(i, rank=1, dt=0.5, tps=9.0) for i in (1, 2, 3)])
    assert _files_read_lines(silent, ExportOptions(config="c")) == [
        "  files read   metrics-0.jsonl, metrics-1.jsonl (rank 1)"]
    empty = tmp_path / "empty"
    write_run_info(empty)
    assert _files_read_lines(empty, ExportOptions(
        config="c", status="fail", wall_time_sec=1.0, timestamp="2026-01-01T00:00:00Z")) == [
        "  files read   no metrics file"]
    mixed = write_run(tmp_path / "mixed", [step(i, dt=0.5, tps=9.0) for i in (1, 2, 3)]
                      + [step(i, rank=3, dt=0.5, tps=9.0) for i in (1, 2)])
    assert _files_read_lines(mixed, ExportOptions(config="c")) == [
        "  files read   metrics-0.jsonl (rank 0)",
        "               2 records of other ranks skipped"]
    no_rank = [{"timestamp": 1795990000.0 + i, "metrics": {"train/iter": i, "train/dt": 0.5}}
               for i in (1, 2)]
    one_file = write_run(tmp_path / "one", no_rank, metrics_name="metrics.jsonl")
    assert _files_read_lines(one_file, ExportOptions(config="c")) == [
        "  files read   metrics.jsonl"]


@pytest.mark.parametrize(("lo", "hi", "want"), [
    (1.234567, 2.0, "1.23457 .. █ 2"),  # 6 digits tell them apart
    (1.0000011, 1.0000021, "1.000001 .. █ 1.000002"),  # 7 do
    (1.0, 1.0 + 1e-11, "1 .. █ 1.00000000001"),  # 12 do
    (1.0, 1.0 + 1e-12, "1 .. █ 1"),  # more than 12 would: given up
    (1.0, 1.0, "1 .. █ 1"),
])
def test_scale_gets_the_digits_that_tell_its_ends_apart(lo, hi, want):
    assert _scale(lo, hi) == f"{BARS[0]} {want}"


def test_wrap_keeps_long_and_hyphenated_words_whole():
    word = "x" * 90
    assert wrap(f"a {word} b", "  ", "    ") == ["  a", f"    {word}", "    b"]
    lines = wrap("y " * 33 + "--wall-time-sec-given", "", "")
    assert lines == [("y " * 33).rstrip(), "--wall-time-sec-given"]


def test_wrap_at_commas_breaks_after_commas_only():
    assert wrap_at_commas("  h: ", "a,b,c") == ["  h: a,b,c"]
    words = ",".join(["x" * 30] * 4)  # 123 characters
    assert wrap_at_commas("  h: ", words) == [
        "  h: " + ",".join(["x" * 30] * 2) + ",", "     " + ",".join(["x" * 30] * 2)]
    long = "y" * 90
    # A name longer than a line stays whole, beside the label and on a line of its own.
    assert wrap_at_commas("  h: ", f"{long},{long},z") == [
        f"  h: {long},", f"     {long},", "     z"]
    assert wrap_at_commas("", "a") == ["a"]
    exact = "  h: " + "z" * 70 + ",abcd"  # 80 columns: fits
    assert wrap_at_commas("  h: ", exact[5:]) == [exact]
    assert wrap_at_commas("  h: ", exact[5:] + "e") == ["  h: " + "z" * 70 + ",", "     abcde"]


def test_colour_off_when_the_stream_cannot_say():
    closed = io.StringIO()
    closed.close()  # isatty() raises ValueError
    assert use_colour(closed, {}) is False


def test_json_of_a_long_run_near_float_max(tmp_path):
    # 121 steps: trend points are means of ~3 steps, which once overflowed to inf and made
    # json.dumps raise (a traceback instead of a row).
    run = write_run(tmp_path / "run", [step(i, dt=1.0, tps=1.7e308) for i in range(1, 122)])
    result = run_cli(run, "--config", "c", "--format", "json")
    assert result.exit_code == 0, result.output
    (obj,) = _json(result.stdout)
    assert (obj["row"]["throughput_tokens_per_sec"], obj["row"]["steps"]) == ("", "121")
    t = obj["details"]["trend"]
    assert (t["steps_per_point"], t["warmup"], t["used"]) == (3, [1.7e308], [1.7e308] * 59)
    assert result.stderr == "note: tps reduces to a value too large for a float; left empty\n"


def test_json_keeps_non_ascii_text_as_is(tmp_path):
    run = write_run(tmp_path / "run", [step(i, dt=1.0, tps=10.0) for i in (1, 2, 3)])
    out = run_cli(run, "--config", "gpt/bs1", "--system", "Aurora-é", "--format", "json").stdout
    assert '"system": "Aurora-é"' in out and "\\u00e9" not in out


def test_colour_only_when_asked():
    res = export_run(RUNS / "fsdp_tp-2rank", ExportOptions(config="c"))
    coloured, plain = render(res, colour=True), render(res, colour=False)
    assert ANSI in coloured and ANSI not in plain
    assert re.sub(r"\x1b\[[0-9;]*m", "", coloured) == plain


def test_no_ansi_through_cli_even_with_no_color(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    result = run_cli(RUNS / "minimal-1rank", "--config", "c", "--explain")
    assert ANSI not in result.stderr and ANSI not in result.stdout


# --- sparkline / spread units --------------------------------------------------------------


@pytest.mark.parametrize(("points", "lo", "hi", "want"), [
    ([1.0, 2.0, None], 1.0, 2.0, BARS[0] + BARS[-1] + ABSENT),
    ([None, 0.0], 0.0, 1.0, "·▁"),
    ([5.0, 5.0], 5.0, 5.0, BARS[3] * 2),
    ([0.0, 10.0, 20.0], 5.0, 15.0, BARS[0] + BARS[4] + BARS[-1]),  # clipped both ends
    ([], 0.0, 1.0, ""),
])
def test_sparkline(points, lo, hi, want):
    assert sparkline(points, lo, hi) == want


@pytest.mark.parametrize(("value", "p10", "p90", "want"), [
    (100.0, 90.0, 110.0, 0.2), (0.0, 0.0, 0.0, None), (None, None, None, None),
    (None, 90.0, 110.0, None), (100.0, None, 110.0, None), (100.0, 90.0, None, None),
    (-100.0, 90.0, 110.0, 0.2),
])
def test_spread(value, p10, p90, want):
    assert spread(value, p10, p90) == want


# --- --format json -------------------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_json_matches_csv_row(name):
    csv_run = run_cli(RUNS / name, "--config", "agpt/x", "--warmup", "2")
    json_run = run_cli(RUNS / name, "--config", "agpt/x", "--warmup", "2", "--format", "json")
    assert json_run.exit_code == 0, json_run.stderr
    (obj,) = _json(json_run.stdout)
    assert obj["row"] == one_row(csv_run)  # same strings, same columns
    assert list(obj["row"]) == list(parse_csv(csv_run.stdout)[0])  # same order
    d = obj["details"]
    assert d["steps"] == int(obj["row"]["steps"])
    assert d["steps_dropped_warmup"] == 2 and d["steps_used"] == d["steps"] - 2
    assert d["reducer"] == "median"
    assert [f"note: {n}" for n in d["notes"]] == csv_run.stderr.splitlines()
    assert json_run.stderr == csv_run.stderr
    assert d["provenance"]["tiers"] == ["run_info.json"]
    assert all(p.endswith(".jsonl") for p in d["files_read"])


def test_json_values_are_the_row_typed():
    res = run_cli(RUNS / "fsdp_tp-1rank-launch", RUNS / "minimal-1rank", "--config", "c",
                  "--format", "json")
    launch, minimal = _json(res.stdout)
    assert list(launch) == ["row", "values", "details"]
    assert launch["values"] == {
        "timestamp": "2026-11-29T22:19:13Z", "system": "localhost", "config": "c", "nodes": 1,
        "gpus": 1, "status": "pass", "wall_time_sec": 1.148, "throughput_tokens_per_sec": 7443.215,
        "throughput_tokens_per_sec_per_gpu": 7443.215, "mfu": None, "tflops": 0.053,
        "final_loss": 7.871284, "steps": 30, "error": ""}
    assert minimal["values"] == {  # an empty cell is null, never 0
        "timestamp": "2026-11-29T22:21:30Z", "system": "localhost", "config": "c", "nodes": 1,
        "gpus": 1, "status": "pass", "wall_time_sec": 0.027, "throughput_tokens_per_sec": None,
        "throughput_tokens_per_sec_per_gpu": None, "mfu": None, "tflops": 0.022,
        "final_loss": 338.0, "steps": 34, "error": ""}
    # Typed in the JSON text itself: jq compares numbers, not strings ("30" > "4" is false).
    assert '"gpus": 1, "status"' in res.stdout and '"steps": 30, "error"' in res.stdout


def test_json_details_carry_series_and_trend():
    res = run_cli(RUNS / "fsdp_tp-2rank", "--config", "c", "--format", "json")
    (obj,) = _json(res.stdout)
    d = obj["details"]
    tps = d["series"]["tps"]
    assert tps["key"] == "train/tps"
    assert round(tps["value"], 3) == float(obj["row"]["throughput_tokens_per_sec"])
    assert tps["p10"] <= tps["value"] <= tps["p90"]
    assert d["rank_files_not_read"] == 1
    assert d["placement"]["gpus"] == "gpus 2 = max(WORLD_SIZE_IN_USE 2, world_size 2)"
    t = d["trend"]
    assert t["series"] == "tps" and t["warmup_steps"] == 1
    assert len(t["warmup"]) == 1 and len(t["used"]) == 29
    with open(RUNS / "fsdp_tp-2rank" / "metrics-0.jsonl") as f:
        logged = [m["train/tps"] for ln in f if "train/tps" in (m := json.loads(ln)["metrics"])]
    assert [*t["warmup"], *t["used"]] == logged  # 30 steps: unbucketed, exact
    assert d["step_coverage"] is None and d["unfinished"] == []


def test_json_absent_values_are_null(tmp_path):
    recs = [step(i, dt=1.0, tps=float("nan") if i == 3 else 10.0) for i in range(1, 6)]
    run = write_run(tmp_path / "run", recs)
    res = run_cli(run, "--config", "c", "--format", "json")
    (obj,) = _json(res.stdout)
    assert obj["details"]["trend"]["used"] == [10.0, None, 10.0, 10.0]
    assert obj["details"]["series"]["mfu"]["value"] is None
    assert obj["row"]["mfu"] == ""


def test_json_with_append_writes_csv_to_file(tmp_path):
    out = tmp_path / "results.csv"
    res = run_cli(RUNS / "fsdp_tp-1rank-launch", "--config", "c", "--append", out,
                  "--format", "json")
    (obj,) = _json(res.stdout)
    (row,) = parse_csv(out.read_text())
    assert row == obj["row"]


def test_json_quiet(tmp_path):
    res = run_cli(RUNS / "minimal-1rank", "--config", "c", "--format", "json", "-q")
    (obj,) = _json(res.stdout)
    assert res.stderr == ""
    assert obj["details"]["notes"]  # still in the data: -q only silences stderr


def test_bad_format_is_one_error_line():
    res = run_cli(RUNS / "minimal-1rank", "--config", "c", "--format", "xml")
    assert res.exit_code == 2
    assert res.stderr.startswith("error: ") and len(res.stderr.splitlines()) == 1


# --- a failed run with no step ---------------------------------------------------------------


def test_failed_run_without_steps_explains_and_serialises(tmp_path):
    run = write_run(tmp_path / "run", [])
    args = ["--config", "c", "--status", "fail", "--error", "OOM", "--wall-time-sec", "5",
            "--timestamp", "2026-01-01T00:00:00Z"]
    explained = run_cli(run, *args, "--explain")
    assert one_row(explained)["status"] == "fail"
    assert "no step records" in flat(explained.stderr)
    assert "nothing to draw" in flat(explained.stderr)
    (obj,) = _json(run_cli(run, *args, "--format", "json").stdout)
    d = obj["details"]
    assert d["files_read"] == [str(run / "metrics-0.jsonl")]  # read, and empty
    assert (d["steps"], d["trend"], d["series"]) == (0, None, {})
