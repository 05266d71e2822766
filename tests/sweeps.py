"""Shared by the report's test files: sweeps written as results files, and readers of
what the report prints."""

from __future__ import annotations

import csv
import os
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import (
    PNG_SIGNATURE,
)
from hypothesis import strategies as st

from ezpz_amsc.report.data import build_report, read_sweep
from ezpz_amsc.results.schema import HEADER

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


def _report_of(*paths) -> dict:
    return build_report(read_sweep([str(p) for p in paths]))


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


ZERO_MFU = ("mfu '0.000' is zero, which is not a measurement (ezpz writes 0.0 when it does not "
            "know the device's peak FLOPS, e.g. on CPU); empty the cell (not measured)")


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


def _drawn_labels(fig, ax, axis: str = "x") -> list:
    """The tick labels ``ax`` shows once ``fig`` is drawn (Agg), left to right."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    FigureCanvasAgg(fig).draw()
    labels = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t for t in labels if t.get_visible() and t.get_text()]


def _png_size(data: bytes) -> tuple[int, int]:
    assert data.startswith(PNG_SIGNATURE)
    return struct.unpack(">II", data[16:24])


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


_MODULES = """
import json, sys
before = set(sys.modules)
from ezpz_amsc.cli.report_command import report_command
loaded = set(sys.modules) - before
report_command.main(sys.argv[1:], standalone_mode=False)
ran = set(sys.modules) - before
print(json.dumps([sorted(loaded), sorted(ran)]), file=sys.stderr)
"""


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


def _replaced_after_reading(monkeypatch, path: Path, data: bytes) -> None:
    """``path`` is rewritten with ``data`` right after the report has read it."""
    from ezpz_amsc.report import data as data_module

    real = data_module.check_results_file

    def check_then_rewrite(p, on_row, on_clean=None):
        out = real(p, on_row, on_clean=on_clean)
        if Path(p) == path:
            path.write_bytes(data)
        return out

    monkeypatch.setattr(data_module, "check_results_file", check_then_rewrite)


# The flags of scaling_sweep()'s first config on aurora, as every format lists them.
SCALING_FLAGS = [
    "8 nodes: efficiency 1.200 is above 1.05 (superlinear): check gpus here and at the "
    "baseline (1 node, 12 gpus)",
    "32 nodes: repeats disagree: spread 15.4% is above 10% (tokens/s 3,456,000.0 to "
    "4,032,000.0 over 2 repeats)",
    "64 nodes: efficiency 0.405 is below 0.70 (collapse?): each GPU delivers 40.5% of its "
    "rate at the baseline (1 node, 12 gpus)"]
