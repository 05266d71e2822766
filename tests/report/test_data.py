"""The report's data (report/data.py): reading results files as ``check`` does, medians,
efficiency, flags, and the JSON the other formats are drawn from."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from helpers import (
    CSV_FIELD_LIMIT,
    FIXTURE_NAMES,
    RUNS,
    run_cli,
    run_report,
)
from sweeps import (
    BAD_LINES,
    CFG,
    ZERO_MFU,
    Sweep,
    _parse_text,
    _replaced_after_reading,
    _report_of,
    _shown,
    _without_sources,
    scaling_sweep,
)

from ezpz_amsc.report.text import render_text
from ezpz_amsc.results.schema import HEADER, MAX_COUNT


def test_synthetic_sweep_numbers_and_flags_as_data(tmp_path):
    rep = _report_of(scaling_sweep().write(tmp_path / "sweep.csv"))
    assert rep["rows"] == {"read": 26, "measured": 25, "without_throughput": 0, "failed": 1,
                           "not_used": 0}
    aurora, perlmutter, sunspot = rep["groups"]
    assert (aurora["config"], aurora["system"]) == (CFG, "aurora")
    assert aurora["baseline"] == {"nodes": 1, "gpus": 12}
    eight = aurora["points"][3]
    assert eight == {
        "nodes": 8, "gpus": 96, "repeats": 1, "tokens_per_sec": 1152000.0,
        "tokens_per_sec_per_gpu": 12000.0, "efficiency": 1.2, "mfu_pct": 48.0,
        "mfu_repeats": 1, "spread_pct": None, "tokens_per_sec_min": 1152000.0,
        "tokens_per_sec_max": 1152000.0, "tokens_per_sec_per_gpu_min": 12000.0,
        "tokens_per_sec_per_gpu_max": 12000.0, "flagged": True,
        "sources": [f"{tmp_path}/sweep.csv:10"]}
    thirty_two = aurora["points"][5]  # repeats 9000 and 10500 tokens/s/gpu
    assert (thirty_two["tokens_per_sec_per_gpu_min"], thirty_two["tokens_per_sec_per_gpu_max"],
            thirty_two["tokens_per_sec_min"]) == (9000.0, 10500.0, 3456000.0)
    assert [(f["kind"], f["nodes"], f["gpus"]) for f in aurora["flags"]] == [
        ("superlinear", 8, 96), ("spread", 32, 384), ("low_efficiency", 64, 768)]
    assert [p["efficiency"] for p in perlmutter["points"]] == [
        1.0, 0.985, 0.973, 0.955, 0.935, 0.896, 0.846]
    assert [p["spread_pct"] for p in perlmutter["points"]] == [1.0, None, 0.5, None, None,
                                                               None, None]
    assert perlmutter["flags"] == []
    assert [f["kind"] for f in sunspot["flags"]] == ["single_node_count"]
    (cross,) = rep["cross_machine"]
    assert cross["reference"] == "aurora" and cross["systems"] == ["aurora", "perlmutter"]
    assert [(r["nodes"], r["system"], r["vs_reference"]) for r in cross["rows"][-2:]] == [
        (64, "aurora", 1.0), (64, "perlmutter", 1.4)]
    (failed,) = rep["failed"]
    assert failed == {"source": f"{tmp_path}/sweep.csv:26", "config": CFG,
                      "system": "perlmutter", "nodes": 32, "gpus": 128,
                      "timestamp": "2026-08-11T00:00:24Z", "error": "NCCL timeout at step 3"}


def test_json_is_the_text_report_as_data(tmp_path):
    p = scaling_sweep().write(tmp_path / "sweep.csv", extra_lines=("not,a,row",))
    text, data = run_report(p), run_report(p, "--format", "json")
    assert text.exit_code == data.exit_code == 0
    assert text.stderr == data.stderr == f"note: {p}:28: 3 cells, header has 14\n"
    rep = json.loads(data.stdout)
    assert rep["problems"] == [f"{p}:28: 3 cells, header has 14"]
    back = _parse_text(text.stdout)
    assert list(back["groups"]) == [f"{g['config']} on {g['system']}" for g in rep["groups"]]
    for g in rep["groups"]:
        shown = back["groups"][f"{g['config']} on {g['system']}"]
        assert shown["points"] == [
            (p["nodes"], p["gpus"], p["repeats"], _shown(p["tokens_per_sec"]),
             _shown(p["tokens_per_sec_per_gpu"]), p["efficiency"], p["mfu_pct"],
             p["spread_pct"], p["flagged"]) for p in g["points"]]
        assert len(shown["flags"]) == len(g["flags"])
        for flag, line in zip(g["flags"], shown["flags"], strict=True):
            assert line.endswith(flag["reason"])
            assert flag["nodes"] is None or line.startswith(f"{flag['nodes']} node")
    assert back["cross"] == [
        (r["nodes"], r["system"], r["gpus"], _shown(r["tokens_per_sec"]),
         _shown(r["tokens_per_sec_per_gpu"]), r["efficiency"], r["vs_reference"], r["flagged"])
        for c in rep["cross_machine"] for r in c["rows"]]
    assert len(back["cross"]) == 14
    for f in rep["failed"]:
        assert f["source"] in text.stdout and f["error"] in text.stdout


def test_json_has_no_nan_and_round_trips(tmp_path):
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    out = run_report(p, "--format", "json").stdout

    def no_constant(name):
        raise AssertionError(name)

    assert json.loads(out, parse_constant=no_constant) == _report_of(p)


@pytest.mark.parametrize("tpg, kind, eff", [
    (10500, None, 1.05), (10510, "superlinear", 1.051),
    (7000, None, 0.7), (6990, "low_efficiency", 0.699),
])
def test_efficiency_thresholds(tmp_path, tpg, kind, eff):
    p = Sweep().add("a", 1, 4, 10000).add("a", 2, 8, tpg).write(tmp_path / "s.csv")
    (g,) = _report_of(p)["groups"]
    assert g["points"][1]["efficiency"] == eff
    assert [f["kind"] for f in g["flags"]] == ([kind] if kind else [])
    assert g["points"][1]["flagged"] is (kind is not None)
    assert g["points"][0]["flagged"] is False


@pytest.mark.parametrize("rates, spread, flagged", [
    ([1000, 1100], 9.5, False),       # 100 / 1050
    ([950, 1050], 10.0, False),       # exactly 10 %: not above
    ([1000, 1106], 10.1, True),       # 106 / 1053
    ([1000, 1000, 1300], 30.0, True),  # the median, not the mean: 300 / 1000
])
def test_spread_over_repeats(tmp_path, rates, spread, flagged):
    s = Sweep().add("a", 2, 8, 1000)
    for r in rates:
        s.add("a", 1, 4, r)
    (g,) = _report_of(s.write(tmp_path / "s.csv"))["groups"]
    assert g["points"][0]["spread_pct"] == spread
    assert [f["kind"] for f in g["flags"]] == (["spread"] if flagged else [])


def test_efficiency_is_against_the_smallest_node_count_not_the_first_row(tmp_path):
    p = (Sweep().add("a", 4, 16, 900).add("a", 2, 8, 1000).add("a", 8, 32, 800)
         .write(tmp_path / "s.csv"))
    (g,) = _report_of(p)["groups"]
    assert g["baseline"] == {"nodes": 2, "gpus": 8}
    assert [(p["nodes"], p["efficiency"]) for p in g["points"]] == [(2, 1.0), (4, 0.9),
                                                                   (8, 0.8)]


def test_medians_over_repeats_not_means(tmp_path):
    s = Sweep()
    for tpg, mfu in ((1000, 30.0), (1010, 31.0), (2000, 50.0)):
        s.add("a", 1, 4, tpg, mfu=mfu)
    (g,) = _report_of(s.write(tmp_path / "s.csv"))["groups"]
    (pt,) = g["points"]
    assert (pt["tokens_per_sec"], pt["tokens_per_sec_per_gpu"], pt["mfu_pct"]) == (
        4040.0, 1010.0, 31.0)
    assert pt["repeats"] == 3 and pt["spread_pct"] == 99.0  # (8000 - 4000) / 4040


def test_gpus_that_do_not_match_the_throughput_are_flagged(tmp_path):
    p = (Sweep().add("a", 1, 4, 1000).add("a", 2, 8, 1000, tps=8160)  # 2 % off: no flag
         .add("a", 4, 16, 1000, tps=8000).write(tmp_path / "s.csv"))   # per-gpu x 16 = 2x
    (g,) = _report_of(p)["groups"]
    (flag,) = g["flags"]
    assert flag["kind"] == "gpus_mismatch" and (flag["nodes"], flag["gpus"]) == (4, 16)
    assert flag["reason"] == (f"{p}:4: tokens/s/gpu x gpus is 2.00x tokens/s: gpus or a "
                              "throughput is wrong")


def test_several_gpus_counts_at_one_node_count(tmp_path):
    p = (Sweep().add("a", 1, 6, 1000).add("a", 1, 12, 900).add("a", 2, 24, 880)
         .write(tmp_path / "s.csv"))
    (g,) = _report_of(p)["groups"]
    assert [(p["nodes"], p["gpus"], p["efficiency"]) for p in g["points"]] == [
        (1, 6, 1.0), (1, 12, 0.9), (2, 24, 0.88)]
    assert [(f["kind"], f["nodes"]) for f in g["flags"]] == [("mixed_gpus", 1)]
    assert g["flags"][0]["reason"] == "recorded with 2 different gpus counts (6, 12): check gpus"
    assert "\n! 1 node: recorded with 2 different gpus counts (6, 12): check gpus\n" in (
        render_text(_report_of(p)))
    assert [p["flagged"] for p in g["points"]] == [True, True, False]


def test_mfu_from_some_repeats_only(tmp_path):
    p = (Sweep().add("a", 1, 4, 1000, mfu=40.0).add("a", 1, 4, 1000).add("a", 1, 4, 1000,
                                                                           mfu=42.0)
         .add("a", 2, 8, 1000).write(tmp_path / "s.csv"))
    (g,) = _report_of(p)["groups"]
    one, two = g["points"]
    assert (one["mfu_pct"], one["mfu_repeats"], two["mfu_pct"]) == (41.0, 2, None)
    assert [f["reason"] for f in g["flags"]] == [
        "mfu logged by 2 of 3 repeats; its median is over those only"]


def test_zero_mfu_is_unknown_and_flagged(tmp_path):
    """ezpz's built-in exporter writes mfu 0.0 for "unknown": never a median of 0.0."""
    p = (Sweep().add("a", 1, 4, 1000, mfu=0.0).add("a", 1, 4, 1000, mfu=40.0)
         .add("a", 2, 8, 900, mfu=0.0).write(tmp_path / "s.csv"))
    rep = _report_of(p)
    (g,) = rep["groups"]
    one, two = g["points"]
    assert (one["mfu_pct"], one["mfu_repeats"], two["mfu_pct"], two["mfu_repeats"]) == (
        40.0, 1, None, 0)
    assert rep["rows"]["measured"] == 3  # read, with the mfu unknown
    assert [(f["kind"], f["nodes"], f["reason"]) for f in g["flags"]] == [
        ("zero_mfu", None, "mfu 0.0 in 2 rows, read as unknown (ezpz writes 0.0 when it does "
                           "not know the device's peak FLOPS): empty those cells"),
        ("partial_mfu", 1, "mfu logged by 1 of 2 repeats; its median is over those only")]
    assert rep["problems"] == [f"{p}:2: {ZERO_MFU}", f"{p}:4: {ZERO_MFU}"]
    text = render_text(rep)
    assert text.split("\n\n")[1] == (
        "agpt-2b/bs1/seq2048/tp1 on a\n"
        "  nodes  gpus  repeats  tokens/s  tokens/s/gpu    eff  mfu %  spread\n"
        "!     1     4        2   4,000.0       1,000.0  1.000   40.0    0.0%\n"
        "      2     8        1   7,200.0         900.0  0.900      -       -\n"
        "! mfu 0.0 in 2 rows, read as unknown (ezpz writes 0.0 when it does not know the\n"
        "!     device's peak FLOPS): empty those cells\n"
        "! 1 node: mfu logged by 1 of 2 repeats; its median is over those only\n")
    result = run_report(p)
    assert result.stderr.splitlines() == [f"note: {p}:2: {ZERO_MFU}", f"note: {p}:4: {ZERO_MFU}"]


def test_systems_differing_in_case_are_one_system(tmp_path):
    """A hand-made row with --system aurora beside exported Aurora rows: one machine."""
    p = (Sweep().add("Aurora", 1, 12, 1000).add("Aurora", 2, 24, 990).add("aurora", 4, 48, 980)
         .add("AURORA", 4, 48, None, status="fail", error="OOM").add("perlmutter", 4, 16, 2000)
         .write(tmp_path / "s.csv"))
    rep = _report_of(p)
    assert [(g["system"], [pt["nodes"] for pt in g["points"]]) for g in rep["groups"]] == [
        ("Aurora", [1, 2, 4]), ("perlmutter", [4])]
    assert rep["merged_systems"] == [
        {"system": "Aurora", "spellings": {"Aurora": 2, "AURORA": 1, "aurora": 1}}]
    assert [f["system"] for f in rep["failed"]] == ["Aurora"]
    (cross,) = rep["cross_machine"]
    assert [(r["nodes"], r["system"]) for r in cross["rows"]] == [(4, "Aurora"), (4, "perlmutter")]
    assert ("\n  one system named in different cases: Aurora (2 rows), AURORA (1 row), aurora\n"
            "      (1 row); shown as Aurora\n\nagpt-2b/bs1/seq2048/tp1 on Aurora\n"
            ) in render_text(rep)


def test_a_tie_between_spellings_is_named_by_the_first_sorted(tmp_path):
    p = Sweep().add("sunspot", 1, 12, 1000).add("SunSpot", 2, 24, 990).write(tmp_path / "s.csv")
    rep = _report_of(p)
    assert [g["system"] for g in rep["groups"]] == ["SunSpot"]
    assert rep["merged_systems"] == [{"system": "SunSpot",
                                      "spellings": {"SunSpot": 1, "sunspot": 1}}]
    assert _report_of(Sweep().add("a", 1, 4, 1000).write(tmp_path / "one.csv"))[
        "merged_systems"] == []


def test_runs_that_differ_only_by_config_are_two_runs(tmp_path):
    a = Sweep().add("Aurora", 1, 12, 1000, config="x").write(tmp_path / "a.csv")
    b = Sweep().add("aurora", 1, 12, 900, config="y").write(tmp_path / "b.csv")
    rep = _report_of(a, b)
    assert rep["problems"] == [] and rep["rows"]["measured"] == 2


def test_the_same_run_in_another_case_is_counted_once(tmp_path):
    a = Sweep().add("Aurora", 1, 12, 1000).write(tmp_path / "a.csv")
    b = Sweep().add("aurora", 1, 12, 1000).write(tmp_path / "b.csv")
    rep = _report_of(a, b)
    assert rep["problems"] == [f"{b}:2: same run as {a}:2"]
    assert rep["groups"][0]["points"][0]["repeats"] == 1


def test_one_file_with_a_system_spelled_two_ways_counts_the_run_once(tmp_path):
    s = Sweep().add("Aurora", 1, 12, 1000).add("Aurora", 2, 24, 990)
    s.rows.append([s.rows[0][0], "AURORA", *s.rows[0][2:]])  # line 2's run, in capitals
    p = s.add("aurora", 4, 48, 980).write(tmp_path / "one.csv")
    rep = _report_of(p)
    assert rep["problems"] == [f"{p}:4: same run as {p}:2"]
    assert rep["rows"] == {"read": 4, "measured": 3, "without_throughput": 0, "failed": 0,
                           "not_used": 1}
    assert [pt["sources"] for pt in rep["groups"][0]["points"]] == [
        [f"{p}:2"], [f"{p}:3"], [f"{p}:5"]]


def test_one_file_with_one_spelling_a_system_is_read_without_an_index_of_runs(tmp_path,
                                                                               monkeypatch):
    from ezpz_amsc.report import data

    p = Sweep().add("Aurora", 1, 12, 1000).add("Aurora", 2, 24, 990).write(tmp_path / "a.csv")
    expected = _report_of(p)
    monkeypatch.setattr(data, "SeenRuns", None)  # any index of the report's own would fail
    assert _report_of(p) == expected
    assert expected["rows"]["measured"] == 2 and expected["problems"] == []


def test_malformed_lines_are_reported_and_skipped_not_fatal(tmp_path):
    clean = _report_of(scaling_sweep().write(tmp_path / "clean.csv"))
    dirty = scaling_sweep()
    dirty.rows[5:5] = [line for line, _ in BAD_LINES]  # in the middle: reading goes on after
    p = dirty.write(tmp_path / "dirty.csv")
    r = run_report(p)
    assert r.exit_code == 0
    assert r.stderr.splitlines() == [f"note: {p}:{7 + i}: {what}"
                                     for i, (_, what) in enumerate(BAD_LINES)]
    assert r.stdout.splitlines()[:2] == [
        "scaling report: 1 file, 33 rows: 25 measured, 1 failed, 7 not used (7 problems:",
        "    notes on stderr)"]
    rep = _report_of(p)
    assert _without_sources(rep) == _without_sources(clean)  # the same numbers and flags
    assert rep["rows"]["not_used"] == 7 and len(rep["problems"]) == 7


def test_check_reads_on_after_a_line_that_is_not_utf8(tmp_path):
    p = Sweep().add("a", 1, 4, 100).raw("x\udcfe,y").add("a", 2, 8, 100).raw("z").write(
        tmp_path / "s.csv")
    r = run_cli("--check", p)
    problems = [ln for ln in r.stderr.splitlines() if not ln.startswith("note: ")]  # sharing notes
    assert problems[:2] == [f"{p}:3: not UTF-8 text", f"{p}:5: 1 cells, header has 14"]


def test_header_in_another_order_is_read_by_name(tmp_path):
    order = list(reversed(HEADER))
    p = tmp_path / "s.csv"
    with open(p, "w", newline="") as f:
        w = csv.DictWriter(f, order, lineterminator="\n")
        w.writeheader()
        for row in scaling_sweep().rows:
            w.writerow(dict(zip(HEADER, row, strict=True)))
    r = run_report(p)
    assert r.exit_code == 0
    assert r.stderr == (f"note: {p}:1: header differs from this tool's (the same columns in "
                        "another order)\n")
    assert _without_sources(_report_of(p)) == _without_sources(
        _report_of(scaling_sweep().write(tmp_path / "clean.csv")))


def test_several_files_one_report_and_a_run_in_two_files_counts_once(tmp_path):
    s = scaling_sweep()
    a = Sweep()
    a.rows = s.rows[:12]
    b = Sweep()
    b.rows = s.rows[10:]  # rows 10 and 11 are in both files
    pa, pb = a.write(tmp_path / "a.csv"), b.write(tmp_path / "b.csv")
    r = run_report(pa, pb)
    assert r.exit_code == 0
    assert r.stderr.splitlines() == [f"note: {pb}:2: same run as {pa}:12",
                                     f"note: {pb}:3: same run as {pa}:13"]
    assert _without_sources(_report_of(pa, pb)) == _without_sources(
        _report_of(s.write(tmp_path / "all.csv")))
    assert run_report(pa, pa).stderr.count("same run as") == 12


def test_pass_rows_without_throughput_are_listed_apart(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = (Sweep().add("a", 1, 4, 100).add("a", 2, 8, None).add("a", 4, 16, 90, tps=None)
         .write(Path("s.csv")))
    rep = _report_of(p)
    assert [p["nodes"] for p in rep["groups"][0]["points"]] == [1]
    assert [(w["nodes"], w["missing"]) for w in rep["without_throughput"]] == [
        (2, ["throughput_tokens_per_sec", "throughput_tokens_per_sec_per_gpu"]),
        (4, ["throughput_tokens_per_sec"])]
    out = run_report(p).stdout
    assert "pass rows without throughput (2, not in the tables)\n" in out
    assert (f"  {p}:3  {CFG} on a, 2 nodes, 8 gpus: tokens/s and\n"
            "      tokens/s/gpu empty\n") in out
    assert f"  {p}:4  {CFG} on a, 4 nodes, 16 gpus: tokens/s empty\n" in out
    assert "1 measured, 2 without throughput\n" in out


def test_no_usable_row(tmp_path):
    p = Sweep().add("a", 1, 4, None, status="fail").write(tmp_path / "s.csv")
    r = run_report(p)
    assert r.exit_code == 0
    assert "\nno pass row with throughput: nothing to scale\n" in r.stdout
    assert "failed runs (1, not in the tables)" in r.stdout


def test_cross_machine_three_systems_and_a_missing_reference(tmp_path):
    p = (Sweep().add("aurora", 1, 12, 100).add("polaris", 1, 4, 300).add("sunspot", 1, 12, 90)
         .add("polaris", 2, 8, 290).add("sunspot", 2, 24, 80).add("aurora", 4, 48, 95)
         .write(tmp_path / "s.csv"))
    (c,) = _report_of(p)["cross_machine"]
    assert c["reference"] == "aurora"
    assert [(r["nodes"], r["system"], r["vs_reference"]) for r in c["rows"]] == [
        (1, "aurora", 1.0), (1, "polaris", 1.0), (1, "sunspot", 0.9),
        (2, "polaris", None), (2, "sunspot", None)]  # no aurora run at 2 nodes
    out = run_report(p).stdout
    assert "\n      2  polaris     8   2,320.0         290.0  0.967      -\n" in out


def test_cross_machine_without_a_shared_node_count(tmp_path):
    p = Sweep().add("a", 1, 4, 100).add("b", 2, 8, 100).write(tmp_path / "s.csv")
    (c,) = _report_of(p)["cross_machine"]
    assert c["rows"] == []
    assert "  no node count was run on more than one system\n" in run_report(p).stdout


def test_one_system_per_config_has_no_cross_machine_section(tmp_path):
    p = Sweep().add("a", 1, 4, 100).add("b", 1, 4, 100, config="other").write(tmp_path / "s.csv")
    assert _report_of(p)["cross_machine"] == []
    assert "cross-machine" not in run_report(p).stdout


def test_report_on_rows_exported_from_the_shipped_runs(tmp_path):
    out = tmp_path / "runs.csv"
    for name in FIXTURE_NAMES:
        assert run_cli(RUNS / name, "--config", "fsdp_tp/debug", "--append", out).exit_code == 0
    r = run_report(out)
    assert r.exit_code == 0 and r.stderr == ""
    rep = _report_of(out)
    assert rep["rows"] == {"read": 5, "measured": 3, "without_throughput": 2, "failed": 0,
                           "not_used": 0}
    (g,) = rep["groups"]
    # fsdp_tp-1rank-launch: 1 gpu; fsdp_tp-2rank and -torchrun: 2 gpus, medians of the two.
    assert [(p["nodes"], p["gpus"], p["repeats"], p["tokens_per_sec"],
             p["tokens_per_sec_per_gpu"], p["efficiency"], p["mfu_pct"], p["spread_pct"])
            for p in g["points"]] == [(1, 1, 1, 7443.215, 7443.215, 1.0, None, None),
                                      (1, 2, 2, 4042.091, 2021.045, 0.272, None, 5.5)]
    assert [f["kind"] for f in g["flags"]] == ["single_node_count", "mixed_gpus",
                                               "low_efficiency"]
    assert [w["source"] for w in rep["without_throughput"]] == [f"{out}:2", f"{out}:6"]
    assert {w["gpus"] for w in rep["without_throughput"]} == {1}


def test_smallest_and_largest_rates(tmp_path):
    p = (Sweep().add("a", 1, 1, 0.001).add("a", 2, 2, 0.002)
         .add("b", 1, 1_000_000, 1234567.891).write(tmp_path / "s.csv"))
    rep = _report_of(p)
    assert rep["problems"] == []
    small, big = rep["groups"]
    assert [(p["tokens_per_sec_per_gpu"], p["efficiency"]) for p in small["points"]] == [
        (0.001, 1.0), (0.002, 2.0)]
    assert big["points"][0]["tokens_per_sec"] == 1234567891000.0  # the JSON keeps it whole
    text = render_text(rep)
    assert "\n      1     1        1     0.001         0.001  1.000      -       -\n" in text
    # too wide for its column: fewer digits, never a cut-off number
    assert "\n      1  1000000        1  1.23457e+12   1,234,567.9  1.000      -       -\n" in text


def test_rows_not_used_name_the_cell_that_is_out_of_range(tmp_path):
    lines = [  # (line, note)
        ("2026-08-11T09:00:00Z,aurora,c,1,2000000,pass,1,1,1,,,,,",
         "gpus 2000000 is more than 1,000,000; row not used"),
        ("2026-08-11T09:00:01Z,aurora,c,1,12,pass,1,5.000,0.000,,,,,",
         "throughput_tokens_per_sec_per_gpu '0.000' is below 0.001 (the smallest rate a row "
         "holds at 3 decimals); row not used"),
        ("2026-08-11T09:00:02Z,aurora,c,1,12,pass,1,0.001,0.000,,,,,",  # tps at the bound
         "throughput_tokens_per_sec_per_gpu '0.000' is below 0.001 (the smallest rate a row "
         "holds at 3 decimals); row not used"),
        ("2026-08-11T09:00:03Z,aurora,c,1,12,pass,1,0.001,0.001,,,,,", None),  # both at it
    ]
    s = Sweep()
    for line, _ in lines:
        s.raw(line)
    p = s.write(tmp_path / "s.csv")
    r = run_report(p, "--format", "json")
    assert r.exit_code == 0
    assert r.stderr.splitlines() == [f"note: {p}:{2 + i}: {note}"
                                     for i, (_, note) in enumerate(lines) if note]
    rep = json.loads(r.stdout)
    assert rep["rows"] == {"read": 4, "measured": 1, "without_throughput": 0, "failed": 0,
                           "not_used": 3}
    assert [(pt["tokens_per_sec"], pt["tokens_per_sec_per_gpu"])
            for pt in rep["groups"][0]["points"]] == [(0.001, 0.001)]


def test_a_results_file_without_the_optional_columns_is_reported(tmp_path, monkeypatch):
    # An older header: no mfu and no error column. The report reads it as it is.
    monkeypatch.chdir(tmp_path)  # short paths: the text report wraps at 80 columns
    header = [c for c in HEADER if c not in ("mfu", "error")]
    p = Path("old.csv")
    p.write_text(",".join(header) + "\n"
                 "2026-08-11T09:00:00Z,aurora,c,1,12,pass,1,1200.000,100.000,,,\n"
                 "2026-08-11T09:00:01Z,aurora,c,2,24,fail,1,,,,,\n")
    r = run_report(p, "--format", "json")
    assert r.exit_code == 0
    assert r.stderr == f"note: {p}:1: header differs from this tool's (lacks mfu, error)\n"
    rep = json.loads(r.stdout)
    (point,) = rep["groups"][0]["points"]
    assert (point["tokens_per_sec"], point["mfu_pct"], point["mfu_repeats"]) == (1200.0, None, 0)
    assert [(f["source"], f["error"]) for f in rep["failed"]] == [(f"{p}:3", "")]
    text = run_report(p).stdout
    assert text.endswith("\n\nfailed runs (1, not in the tables)\n"
                         "  old.csv:3  c on aurora, 2 nodes, 24 gpus, 2026-08-11T09:00:01Z\n")


def test_per_gpu_median_is_rounded_to_the_rows_decimals(tmp_path):
    p = Sweep().add("a", 1, 1, 2.000).add("a", 1, 1, 2.001).add("a", 2, 2, 2.0).write(
        tmp_path / "s.csv")
    (g,) = _report_of(p)["groups"]
    one = g["points"][0]
    assert (one["tokens_per_sec"], one["tokens_per_sec_per_gpu"]) == (2.0, 2.0)  # 2.0005
    assert g["points"][1]["efficiency"] == 1.0


def test_points_are_ordered_by_nodes_then_gpus_and_the_baseline_is_the_first(tmp_path):
    p = (Sweep().add("a", 2, 4, 100).add("a", 1, 8, 100).add("a", 1, 4, 100)
         .write(tmp_path / "s.csv"))
    (g,) = _report_of(p)["groups"]
    assert [(pt["nodes"], pt["gpus"]) for pt in g["points"]] == [(1, 4), (1, 8), (2, 4)]
    assert g["baseline"] == {"nodes": 1, "gpus": 4}
    p = Sweep().add("b", 2, 4, 50).add("b", 1, 8, 100).write(tmp_path / "t.csv")
    (g,) = _report_of(p)["groups"]
    assert g["baseline"] == {"nodes": 1, "gpus": 8}  # fewer nodes, though more gpus
    assert [pt["efficiency"] for pt in g["points"]] == [1.0, 0.5]


def test_mfu_from_one_repeat_of_three_is_flagged(tmp_path):
    p = (Sweep().add("a", 1, 4, 100, mfu=40.0).add("a", 1, 4, 100).add("a", 1, 4, 100)
         .add("a", 2, 8, 100, mfu=38.0).write(tmp_path / "s.csv"))
    (g,) = _report_of(p)["groups"]
    one, two = g["points"]
    assert (one["mfu_pct"], one["mfu_repeats"], one["repeats"]) == (40.0, 1, 3)
    assert (two["mfu_pct"], two["mfu_repeats"], two["repeats"]) == (38.0, 1, 1)
    assert [f for f in g["flags"] if f["kind"] == "partial_mfu"] == [
        {"kind": "partial_mfu", "nodes": 1, "gpus": 4,
         "reason": "mfu logged by 1 of 3 repeats; its median is over those only"}]


@pytest.mark.parametrize("tps_per_gpu,flagged", [
    (1025.1, "1.03x"),  # 2.51 % over: 1.03 to two decimals, flagged
    (1020.0, None),  # 2 % is not over 2 %
    (980.0, None),
    (970.0, "0.97x"),
])
def test_gpus_mismatch_is_judged_on_the_ratio_shown(tmp_path, tps_per_gpu, flagged):
    p = Sweep().add("a", 1, 1, tps_per_gpu, tps=1000.0).write(tmp_path / "s.csv")
    (g,) = _report_of(p)["groups"]
    got = [f["reason"] for f in g["flags"] if f["kind"] == "gpus_mismatch"]
    assert got == ([f"{p}:2: tokens/s/gpu x gpus is {flagged} tokens/s: gpus or a throughput "
                    "is wrong"] if flagged else [])
    assert g["points"][0]["flagged"] is bool(flagged)


def test_json_is_indented_by_two_keeps_non_ascii_and_refuses_nan():
    from ezpz_amsc.cli.output import json_text

    assert json_text({"config": "größe", "n": [1]}, indent=2) == (
        '{\n  "config": "größe",\n  "n": [\n    1\n  ]\n}')
    assert json_text({"config": "größe", "n": [1]}) == '{"config": "größe", "n": [1]}'
    with pytest.raises(ValueError):
        json_text({"x": float("nan")})


def test_a_points_later_rows_are_judged_as_its_first(tmp_path):
    # After a point's first measured row, rows of the same cells are filed by a shorter way
    # (report/data.py, _Reading.take): each kind of row must still go where the first would.
    s = (Sweep().add("aurora", 2, 8, 1000.0, mfu=40.0)        # line 2: measured
         .add("aurora", 2, 8, 1000.0, tps=None)                # 3: no tokens/s
         .add("aurora", 2, 8, 0.0, tps=5.0)                    # 4: tokens/s/gpu below 0.001
         .add("aurora", 2, 8, 5.0, tps=0.0)                    # 5: tokens/s below 0.001
         .add("aurora", 2, 8, 1000.0, status="fail", error="hang")  # 6: failed, with rates
         .add("aurora", 2, 8, 1100.0, mfu=0.0)                 # 7: measured, mfu unknown
         .add("aurora", 2, 8, 1200.0)                          # 8: measured, no mfu
         .add("aurora", 2, 8, 1000.0, tps=8800.0, mfu=30.0)    # 9: measured, gpus 1.10x off
         .add("aurora", 2, 8, 0.001, tps=0.008)                # 10: at the bound: measured
         .add("Aurora", 2, 8, 900.0, mfu=50.0))                # 11: another spelling
    p = s.write(tmp_path / "s.csv")
    r = run_report(p, "--format", "json")
    assert r.exit_code == 0
    below = "is below 0.001 (the smallest rate a row holds at 3 decimals); row not used"
    assert r.stderr.splitlines() == [
        f"note: {p}:4: throughput_tokens_per_sec_per_gpu '0.000' {below}",
        f"note: {p}:5: throughput_tokens_per_sec '0.000' {below}",
        f"note: {p}:7: mfu '0.000' is zero, which is not a measurement (ezpz writes 0.0 when "
        "it does not know the device's peak FLOPS, e.g. on CPU); empty the cell (not measured)"]
    rep = json.loads(r.stdout)
    assert rep["rows"] == {"read": 10, "measured": 6, "without_throughput": 1, "failed": 1,
                           "not_used": 2}
    assert [(w["source"], w["missing"]) for w in rep["without_throughput"]] == [
        (f"{p}:3", ["throughput_tokens_per_sec"])]
    assert [(f["source"], f["error"], f["system"]) for f in rep["failed"]] == [
        (f"{p}:6", "hang", "aurora")]
    assert rep["merged_systems"] == [{"system": "aurora", "spellings": {"aurora": 9, "Aurora": 1}}]
    (g,) = rep["groups"]
    (pt,) = g["points"]
    assert pt["sources"] == [f"{p}:{n}" for n in (2, 7, 8, 9, 10, 11)]
    assert (pt["repeats"], pt["mfu_repeats"], pt["mfu_pct"]) == (6, 3, 40.0)  # 40, 30, 50
    assert (pt["tokens_per_sec_min"], pt["tokens_per_sec_max"]) == (0.008, 9600.0)
    assert pt["tokens_per_sec"] == 8400.0  # median of 0.008, 7200, 8000, 8800 x2, 9600
    assert pt["tokens_per_sec_per_gpu"] == 1000.0  # median of 0.001, 900, 1000 x2, 1100, 1200
    assert [(f["kind"], f["reason"]) for f in g["flags"]] == [
        ("single_node_count", "only one node count (2): no scaling to show"),
        ("zero_mfu", "mfu 0.0 in 1 row, read as unknown (ezpz writes 0.0 when it does not "
                     "know the device's peak FLOPS): empty those cells"),
        ("spread", "repeats disagree: spread 114.3% is above 10% (tokens/s 0.008 to 9,600.0 "
                   "over 6 repeats)"),
        ("partial_mfu", "mfu logged by 3 of 6 repeats; its median is over those only"),
        ("gpus_mismatch", f"{p}:9: tokens/s/gpu x gpus is 0.91x tokens/s: gpus or a "
                          "throughput is wrong")]


def test_counts_of_exactly_the_cap_are_used_and_the_note_names_the_count_past_it(tmp_path):
    s = (Sweep().add("aurora", MAX_COUNT, MAX_COUNT, 1.0)
         .add("aurora", MAX_COUNT, MAX_COUNT + 1, 1.0, tps=1.0))
    p = s.write(tmp_path / "s.csv")
    r = run_report(p, "--format", "json")
    assert r.exit_code == 0
    assert r.stderr == (f"note: {p}:3: gpus {MAX_COUNT + 1} is more than {MAX_COUNT:,}; "
                        "row not used\n")
    rep = json.loads(r.stdout)
    assert rep["rows"] == {"read": 2, "measured": 1, "without_throughput": 0, "failed": 0,
                           "not_used": 1}
    (pt,) = rep["groups"][0]["points"]
    assert (pt["nodes"], pt["gpus"], pt["tokens_per_sec"]) == (MAX_COUNT, MAX_COUNT, 1e6)


@pytest.mark.parametrize("what", ["empty", "header only", "short row", "unreadable row",
                                  "no gpus column"])
def test_a_file_changed_after_it_was_read_is_no_crash_and_no_duplicate(tmp_path, monkeypatch,
                                                                       what):
    # A run in two files is confirmed by reading the first file's row again (its identity,
    # at its offset): a file a teammate rewrote meanwhile holds no such row any more.
    first = Sweep().add("12", 1, 12, 100.0).write(tmp_path / "a.csv")
    second = Sweep().add("12", 1, 12, 110.0).write(tmp_path / "b.csv")
    old = first.read_bytes()
    at = old.index(b"\n") + 1  # the offset of the row in the first file
    stamp, system, config = Sweep().add("12", 1, 12, 1.0).rows[0][:3]
    header_without_gpus = "timestamp,system,config,nodes,"
    header_without_gpus += "x" * (at - 1 - len(header_without_gpus))
    _replaced_after_reading(monkeypatch, first, {
        "empty": b"",
        "header only": old[:at],
        "short row": old[:at] + f"{stamp},{system},{config},1\n".encode(),
        "unreadable row": old[:at] + b'"' + b"x" * (CSV_FIELD_LIMIT + 1) + b'"\n',
        # a column the file lacks stands in for none: here a system named as the gpus count
        "no gpus column": f"{header_without_gpus}\n{stamp},{system},{config},1,12\n".encode(),
    }[what])
    rep = _report_of(first, second)
    assert rep["problems"] == []
    assert rep["rows"] == {"read": 2, "measured": 2, "without_throughput": 0, "failed": 0,
                           "not_used": 0}
    (pt,) = rep["groups"][0]["points"]
    assert pt["sources"] == [f"{first}:2", f"{second}:2"]


def test_a_repeat_numbered_past_32_bits_widens_the_sources_and_keeps_its_numbers():
    from ezpz_amsc.report.data import Point, _measure

    point = Point()
    _measure(point, 5, 100.0, 25.0, 4, "40.0")
    _measure(point, 2**32 + 7, 110.0, 30.0, 4, "0.0")  # line x files past 4,294,967,295
    assert (point.sources.typecode, list(point.sources)) == ("q", [5, 2**32 + 7])
    assert (list(point.tps), list(point.tps_per_gpu), list(point.mfu_pct), point.mfu_zero) == (
        [100.0, 110.0], [25.0, 30.0], [40.0], 1)
    assert point.mismatched == [(2**32 + 7, 1.09)]


def test_the_summary_counts_every_problem_though_only_the_first_are_listed(tmp_path):
    """The listed problems are bounded; the count the summary and the JSON give is not."""
    from ezpz_amsc.results.schema import MAX_PROBLEMS

    bad = MAX_PROBLEMS + 5
    p = tmp_path / "hostile.csv"
    p.write_text(",".join(HEADER) + "\n" + "x\n" * bad)
    text, data = run_report(p), run_report(p, "--format", "json")
    rep = json.loads(data.stdout)
    assert rep["problem_count"] == bad
    assert len(rep["problems"]) == MAX_PROBLEMS + 1
    assert rep["problems"][-1] == (f"{p}: 5 more problems not listed "
                                   f"(at most {MAX_PROBLEMS:,} a file are)")
    assert f"({bad} problems: notes on stderr)" in " ".join(text.stdout.split())
