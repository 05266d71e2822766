"""``report PATH...``: the scaling study over results files (issue 14)."""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import FIXTURE_NAMES, RUNS, _runner, error_line, run_cli
from hypothesis import given
from hypothesis import strategies as st

from ezpz_amsc.commands.report import report_command
from ezpz_amsc.report import build_report, read_sweep, render_text
from ezpz_amsc.row import HEADER

ANSI = "\x1b["
CFG = "agpt-2b/bs1/seq2048/tp1"


def run_report(*args):
    return _runner().invoke(report_command, [str(a) for a in args], catch_exceptions=False)


class Sweep:
    """Rows of a results file, written the way ``--append`` writes them."""

    def __init__(self) -> None:
        self.rows: list[list[str]] = []

    def add(self, system: str, nodes: int, gpus: int, tps_per_gpu: float | None, *,
            config: str = CFG, status: str = "pass", mfu: float | None = None,
            tps: float | None = None, error: str = "") -> Sweep:
        n = len(self.rows)
        if tps is None and tps_per_gpu is not None:
            tps = tps_per_gpu * gpus
        cell = lambda x: "" if x is None else f"{x:.3f}"  # noqa: E731
        self.rows.append([f"2026-08-11T{n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z",
                          system, config, str(nodes), str(gpus), status, "100.000", cell(tps),
                          cell(tps_per_gpu), cell(mfu), "", "", "", error])
        return self

    def write(self, path: Path, extra_lines: tuple[str, ...] = ()) -> Path:
        with open(path, "w", newline="") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(HEADER)
            w.writerows(self.rows)
            for line in extra_lines:
                f.write(line + "\n")
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
  repeats only, a single node count

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
!     the baseline (1 node)
! 32 nodes: repeats disagree: spread 15.4% is above 10% (tokens/s 3,456,000.0 to
!     4,032,000.0 over 2 repeats)
! 64 nodes: efficiency 0.405 is below 0.70 (collapse?): each GPU delivers 40.5%
!     of its rate at 1 node

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


# --- the exact report -------------------------------------------------------------------------

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
        "tokens_per_sec_max": 1152000.0, "flagged": True, "sources": [f"{tmp_path}/sweep.csv:10"]}
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
            (p["nodes"], p["gpus"], p["repeats"], p["tokens_per_sec"],
             p["tokens_per_sec_per_gpu"], p["efficiency"], p["mfu_pct"], p["spread_pct"],
             p["flagged"]) for p in g["points"]]
        assert len(shown["flags"]) == len(g["flags"])
        for flag, line in zip(g["flags"], shown["flags"], strict=True):
            assert line.endswith(flag["reason"])
            assert flag["nodes"] is None or line.startswith(f"{flag['nodes']} node")
    assert back["cross"] == [
        (r["nodes"], r["system"], r["gpus"], r["tokens_per_sec"], r["tokens_per_sec_per_gpu"],
         r["efficiency"], r["vs_reference"], r["flagged"])
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


# --- thresholds: each comparison at its edge --------------------------------------------------

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
    assert g["flags"][0]["reason"] == ("1 node recorded with 2 different gpus counts (6, 12): "
                                       "check gpus")
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
