"""The report subcommand (report/data.py, report/text.py, report/plot.py): the scaling study over
results files, as text, JSON and a plot."""

from __future__ import annotations

import csv
import json
import os
import re
import struct
import subprocess
import sys
import tempfile
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from helpers import (
    CSV_FIELD_LIMIT,
    FIXTURE_NAMES,
    PNG_SIGNATURE,
    RUNS,
    error_line,
    run_cli,
    run_report,
    strip_ansi,
)
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ezpz_amsc.errors import AmscError
from ezpz_amsc.report.data import build_report, read_sweep
from ezpz_amsc.report.text import render_text
from ezpz_amsc.results.schema import HEADER, MAX_COUNT

ANSI = "\x1b["


CFG = "agpt-2b/bs1/seq2048/tp1"


# What a results file can hold in a label (non-blank text) and in a throughput cell.
_text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=120).filter(
    lambda t: t.strip() != "")


_rate = st.floats(min_value=0.001, max_value=1e15, allow_nan=False)


class Sweep:
    """Rows of a results file, written the way ``--append`` writes them."""

    def __init__(self) -> None:
        self.rows: list[list[str] | str] = []  # a str is written as is: a hand-made line

    def raw(self, line: str) -> Sweep:
        self.rows.append(line)
        return self

    def add(self, system: str, nodes: int, gpus: int, tps_per_gpu: float | None, *,
            config: str = CFG, status: str = "pass", mfu: float | None = None,
            tps: float | None = -1.0, error: str = "") -> Sweep:
        """``tps`` defaults to ``tps_per_gpu * gpus``; None leaves the cell empty."""
        n = len(self.rows)
        if tps == -1.0:
            tps = None if tps_per_gpu is None else tps_per_gpu * gpus
        cell = lambda x: "" if x is None else f"{x:.3f}"  # noqa: E731
        self.rows.append([f"2026-08-11T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
                          system, config, str(nodes), str(gpus), status, "100.000", cell(tps),
                          cell(tps_per_gpu), cell(mfu), "", "", "", error])
        return self

    def write(self, path: Path, extra_lines: tuple[str, ...] = ()) -> Path:
        with open(path, "w", newline="", encoding="utf-8", errors="surrogateescape") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(HEADER)
            for row in [*self.rows, *extra_lines]:
                if isinstance(row, str):
                    f.write(row + "\n")
                else:
                    w.writerow(row)
        return path


def scaling_sweep() -> Sweep:
    """1-64 nodes on two machines, with repeats, one superlinear point (aurora, 8 nodes),
    one collapse (aurora, 64 nodes), repeats that disagree (aurora, 32 nodes) and one
    failed run (perlmutter, 32 nodes); plus a config run at one node count only."""
    s = Sweep()
    aurora = {1: [10000, 10100, 9900], 2: [9800, 9860], 4: [9700, 9600, 9650], 8: [12000],
              16: [9300, 9400], 32: [9000, 10500], 64: [4000, 4100]}
    for nodes, rates in aurora.items():
        for tpg in rates:
            s.add("aurora", nodes, 12 * nodes, tpg, mfu=tpg / 250)
    perlmutter = {1: [20000, 20200], 2: [19800], 4: [19500, 19600], 8: [19200], 16: [18800],
                  32: [18000], 64: [17000]}
    for nodes, rates in perlmutter.items():
        for tpg in rates:
            s.add("perlmutter", nodes, 4 * nodes, tpg)
    s.add("perlmutter", 32, 128, None, status="fail", error="NCCL timeout at step 3")
    s.add("sunspot", 2, 24, 5000, config="vit/bs64")
    return s


EXPECTED = """\
scaling report: 1 file, 26 rows: 25 measured, 1 failed
  medians over repeats; eff = tokens/s/gpu / tokens/s/gpu at the smallest node
  count of the same config and system; spread = (max - min) / median of tokens/s
  over repeats
  flags (!): eff above 1.05 or below 0.70, spread above 10%, tokens/s/gpu x gpus
  off tokens/s by over 2%, several gpus counts at one node count, mfu from some
  repeats only, mfu 0.0 (unknown), a single node count

agpt-2b/bs1/seq2048/tp1 on aurora
  nodes  gpus  repeats     tokens/s  tokens/s/gpu    eff  mfu %  spread
      1    12        3    120,000.0      10,000.0  1.000   40.0    2.0%
      2    24        2    235,920.0       9,830.0  0.983   39.3    0.6%
      4    48        3    463,200.0       9,650.0  0.965   38.6    1.0%
!     8    96        1  1,152,000.0      12,000.0  1.200   48.0       -
     16   192        2  1,795,200.0       9,350.0  0.935   37.4    1.1%
!    32   384        2  3,744,000.0       9,750.0  0.975   39.0   15.4%
!    64   768        2  3,110,400.0       4,050.0  0.405   16.2    2.5%
! 8 nodes: efficiency 1.200 is above 1.05 (superlinear): check gpus here and at
!     the baseline (1 node, 12 gpus)
! 32 nodes: repeats disagree: spread 15.4% is above 10% (tokens/s 3,456,000.0 to
!     4,032,000.0 over 2 repeats)
! 64 nodes: efficiency 0.405 is below 0.70 (collapse?): each GPU delivers 40.5%
!     of its rate at the baseline (1 node, 12 gpus)

agpt-2b/bs1/seq2048/tp1 on perlmutter
  nodes  gpus  repeats     tokens/s  tokens/s/gpu    eff  mfu %  spread
      1     4        2     80,400.0      20,100.0  1.000      -    1.0%
      2     8        1    158,400.0      19,800.0  0.985      -       -
      4    16        2    312,800.0      19,550.0  0.973      -    0.5%
      8    32        1    614,400.0      19,200.0  0.955      -       -
     16    64        1  1,203,200.0      18,800.0  0.935      -       -
     32   128        1  2,304,000.0      18,000.0  0.896      -       -
     64   256        1  4,352,000.0      17,000.0  0.846      -       -

vit/bs64 on sunspot
  nodes  gpus  repeats   tokens/s  tokens/s/gpu    eff  mfu %  spread
      2    24        1  120,000.0       5,000.0  1.000      -       -
! only one node count (2): no scaling to show

cross-machine (node counts run on more than one system)
agpt-2b/bs1/seq2048/tp1: aurora vs perlmutter; ratio = tokens/s / aurora's
  nodes  system      gpus     tokens/s  tokens/s/gpu    eff  ratio
      1  aurora        12    120,000.0      10,000.0  1.000  1.00x
         perlmutter     4     80,400.0      20,100.0  1.000  0.67x
      2  aurora        24    235,920.0       9,830.0  0.983  1.00x
         perlmutter     8    158,400.0      19,800.0  0.985  0.67x
      4  aurora        48    463,200.0       9,650.0  0.965  1.00x
         perlmutter    16    312,800.0      19,550.0  0.973  0.68x
!     8  aurora        96  1,152,000.0      12,000.0  1.200  1.00x
         perlmutter    32    614,400.0      19,200.0  0.955  0.53x
     16  aurora       192  1,795,200.0       9,350.0  0.935  1.00x
         perlmutter    64  1,203,200.0      18,800.0  0.935  0.67x
!    32  aurora       384  3,744,000.0       9,750.0  0.975  1.00x
         perlmutter   128  2,304,000.0      18,000.0  0.896  0.62x
!    64  aurora       768  3,110,400.0       4,050.0  0.405  1.00x
         perlmutter   256  4,352,000.0      17,000.0  0.846  1.40x

failed runs (1, not in the tables)
  sweep.csv:26  agpt-2b/bs1/seq2048/tp1 on perlmutter, 32 nodes, 128 gpus,
      2026-08-11T00:00:24Z
    error: NCCL timeout at step 3
"""


def test_synthetic_sweep_exact_report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scaling_sweep().write(tmp_path / "sweep.csv")
    r = run_report("sweep.csv")
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout == EXPECTED


def _report_of(*paths) -> dict:
    return build_report(read_sweep([str(p) for p in paths]))


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


# --- JSON = text ------------------------------------------------------------------------------


_NUM = r"[-0-9.,e+]+%?x?"


_GROUP_ROW = re.compile(rf"^(!?)\s+(\d+)\s+(\d+)\s+(\d+)\s+({_NUM})\s+({_NUM})\s+({_NUM})"
                        rf"\s+({_NUM}|-)\s+({_NUM}|-)$")


_CROSS_ROW = re.compile(rf"^(!?)\s+(\d+)?\s+(\S+)\s+(\d+)\s+({_NUM})\s+({_NUM})\s+({_NUM})"
                        rf"\s+({_NUM}|-)$")


def _n(cell: str) -> float | None:
    return None if cell == "-" else float(cell.replace(",", "").rstrip("%x"))


def _shown(rate: float) -> float:
    """A throughput as the text shows it: 1 decimal, 3 below 10 (JSON keeps the row's 3)."""
    return round(rate, 1 if rate >= 10 else 3)


def _parse_text(text: str) -> dict:
    """Read the numbers back out of the text report."""
    groups, cross, heading, section, last_nodes = {}, [], None, "groups", None
    for line in text.splitlines():
        if line.startswith("cross-machine"):
            section = "cross"
        elif line.startswith("failed runs"):
            section = "failed"
        if section == "groups" and " on " in line and not line.startswith((" ", "!")):
            heading = line
            groups[heading] = {"points": [], "flags": []}
        elif section == "groups" and (m := _GROUP_ROW.match(line)):
            mark, *cells = m.groups()
            groups[heading]["points"].append(
                (int(cells[0]), int(cells[1]), int(cells[2]), *map(_n, cells[3:]), mark == "!"))
        elif section == "groups" and line.startswith("! ") and not line.startswith("!  "):
            groups[heading]["flags"].append(line[2:])
        elif section == "groups" and line.startswith("!     "):
            groups[heading]["flags"][-1] += " " + line.strip("! ")
        elif section == "cross" and (m := _CROSS_ROW.match(line)):
            mark, nodes, system, gpus, *cells = m.groups()
            last_nodes = int(nodes) if nodes else last_nodes
            cross.append((last_nodes, system, int(gpus), *map(_n, cells), mark == "!"))
    return {"groups": groups, "cross": cross}


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


ZERO_MFU = ("mfu '0.000' is zero, which is not a measurement (ezpz writes 0.0 when it does not "
            "know the device's peak FLOPS, e.g. on CPU); empty the cell (not measured)")


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


# --- input that is not clean ------------------------------------------------------------------


def _without_sources(report: dict) -> list:
    return [{**g, "points": [{k: v for k, v in p.items() if k != "sources"} for p in g["points"]]}
            for g in report["groups"]]


BAD_LINES = [  # (line, what --check or the report says about it)
    ("garbage", "1 cells, header has 14"),
    ("2026-08-11T09:00:00Z,aurora,c,x,12,pass,1,1,1,,,,,", "nodes 'x' is not an integer"),
    ("2026-08-11T09:00:01Z,aurora,c,1,12,ok,1,1,1,,,,,", "status 'ok' is not pass or fail"),
    ("2026-08-11T09:00:02Z,aurora,c,1,12,pass,1,0.000,0.000,,,,,",
     "throughput_tokens_per_sec '0.000' is below 0.001 (the smallest rate a row holds at 3 "
     "decimals); row not used"),
    ("2026-08-11T09:00:03Z,aurora,c,2000000,12,pass,1,1,1,,,,,",
     "nodes 2000000 is more than 1,000,000; row not used"),
    ("2026-08-11T09:00:04Z,aurora,c\udcff,1,12,pass,1,1,1,,,,,", "not UTF-8 text"),
    ("2026-08-11T00:00:00Z,aurora,agpt-2b/bs1/seq2048/tp1,1,12,pass,1,1,1,,,,,",
     "same run as line 2"),
]


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


@pytest.mark.parametrize("make, fragment", [
    (lambda d: d / "missing.csv", "missing.csv: no such file"),
    (lambda d: d, "is a directory; report needs results CSV files"),
    (lambda d: (d / "e.csv", (d / "e.csv").write_text(""))[0], "e.csv: empty file, no header"),
    (lambda d: (d / "h.csv", (d / "h.csv").write_text("a,b\n1,2\n"))[0],
     "header lacks required columns timestamp"),
])
def test_a_file_that_cannot_be_read_is_one_error_line(tmp_path, make, fragment):
    good = scaling_sweep().write(tmp_path / "good.csv")
    line = error_line(run_report(good, make(tmp_path)))
    assert fragment in line


def test_no_path_is_a_usage_error():
    r = run_report()
    assert (r.exit_code, r.stdout) == (2, "")
    assert r.stderr.splitlines() == [
        "Usage: report RESULTS_CSV... [--format FORMAT] [--plot FILE [--dpi N]]",
        "error: missing RESULTS_CSV; try 'report -h' for help"]


def test_no_usable_row(tmp_path):
    p = Sweep().add("a", 1, 4, None, status="fail").write(tmp_path / "s.csv")
    r = run_report(p)
    assert r.exit_code == 0
    assert "\nno pass row with throughput: nothing to scale\n" in r.stdout
    assert "failed runs (1, not in the tables)" in r.stdout


# --- cross-machine ----------------------------------------------------------------------------


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


# --- the shipped runs -------------------------------------------------------------------------


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


# --- --plot -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_plot_png_written_whole_and_report_unchanged(tmp_path):
    pytest.importorskip("matplotlib")
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    png = tmp_path / "scaling.png"
    r = run_report(p, "--plot", png)
    assert r.exit_code == 0 and r.stderr == f"note: wrote {png}\n"
    assert r.stdout == run_report(p).stdout
    assert run_report(p, "--plot", png, "-q").stderr == ""
    data = png.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) > 10_000
    assert sorted(f.name for f in tmp_path.iterdir()) == ["scaling.png", "sweep.csv"]
    umask = os.umask(0o022)
    os.umask(umask)
    assert png.stat().st_mode & 0o777 == 0o666 & ~umask  # like any new file, not 0600


@pytest.mark.slow
def test_plot_svg_has_the_labels_legend_and_flags(tmp_path):
    pytest.importorskip("matplotlib")
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    svg = tmp_path / "scaling.svg"
    assert run_report(p, "--plot", svg, "--format", "json").exit_code == 0
    root = ET.parse(svg).getroot()
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    text = svg.read_text()  # matplotlib keeps each drawn string as a comment
    for label in ("nodes (log2 scale)", "throughput per GPU (tokens/s)", CFG, "vit/bs64",
                  "aurora", "perlmutter", "ideal: flat at the smallest node count",
                  "flagged (see the report)", "superlinear", "low eff", "spread", "efficiency",
                  "not flagged: 0.70 to 1.05", "1.0: the rate at the smallest node count",
                  "20,000", "10,000"):
        assert f"<!-- {label} -->" in text, label
    for tick in (1, 2, 4, 8, 16, 32, 64):  # log2 axis, one tick per node count
        assert f"<!-- {tick} -->" in text
    # vit/bs64 ran one node count: a note, not an almost empty panel
    assert "<!-- only one node count (2): no scaling to show; per GPU: -->" in text
    assert "<!-- sunspot: 24 gpus: 5,000.0 tokens/s -->" in text


@pytest.mark.slow
@pytest.mark.parametrize("name", ["s.png", "s.svg", "s.pdf"])
def test_the_same_report_draws_the_same_bytes(tmp_path, name):
    pytest.importorskip("matplotlib")
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    first, second = tmp_path / f"1{name}", tmp_path / f"2{name}"
    assert run_report(p, "--plot", first).exit_code == 0
    assert run_report(p, "--plot", second).exit_code == 0
    assert first.read_bytes() == second.read_bytes()
    Sweep().add("a", 1, 4, 100).add("a", 2, 8, 90).write(p)
    assert run_report(p, "--plot", second).exit_code == 0
    assert first.read_bytes() != second.read_bytes()


def test_plot_without_matplotlib_is_one_error_naming_the_extra(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    line = error_line(run_report(p, "--plot", tmp_path / "s.png"))
    assert line == ("error: --plot needs matplotlib, which is not installed: pip install "
                    "matplotlib, or from a checkout of ezpz-amsc pip install '.[plot]' (the "
                    "plot extra)")
    assert not (tmp_path / "s.png").exists()


def test_plot_suffix_is_checked_before_anything_is_read(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    r = run_report(tmp_path / "missing.csv", "--plot", tmp_path / "s.jpg")
    assert r.exit_code == 2
    assert error_line(r) == (f"error: --plot {tmp_path}/s.jpg: the file name must end in .png, "
                             ".svg or .pdf")
    assert error_line(run_report(tmp_path / "missing.csv", "--plot", "")) == (
        "error: invalid value for '--plot': empty path (is the variable that should hold it "
        "unset?)")


@pytest.mark.slow
def test_plot_pdf(tmp_path):
    pytest.importorskip("matplotlib")
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    pdf = tmp_path / "scaling.PDF"  # the suffix in any case
    r = run_report(p, "--plot", pdf)
    assert (r.exit_code, r.stderr) == (0, f"note: wrote {pdf}\n")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF-") and b"CreationDate" not in data


def _figure_of(*sweep_rows, dpi: int = 100):
    """The figure --plot draws for a sweep of ``(system, nodes, gpus, tokens/s/gpu)`` rows
    (``config`` too, as a fifth item)."""
    pytest.importorskip("matplotlib")
    from ezpz_amsc.report.plot import _figure

    s = Sweep()
    for system, nodes, gpus, tpg, *config in sweep_rows:
        s.add(system, nodes, gpus, tpg, config=config[0] if config else CFG)
    rep = _report_of(s.write(Path(tempfile.mkdtemp()) / "s.csv"))
    return _figure(rep["groups"], rep["thresholds"], dpi)


def _axes_of(*sweep_rows, panel: str = "throughput") -> list:
    """The panels of one kind (``throughput``, ``efficiency``, ``note``) of that figure."""
    return [ax for ax in _figure_of(*sweep_rows).axes if ax.get_label() == panel]


def _drawn(ax) -> dict[str, list[tuple[float, float]]]:
    """Each labelled line's points (the systems' lines; not the ideal, not the flag rings)."""
    return {ln.get_label(): list(zip(ln.get_xdata(), ln.get_ydata(), strict=True))
            for ln in ax.get_lines() if not ln.get_label().startswith("_")}


def test_plot_never_joins_two_gpus_counts_at_one_node_count():
    (ax,) = _axes_of(("a", 1, 4, 1000), ("a", 1, 8, 600), ("a", 2, 8, 990), ("a", 2, 16, 580),
                     ("b", 1, 4, 2000), ("b", 2, 8, 1900))
    assert _drawn(ax) == {"a (4 gpus/node)": [(1, 1000.0), (2, 990.0)],
                          "a (8 gpus/node)": [(1, 600.0), (2, 580.0)],
                          "b": [(1, 2000.0), (2, 1900.0)]}
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend[:3] == ["a (4 gpus/node)", "a (8 gpus/node)", "b"]
    (one,) = _axes_of(("c", 1, 1, 7000), ("c", 1, 2, 2000), ("c", 2, 2, 6900))
    assert _drawn(one) == {"c (1 gpu/node)": [(1, 7000.0), (2, 6900.0)],
                           "c (2 gpus/node)": [(1, 2000.0)]}
    (later,) = _axes_of(("d", 2, 8, 700), ("d", 2, 24, 500), ("d", 4, 16, 690))
    assert list(_drawn(later)) == ["d (4 gpus/node)", "d (12 gpus/node)"]


def test_plot_gives_each_series_of_a_system_its_own_marker():
    (ax,) = _axes_of(*[("a", n, n * k, 1000 - k) for k in (1, 2, 3, 4, 5, 6) for n in (1, 2)])
    markers = [ln.get_marker() for ln in ax.get_lines() if not ln.get_label().startswith("_")]
    assert markers == ["o", "s", "^", "D", "v", "o"]


def test_plot_names_an_ideal_only_where_it_draws_one():
    (multi,) = _axes_of(("a", 1, 4, 1000), ("a", 4, 16, 900))
    dashed = [ln for ln in multi.get_lines() if ln.get_linestyle() == "--"]
    assert [list(zip(ln.get_xdata(), ln.get_ydata(), strict=True)) for ln in dashed] == [
        [(1, 1000.0), (4, 1000.0)]]
    assert [ln.get_linewidth() for ln in dashed] == [1]  # thinner than the measured line
    assert "ideal: flat at the smallest node count" in [
        t.get_text() for t in multi.get_legend().get_texts()]
    # b ran one node count: no line for it, and the legend names a's
    (mixed,) = _axes_of(("a", 2, 8, 1000), ("a", 4, 16, 990), ("b", 2, 8, 900))
    assert [list(zip(ln.get_xdata(), ln.get_ydata(), strict=True)) for ln in mixed.get_lines()
            if ln.get_linestyle() == "--"] == [[(2, 1000.0), (4, 1000.0)]]
    assert [t.get_text() for t in mixed.get_legend().get_texts()] == [
        "a", "b", "ideal: flat at the smallest node count"]


def test_plot_shows_the_spread_of_repeats():
    (ax,) = _axes_of(("a", 1, 4, 1000), ("a", 1, 4, 900), ("a", 1, 4, 1040), ("a", 2, 8, 950),
                     ("a", 4, 16, 900), ("a", 4, 16, 940))
    (bars,) = ax.containers  # the points with two repeats or more
    (segments,) = [c.get_segments() for c in bars.lines[2]]
    assert [[tuple(pt) for pt in seg] for seg in segments] == [[(1, 900.0), (1, 1040.0)],
                                                               [(4, 900.0), (4, 940.0)]]
    # Drawn to be seen: above the red ring of a flagged point (zorder 3), with caps.
    (stems,) = bars.lines[2]
    assert (stems.get_zorder(), list(stems.get_linewidths())) == (4, [1.5])
    assert [c.get_markersize() for c in bars.lines[1]] == [8, 8]  # capsize 4: 8 points wide
    assert all(c.get_zorder() == 4 for c in bars.lines[1])
    (key,) = [h for h in ax.get_legend().legend_handles
              if h.get_label() == "bar: lowest to highest of the repeats"]
    assert (key.get_marker(), key.get_markersize()) == ("|", 10)
    assert "bar: lowest to highest of the repeats" in [
        t.get_text() for t in ax.get_legend().get_texts()]
    (none,) = _axes_of(("a", 1, 4, 1000), ("a", 2, 8, 950))
    assert none.containers == [] and "bar: lowest to highest of the repeats" not in [
        t.get_text() for t in none.get_legend().get_texts()]


@pytest.mark.slow
def test_plot_into_a_missing_folder(tmp_path):
    pytest.importorskip("matplotlib")
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    line = error_line(run_report(p, "--plot", tmp_path / "no" / "s.png"))
    assert line == f"error: {tmp_path}/no/s.png: cannot write plot: No such file or directory"


@pytest.mark.slow
def test_plot_write_failure_leaves_the_old_file_and_no_temp(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import os

    from ezpz_amsc.fs import create

    p = scaling_sweep().write(tmp_path / "sweep.csv")
    png = tmp_path / "s.png"
    png.write_bytes(b"old plot")

    def disk_full(fd, data):
        os.write(fd, bytes(data[:10]))
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(create, "write_all", disk_full)
    line = error_line(run_report(p, "--plot", png))
    assert line == f"error: {png}: cannot write plot: No space left on device"
    assert png.read_bytes() == b"old plot"
    assert sorted(f.name for f in tmp_path.iterdir()) == ["s.png", "sweep.csv"]


def test_plot_draws_labels_as_written(tmp_path):
    pytest.importorskip("matplotlib")
    # "$...$" would be matplotlib math (and "\\frac" alone an error), "_x" a hidden label
    p = (Sweep().add("_sys$1", 1, 4, 100, config="$\\frac$ cfg\x1b[31m")
         .add("_sys$1", 2, 8, 99, config="$\\frac$ cfg\x1b[31m").write(tmp_path / "s.csv"))
    svg = tmp_path / "s.svg"
    assert run_report(p, "--plot", svg).exit_code == 0
    text = svg.read_text()
    assert "<!-- $\\frac$ cfg [31m -->" in text and "<!-- _sys$1 -->" in text


@pytest.mark.slow
@settings(max_examples=25)  # a plot costs ~0.2 s: enough to meet odd labels and numbers
@given(rows=st.lists(st.tuples(_text, _text, st.integers(1, MAX_COUNT // 4), _rate), min_size=1,
                     max_size=6))  # gpus = 4 x nodes: a row over MAX_COUNT is not used
@example(rows=[("0", "0\r", 1, 1.0)])  # found by the random profile: a line split by a bare CR
def test_plot_never_fails_on_what_a_results_file_holds(tmp_path_factory, rows):
    pytest.importorskip("matplotlib")
    s = Sweep()
    for config, system, nodes, rate in rows:
        s.add(system, nodes, nodes * 4, rate, config=config)
    d = tmp_path_factory.mktemp("plot")
    from ezpz_amsc.report.plot import write_plot

    report = _report_of(s.write(d / "s.csv"))
    if not report["groups"]:
        # a label with a bare CR, which --append refuses to write, splits its line in two:
        # both halves are bad lines, and the plot is refused cleanly, writing nothing
        with pytest.raises(AmscError, match=r"nothing to plot \(no pass row with throughput\)$"):
            write_plot(report, str(d / "s.png"))
        assert not (d / "s.png").exists()
        return
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's warnings become notes, never escape
        notes = write_plot(report, str(d / "s.png"))
    assert (d / "s.png").read_bytes().startswith(PNG_SIGNATURE)
    assert all(n.startswith(f"{d}/s.png: ") for n in notes)


def test_a_glyph_the_font_lacks_is_one_note(tmp_path):
    pytest.importorskip("matplotlib")
    p = Sweep().add("\U00027067\U0002aee3", 1, 4, 100).write(tmp_path / "s.csv")
    r = run_report(p, "--plot", tmp_path / "s.png")
    assert r.exit_code == 0
    assert r.stderr == (f"note: {tmp_path}/s.png: some characters of the labels have no glyph "
                        "in matplotlib's font; they are drawn as boxes\n"
                        f"note: wrote {tmp_path}/s.png\n")


def test_plot_with_nothing_to_plot(tmp_path):
    pytest.importorskip("matplotlib")
    p = Sweep().add("a", 1, 4, None, status="fail").write(tmp_path / "s.csv")
    line = error_line(run_report(p, "--plot", tmp_path / "s.png"))
    assert line == (f"error: --plot {tmp_path}/s.png: nothing to plot (no pass row with "
                    "throughput)")
    assert not (tmp_path / "s.png").exists()


def _drawn_labels(fig, ax, axis: str = "x") -> list:
    """The tick labels ``ax`` shows once ``fig`` is drawn (Agg), left to right."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t for t in labels if t.get_visible() and t.get_text()]


@pytest.mark.parametrize("dpi", [100, 300])
def test_plot_labels_only_node_counts_run_and_never_lets_them_collide(dpi):
    """1 to 24 nodes once read "1011121314...": now the counts whose labels fit."""
    fig = _figure_of(*[("p", n, 4 * n, 1000 - n) for n in range(1, 25)], dpi=dpi)
    (top,) = [ax for ax in fig.axes if ax.get_label() == "throughput"]
    (eff,) = [ax for ax in fig.axes if ax.get_label() == "efficiency"]
    labels = _drawn_labels(fig, eff)
    assert [t.get_text() for t in labels] == ["1", "2", "3", "4", "5", "6", "7", "8", "10",
                                              "12", "16", "20", "24"]
    boxes = [t.get_window_extent() for t in labels]
    gap = 0.8 * 10 * dpi / 72  # LABEL_GAP_EM at the 10-point tick labels, in pixels
    assert all(b.x0 - a.x1 >= gap - 0.5 for a, b in zip(boxes, boxes[1:], strict=False))
    assert list(eff.get_xticks()) == list(range(1, 25))  # a tick mark at every count run
    assert _drawn_labels(fig, top) == []  # the panels share the axis: labelled once, below


def test_plot_labels_every_power_of_two_with_separators():
    fig = _figure_of(*[("a", 2 ** k, 4 * 2 ** k, 900) for k in range(12)])
    (eff,) = [ax for ax in fig.axes if ax.get_label() == "efficiency"]
    assert [t.get_text() for t in _drawn_labels(fig, eff)] == [
        "1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1,024", "2,048"]
    (odd,) = [ax for ax in _figure_of(("a", 3, 12, 900), ("a", 6, 24, 890),
                                      ("a", 48, 192, 850)).axes
              if ax.get_label() == "efficiency"]
    assert list(odd.get_xticks()) == [3, 6, 48]


def test_plot_y_axis_has_thousands_separators_and_the_decimals_it_needs():
    fig = _figure_of(("a", 1, 4, 20100), ("a", 2, 8, 19800), ("a", 4, 16, 12000))
    (top,) = [ax for ax in fig.axes if ax.get_label() == "throughput"]
    texts = [t.get_text() for t in _drawn_labels(fig, top, "y")]
    assert "10,000" in texts and "20,000" in texts and texts[0] == "0"
    small = _figure_of(("a", 1, 4, 0.5), ("a", 2, 8, 0.45))
    (low,) = [ax for ax in small.axes if ax.get_label() == "throughput"]
    texts = [t.get_text() for t in _drawn_labels(small, low, "y")]
    assert len(set(texts)) == len(texts) and "0.5" in texts  # never 0, 0, 0, 1


def test_plot_draws_the_efficiency_the_report_prints_and_the_band_of_no_flag(tmp_path):
    rep = _report_of(scaling_sweep().write(tmp_path / "sweep.csv"))
    from ezpz_amsc.report.plot import _figure

    fig = _figure(rep["groups"], rep["thresholds"])
    (eff,) = [ax for ax in fig.axes if ax.get_label() == "efficiency"]
    lines = [list(zip(ln.get_xdata(), ln.get_ydata(), strict=True)) for ln in eff.get_lines()
             if ln.get_linestyle() == "-"]
    assert lines == [[(p["nodes"], p["efficiency"]) for p in g["points"]]
                     for g in rep["groups"][:2]]
    (band,) = eff.patches
    # a Rectangle or, before matplotlib 3.9, a Polygon: its corners, y in data units
    corners = band.get_patch_transform().transform(band.get_path().vertices)
    ys = sorted({round(float(y), 6) for y in corners[:, 1]})
    assert ys == [0.7, 1.05]
    legend = [t.get_text() for t in eff.get_legend().get_texts()]
    assert legend == ["not flagged: 0.70 to 1.05", "1.0: the rate at the smallest node count"]


def test_a_config_run_at_one_node_count_is_a_note_not_an_empty_panel():
    fig = _figure_of(("sunspot", 2, 24, 5000, "vit/bs64"), ("aurora", 2, 24, 6000, "vit/bs64"),
                     ("aurora", 1, 12, 6100, "gpt"), ("aurora", 2, 24, 6000, "gpt"))
    assert sorted(ax.get_label() for ax in fig.axes) == ["efficiency", "note", "throughput"]
    (note,) = [ax for ax in fig.axes if ax.get_label() == "note"]
    assert note.get_title() == "vit/bs64" and not note.axison
    (text,) = note.texts
    assert text.get_text().splitlines() == [
        "only one node count (2): no scaling to show; per GPU:",
        "aurora: 24 gpus: 6,000.0 tokens/s", "sunspot: 24 gpus: 5,000.0 tokens/s"]
    (flagged,) = _figure_of(("l", 1, 1, 7443.2), ("l", 1, 2, 2021.0)).axes
    assert flagged.texts[0].get_text().splitlines()[1] == (
        "l: 1 gpu: 7,443.2 tokens/s (flagged: gpus?); 2 gpus: 2,021.0 tokens/s (flagged: gpus?, "
        "low eff)")


def test_plot_figure_size_follows_the_panels():
    from ezpz_amsc.report.plot import COLUMN_WIDTH, NOTE_HEIGHT, NOTE_LINE, SCALING_HEIGHT

    scaling = ("a", 1, 4, 100), ("a", 2, 8, 99)
    assert tuple(_figure_of(*scaling).get_size_inches()) == (COLUMN_WIDTH, sum(SCALING_HEIGHT))
    one = _figure_of(*scaling, ("a", 1, 4, 100, "single"))
    assert tuple(one.get_size_inches()) == (
        COLUMN_WIDTH, sum(SCALING_HEIGHT) + NOTE_HEIGHT + 2 * NOTE_LINE)
    four = _figure_of(*[(s, n, 4 * n, 100, c) for c in "abcd" for s, n, *_ in scaling])
    assert tuple(four.get_size_inches()) == (2 * COLUMN_WIDTH, 2 * sum(SCALING_HEIGHT))


def _png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(PNG_SIGNATURE)
    return struct.unpack(">II", data[16:24])


@pytest.mark.slow
def test_dpi_sets_the_size_of_the_png(tmp_path):
    pytest.importorskip("matplotlib")
    p = Sweep().add("a", 1, 4, 100).add("a", 2, 8, 99).write(tmp_path / "s.csv")
    sizes = {}
    for dpi in (None, 100, 150):
        png = tmp_path / f"{dpi}.png"
        r = run_report(p, "--plot", png, *(() if dpi is None else ("--dpi", dpi)))
        assert (r.exit_code, r.stderr) == (0, f"note: wrote {png}\n")
        sizes[dpi] = _png_size(png.read_bytes())
    assert sizes[None] == sizes[100] == (1000, 520)  # 10 x 5.2 inches
    assert sizes[150] == (1500, 780)


def test_dpi_needs_a_plot_and_a_sane_value(tmp_path, monkeypatch):
    p = Sweep().add("a", 1, 4, 100).write(tmp_path / "s.csv")
    r = run_report(p, "--dpi", "150")
    assert (r.exit_code, error_line(r)) == (
        2, "error: --dpi is the resolution of --plot's image: pass --plot FILE")
    for bad in ("20", "601", "x"):
        r = run_report(p, "--plot", tmp_path / "s.png", "--dpi", bad)
        assert r.exit_code == 2 and error_line(r).startswith("error: invalid value for '--dpi'")
    assert not (tmp_path / "s.png").exists()


def test_dpi_on_a_vector_plot_is_a_note(tmp_path):
    pytest.importorskip("matplotlib")
    p = Sweep().add("a", 1, 4, 100).add("a", 2, 8, 99).write(tmp_path / "s.csv")
    svg = tmp_path / "s.svg"
    r = run_report(p, "--plot", svg, "--dpi", "300")
    assert (r.exit_code, r.stderr) == (0, "note: --dpi has no effect on a .svg plot (drawn as "
                                          f"lines and text, not pixels)\nnote: wrote {svg}\n")


def test_the_plots_default_dpi_is_the_commands():
    from ezpz_amsc.cli.report_command import DEFAULT_DPI
    from ezpz_amsc.report.plot import DEFAULT_DPI as PLOT_DEFAULT

    assert DEFAULT_DPI == PLOT_DEFAULT == 100


# --- layout: 80 columns, colour ---------------------------------------------------------------


def test_colour_only_paints(tmp_path):
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    rep = _report_of(p)
    plain, painted = render_text(rep), render_text(rep, colour=True)
    assert ANSI not in plain
    assert strip_ansi(painted) == plain
    assert f"\x1b[1m{CFG} on aurora\x1b[0m" in painted
    assert "\x1b[33m!     8    96" in painted  # a flagged row
    assert "\x1b[33m!     2    24" not in painted
    assert f"\x1b[31m  {p}:26" in painted  # the failed run


_ON_TTY = """
import sys
from ezpz_amsc.cli.report_command import report_command
report_command.main(sys.argv[1:], prog_name="report")
"""


def _report_on_a_tty(path: Path, **env: str) -> str:
    """Run the command with stdout on a pseudo-terminal; return what it printed."""
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", _ON_TTY, str(path)], stdout=slave,
                            stderr=subprocess.DEVNULL, env={**os.environ, **env})
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    assert proc.wait(timeout=60) == 0
    return b"".join(chunks).decode()


@pytest.mark.slow
def test_colour_on_a_terminal_and_never_with_no_color(tmp_path, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    assert ANSI in _report_on_a_tty(p)
    assert ANSI not in _report_on_a_tty(p, NO_COLOR="1")
    assert ANSI not in run_report(p).stdout  # not a terminal


@pytest.mark.slow
@given(rows=st.lists(st.tuples(
    st.sampled_from(["c", "agpt-2b/bs1/seq2048/tp1"]) | _text,
    st.sampled_from(["aurora", "perlmutter"]) | _text,
    st.integers(1, 1_000_000), st.integers(1, 1_000_000), _rate, _rate,
    st.none() | st.floats(-1e9, 1e9), st.sampled_from(["pass", "fail"]), st.text(max_size=200),
), min_size=1, max_size=30))
def test_every_line_fits_80_columns(tmp_path_factory, rows):
    s = Sweep()
    for config, system, nodes, gpus, tps, tpg, mfu, status, error in rows:
        s.add(system, nodes, gpus, tpg, tps=tps, config=config, status=status, mfu=mfu,
              error=error)
    p = s.write(tmp_path_factory.mktemp("w") / "s.csv")
    rep = _report_of(p)
    text = render_text(rep, colour=True)
    for line in strip_ansi(text).splitlines():
        assert len(line) <= 80, line
        assert line.isprintable(), line
    assert json.loads(json.dumps(rep, allow_nan=False)) == rep


# --- cheap to load ----------------------------------------------------------------------------


_MODULES = """
import json, sys
before = set(sys.modules)
from ezpz_amsc.cli.report_command import report_command
loaded = set(sys.modules) - before
report_command.main(sys.argv[1:], standalone_mode=False)
ran = set(sys.modules) - before
print(json.dumps([sorted(loaded), sorted(ran)]), file=sys.stderr)
"""


def test_the_command_loads_only_click_and_the_report_no_numpy(tmp_path):
    p = scaling_sweep().write(tmp_path / "sweep.csv")
    out = subprocess.run([sys.executable, "-c", _MODULES, str(p)], capture_output=True,
                         text=True, check=True)
    loaded, ran = map(set, json.loads(out.stderr))
    assert {m for m in loaded if m.startswith("ezpz_amsc")} == {
        "ezpz_amsc", "ezpz_amsc.version", "ezpz_amsc.cli", "ezpz_amsc.cli.edge",
        "ezpz_amsc.cli.help", "ezpz_amsc.cli.params", "ezpz_amsc.cli.output",
        "ezpz_amsc.cli.report_command", "ezpz_amsc.errors", "ezpz_amsc.options", "ezpz_amsc.text",
        "ezpz_amsc.results", "ezpz_amsc.results.schema"}
    assert "click" in loaded
    assert not {m.split(".")[0] for m in ran} & {"numpy", "matplotlib", "ezpz"}
    assert "ezpz_amsc.report.data" in ran and "ezpz_amsc.report.plot" not in ran
    assert "ezpz_amsc.flow.export" not in ran  # the export pipeline is not the report's to load


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


# --- values pinned by mutation testing (tools/mutate.py) ---------------------------------------

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


def test_report_of_a_directory_is_an_error(tmp_path):
    from ezpz_amsc.errors import AmscError

    with pytest.raises(AmscError) as e:
        read_sweep([tmp_path])
    assert str(e.value) == f"{tmp_path}: is a directory; report needs results CSV files"


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


@pytest.mark.parametrize("x,text", [
    (10, "10.0"), (9.999, "9.999"), (9.5, "9.500"), (12345.678, "12,345.7"), (0.001, "0.001")])
def test_rate_text_shows_three_decimals_below_ten(x, text):
    from ezpz_amsc.report.data import rate_text

    assert rate_text(x) == text


def test_json_is_indented_by_two_keeps_non_ascii_and_refuses_nan():
    from ezpz_amsc.cli.output import json_text

    assert json_text({"config": "größe", "n": [1]}, indent=2) == (
        '{\n  "config": "größe",\n  "n": [\n    1\n  ]\n}')
    assert json_text({"config": "größe", "n": [1]}) == '{"config": "größe", "n": [1]}'
    with pytest.raises(ValueError):
        json_text({"x": float("nan")})


def _table_cells(text: str, first_columns: str) -> list[list[str]]:
    """The cells of the table whose header begins with the words ``first_columns``."""
    lines = text.splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.split()[:2] == first_columns.split())
    rows = []
    for ln in lines[at + 1:]:
        if not ln.strip() or ": " in ln:  # the end of the table, or its flags
            break
        rows.append(ln[2:].split())
    return rows


def _two_systems(tmp_path) -> dict:
    s = Sweep()
    for system in ("first", "second"):
        s.add(system, 1, 4, 100).add(system, 2, 8, 100)
    return _report_of(s.write(tmp_path / "s.csv"))


def test_every_column_keeps_a_number_that_fits_and_shortens_one_that_does_not(tmp_path):
    rep = _two_systems(tmp_path)
    fits, wide = rep["groups"][0]["points"]
    fits.update(nodes=1234567, gpus=1234567, repeats=1234567, tokens_per_sec=123456789.0,
                tokens_per_sec_per_gpu=12345678.9, efficiency=12.345, mfu_pct=123.4,
                spread_pct=123.4)
    wide.update(nodes=12345678, gpus=12345678, repeats=12345678, tokens_per_sec=1234567890.0,
                tokens_per_sec_per_gpu=123456789.0, efficiency=123.456, mfu_pct=1234.6,
                spread_pct=1234.6)
    text = render_text(rep)
    assert _table_cells(text, "nodes gpus")[:2] == [
        ["1234567", "1234567", "1234567", "123,456,789.0", "12,345,678.9", "12.345", "123.4",
         "123.4%"],
        ["1.2e+07", "1.2e+07", "1.2e+07", "1.23457e+09", "1.23457e+08", "123.46", "1235",
         "1235%"]]
    assert all(len(ln) <= 80 for ln in text.splitlines())


@pytest.mark.parametrize("mfu,shown", [(12345.6, "12346"), (123456.0, "1e+05")])
def test_a_wide_number_gets_the_most_digits_that_fit(tmp_path, mfu, shown):
    rep = _two_systems(tmp_path)
    rep["groups"][0]["points"][0]["mfu_pct"] = mfu
    assert _table_cells(render_text(rep), "nodes gpus")[0][6] == shown


def test_cross_machine_columns_and_system_names_fit(tmp_path):
    rep = _two_systems(tmp_path)
    (cross,) = rep["cross_machine"]
    a, b, c, d = cross["rows"]
    a.update(nodes=1234567, system="abcdefghijkl", gpus=1234567, tokens_per_sec=123456789.0,
             tokens_per_sec_per_gpu=12345678.9, efficiency=12.345, vs_reference=123.45)
    b.update(nodes=1234567, system="abcdefghijklm", gpus=12345678,
             tokens_per_sec=1234567890.0, tokens_per_sec_per_gpu=123456789.0,
             efficiency=123.456, vs_reference=1234.57)
    c.update(nodes=12345678)
    d.update(nodes=12345678)
    text = render_text(rep)
    assert _table_cells(text, "nodes system")[:3] == [
        ["1234567", "abcdefghijkl", "1234567", "123,456,789.0", "12,345,678.9", "12.345",
         "123.45x"],
        ["abcdefghijk…", "1.2e+07", "1.23457e+09", "1.23457e+08", "123.46", "1234.6x"],
        ["1.2e+07", "first", "8", "800.0", "100.0", "1.000", "1.00x"]]
    assert all(len(ln) <= 80 for ln in text.splitlines())


def test_labels_break_inside_long_words_never_at_hyphens(tmp_path):
    p = Sweep().add("aurora", 1, 4, 100, config="ab-" * 30).add(
        "aurora", 2, 8, 100, config="ab-" * 30).write(tmp_path / "s.csv")
    lines = run_report(p).stdout.splitlines()
    at = lines.index("ab-" * 26 + "ab")  # 80 columns exactly, cut inside a word
    assert lines[at + 1] == "    -ab-ab-ab- on aurora"


def test_a_report_with_nothing_to_scale_says_so(tmp_path):
    p = Sweep().add("aurora", 1, 4, None, status="fail", error="boom").write(tmp_path / "s.csv")
    text = run_report(p).stdout
    assert ("a single node count\n\nno pass row with throughput: nothing to scale\n\n"
            "failed runs (1") in text


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


# --- more values pinned by mutation testing: the reading of report/data.py ---------------------

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


def _replaced_after_reading(monkeypatch, path: Path, data: bytes) -> None:
    """``path`` is rewritten with ``data`` right after the report has read it."""
    from ezpz_amsc.report import data as data_module

    real = data_module.check_results_file

    def check_then_rewrite(p, on_row):
        out = real(p, on_row)
        if Path(p) == path:
            path.write_bytes(data)
        return out

    monkeypatch.setattr(data_module, "check_results_file", check_then_rewrite)


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
