"""The report's columns (report/columns.py): a large file's runs of clean rows filed a block
at a time with numpy must give what filing them a row at a time gives, to the bit."""

from __future__ import annotations

import json
import math
import random
import statistics
import subprocess
import sys
import warnings
from array import array
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ezpz_amsc.compare.study import sides_of
from ezpz_amsc.report import columns, data
from ezpz_amsc.report.columns import CleanRuns, _decimals, _integers, _stamps, gpus_mismatch
from ezpz_amsc.report.data import Point, build_report, read_sweep
from ezpz_amsc.results.schema import HEADER
from ezpz_amsc.results.validate import check_results_file


def _cells(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A buffer of comma-separated cells, and where each starts and ends."""
    buf = np.frombuffer(text.encode(), np.uint8)
    starts, ends, at = [], [], 0
    for cell in text.split(","):
        starts.append(at)
        ends.append(at + len(cell.encode()))
        at += len(cell.encode()) + 1
    return buf, np.asarray(starts, np.int64), np.asarray(ends, np.int64)


_number = st.from_regex(r"\A(?:[0-9]{1,20}(?:\.[0-9]{1,20})?|\.[0-9]{1,16})\Z")


@given(st.lists(_number, min_size=1, max_size=12), st.lists(st.text("x,é7.", max_size=20)))
def test_a_number_of_at_most_15_digits_is_what_float_reads(numbers, noise):
    # Cells of other text around them (the rest of a row) must not leak into a number.
    cells = [c for pair in zip(noise, numbers, strict=False) for c in pair] + numbers
    cells = [c.replace(",", "") for c in cells]
    buf, starts, ends = _cells(",".join(cells))
    wanted = [i for i, c in enumerate(cells) if c in numbers]
    values, exact = _decimals(np, buf, starts[wanted], ends[wanted])
    for k, i in enumerate(wanted):
        digits = sum(ch.isdigit() for ch in cells[i])
        assert bool(exact[k]) is (digits <= 15)
        if exact[k]:
            assert values[k] == float(cells[i]), cells[i]


@pytest.mark.parametrize(("cell", "value"), [
    ("0", 0.0), ("7", 7.0), ("0.1", 0.1), (".5", 0.5), ("0007.50", 7.5), ("100", 100.0),
    ("123456789012345", 123456789012345.0), ("12345678901234.5", 12345678901234.5),
    (".123456789012345", 0.123456789012345), ("2002738.481", 2002738.481),
    ("900719925474.099", 900719925474.099), (".000000000000001", 1e-15),
    # 16 digits: read by float(), not here
    ("0.123456789012345", None), ("9007199254740.993", None), ("1234567890123456", None)])
def test_numbers_as_the_exporter_and_a_teammate_write_them(cell, value):
    buf, starts, ends = _cells(f"pass,{cell},x")
    values, exact = _decimals(np, buf, starts[1:2], ends[1:2])
    assert bool(exact[0]) is (value is not None)
    if value is not None:
        assert values[0] == value


def test_an_empty_cell_is_nan_and_a_long_one_is_not_exact():
    buf, starts, ends = _cells(",1234567890123456,1.234567890123456,")
    values, exact = _decimals(np, buf, starts, ends)
    assert np.isnan(values[0]) and np.isnan(values[3])
    assert exact.tolist() == [True, False, False, True]


def test_steps_and_timestamps_are_read_whole():
    buf, starts, ends = _cells("999999999999999999,1,10")
    assert _integers(np, buf, starts, ends).tolist() == [999999999999999999, 1, 10]
    line = "2026-02-28T23:59:60Z,x\n1999-12-31T00:00:09Z,y\n"
    stamps = _stamps(np, np.frombuffer(line.encode(), np.uint8), np.asarray([0, 23]))
    assert stamps.tolist() == [20260228235960, 19991231000009]
    assert [columns._stamp_text(s) for s in stamps.tolist()] == [
        "2026-02-28T23:59:60Z", "1999-12-31T00:00:09Z"]


@pytest.mark.parametrize("ratio", [0.974, 0.975, 0.976, 0.98, 0.985, 1.015, 1.02, 1.0249,
                                   1.025, 1.026, 1.5])
def test_the_gpus_mismatch_is_judged_the_same_both_ways(tmp_path, monkeypatch, ratio):
    p = tmp_path / "s.csv"
    tpg = f"{100 * ratio:.3f}"
    p.write_text(",".join(HEADER) + "\n" + _row(0) + "\n"
                 + _row(1, throughput_tokens_per_sec_per_gpu=tpg) + "\n")
    runs, rows = _both([p], monkeypatch)
    assert runs == rows
    (point,) = runs[1].values()
    expected = gpus_mismatch(400.0, float(tpg), 4)
    assert point["mismatched"] == ([] if expected is None else [(3, expected)])
    # rounded as printed: 0.975 is 0.97 (flagged), 1.025 is 1.02 (not)
    assert (expected is not None) is (ratio in (0.974, 0.975, 1.026, 1.5))


def test_a_rate_past_the_largest_double_times_gpus_is_a_mismatch_not_a_crash(tmp_path,
                                                                           monkeypatch):
    p = tmp_path / "s.csv"
    huge = "1" + "0" * 308 + ".000"  # 1e308 tokens/s/gpu: x 4 gpus is no double
    p.write_text(",".join(HEADER) + "\n" + _row(0) + "\n"
                 + _row(1, throughput_tokens_per_sec_per_gpu=huge) + "\n")
    runs, rows = _both([p], monkeypatch)
    assert runs == rows
    (point,) = runs[1].values()
    assert point["mismatched"] == [(3, math.inf)]
    (flag,) = [f for f in json.loads(runs[0])["groups"][0]["flags"] if f["kind"] == "gpus_mismatch"]
    assert flag["reason"] == (f"{p}:3: tokens/s/gpu x gpus is past any number of times "
                              "tokens/s: gpus or a throughput is wrong")


def test_a_ratio_past_the_largest_double_in_a_run_is_a_mismatch_and_no_warning(tmp_path,
                                                                               monkeypatch):
    p = tmp_path / "s.csv"  # a clean row: filed many at a time
    big = {"nodes": "1000000", "gpus": "1000000", "throughput_tokens_per_sec": "0.001"}
    p.write_text(",".join(HEADER) + "\n" + _row(0, **big) + "\n"
                 + _row(1, **big, throughput_tokens_per_sec_per_gpu="9" * 300) + "\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "overflow encountered" would be one
        runs, rows = _both([p], monkeypatch)
    assert runs == rows
    (point,) = runs[1].values()
    assert point["mismatched"] == [(2, 1e11), (3, math.inf)]  # 100 x 1e6 / 0.001


def test_a_large_file_without_a_clean_row_never_loads_numpy(tmp_path):
    p = tmp_path / "s.csv"  # quoted cells: no clean row to file many at a time
    p.write_text(",".join(HEADER) + "\n" + "\n".join(
        _row(n, config='"c"') for n in range(3)) + "\n")
    code = ("import sys; from ezpz_amsc.report import data; data.RUNS_FROM_BYTES = 0\n"
            "sweep = data.read_sweep(sys.argv[1:])\n"
            "print(sum(map(len, sweep.measured.values())), 'numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True,
                         check=True)
    assert out.stdout == "3 False\n"


def test_a_run_gives_each_point_its_repeats_in_order_past_32_bits():
    runs = CleanRuns()
    a, b = Point(), Point()
    a.sources.append(5)
    spelled, other = Counter({"aurora": 1}), Counter()
    runs.known(("aurora", "c", "1", "4"), a, 4, spelled)
    runs.known(("aurora", "c", "2", "8"), b, 8, other)
    texts = [_row(1, mfu="40.5", steps="100"),
             _row(2, nodes="2", gpus="8", throughput_tokens_per_sec="880.000", mfu="33.25"),
             _row(3, mfu="0.0", wall_time_sec="11.500", steps="100"),
             _row(4, throughput_tokens_per_sec="440.000"),  # gpus 0.91x off
             _row(5, system="polaris"),  # no point known: the long way
             _row(6, throughput_tokens_per_sec="0.001", throughput_tokens_per_sec_per_gpu="0.001"),
             _row(7, throughput_tokens_per_sec_per_gpu=""),  # the long way, which says so
             _row(8, throughput_tokens_per_sec="0.000")]  # below the bound: the long way
    assert not runs.add(texts, 3, [])
    slow: list[tuple[str, int]] = []
    runs.file(lambda lines: lines * 2**31, lambda text, line: slow.append((text, line)))
    assert slow == [(texts[4], 7), (texts[6], 9), (texts[7], 10)]
    assert len(a) == len(b) == 0  # filed, not yet handed out
    runs.hand_out()
    assert (a.sources.typecode, list(a.sources)) == (
        "q", [5, 3 * 2**31, 5 * 2**31, 6 * 2**31, 8 * 2**31])
    assert (b.sources.typecode, list(b.sources)) == ("q", [4 * 2**31])
    assert (list(a.tps), list(a.tps_per_gpu)) == ([400.0, 400.0, 440.0, 0.001],
                                                  [100.0, 100.0, 100.0, 0.001])
    assert (list(a.mfu_pct), a.mfu_zero, list(a.wall)) == ([40.5], 1, [10.0, 11.5, 10.0, 10.0])
    assert (list(b.tps), list(b.mfu_pct)) == ([880.0], [33.25])
    # each its own point's: b's row comes right after a's last in the handed-out order
    assert a.mismatched == [(6 * 2**31, 0.91), (8 * 2**31, 4.0)]  # both rates at the bound
    assert b.mismatched == [(4 * 2**31, 0.91)]
    assert a.steps == b.steps == {} and a.first == ""  # counted, handed out last
    runs.finish()
    assert a.steps == {"100": 2, "": 2} and b.steps == {"": 1}
    assert (spelled, other) == ({"aurora": 5}, {"aurora": 1})
    assert (a.first, a.last) == ("2026-08-11T00:00:01Z", "2026-08-11T00:00:06Z")


@pytest.mark.parametrize(("where", "code"), [(2**32 - 1, "I"), (2**32, "q")])
def test_sources_stay_four_bytes_to_the_last_number_that_fits(where, code):
    runs = CleanRuns()
    point = Point()
    runs.known(("aurora", "c", "1", "4"), point, 4, Counter())
    runs.add([_row(1)], 2, [])
    runs.file(lambda lines: lines * 0 + where, lambda text, line: None)
    runs.hand_out()
    assert (point.sources.typecode, list(point.sources)) == (code, [where])


def test_runs_are_filed_once_1024_rows_are_kept_then_twice_as_many_each_time():
    runs = CleanRuns()
    run = [_row(1)] * 256  # of no point known: every row the long way
    full = []
    for n in range(1, 189):
        if runs.add(run, 2, []):
            full.append(n)
            runs.file(lambda lines: lines, lambda text, line: None)
    # 1,024 rows, then 2,048, 4,096, 8,192 and 16,384 at most (256 a run)
    assert full == [4, 12, 28, 60, 124, 188]


def test_rows_dropped_from_runs_are_neither_filed_nor_read_the_long_way():
    runs = CleanRuns()
    point = Point()
    runs.known(("aurora", "c", "1", "4"), point, 4, Counter())
    runs.add([_row(1), _row(2, system="polaris"), _row(3)], 2, [1])
    runs.add([_row(4, system="polaris"), _row(5), _row(6)], 5, [0])
    slow: list[int] = []
    runs.file(lambda lines: lines, lambda text, line: slow.append(line))
    runs.hand_out()
    assert (slow, list(point.sources)) == ([], [2, 4, 6, 7])


def test_points_named_between_runs_are_found_whatever_the_length_of_their_cells():
    # The cells looked up are kept sorted at the width of the longest: a point named later
    # with longer (or shorter) cells must still be found, and no other taken for it.
    runs = CleanRuns()
    points: dict[str, Point] = {}
    slow: list[str] = []
    for k, system in enumerate(["b", "a" * 40, "bb", "a", "ccc", "a" * 39]):
        points[system] = Point()
        runs.known((system, "c", "1", "4"), points[system], 4, Counter())
        runs.add([_row(k, system=name) for name in [*points, "ab", "a" * 41]], 2, [])
        runs.file(lambda lines: lines, lambda text, _line: slow.append(text.split(",")[1]))
        runs.hand_out()
    assert slow == ["ab", "a" * 41] * 6  # never named
    assert {name: len(p) for name, p in points.items()} == {
        "b": 6, "a" * 40: 5, "bb": 4, "a": 3, "ccc": 2, "a" * 39: 1}


@given(st.lists(st.floats(min_value=0.001, max_value=1e15), min_size=1,
                max_size=12))
def test_a_median_of_values_sorted_is_statistics_median(values):
    assert data._median(sorted(values)) == statistics.median(values)
    assert data._spread(sorted(values)) == data.spread_pct(values)


def test_runs_seen_before_are_found_by_their_offsets_in_a_file_of_wide_characters(
        tmp_path, monkeypatch):
    # check reads a run seen before again at its byte offset: in a run of lines of
    # several-byte characters, after a line read the long way, the offsets must be bytes.
    p = tmp_path / "s.csv"
    lines = [_row(0, system="größe"), _row(1, mfu="0.0"), _row(2, system="größe"),
             _row(3, system="größe"), _row(2, system="größe"), _row(4, system="größe")]
    p.write_text(",".join(HEADER) + "\n" + "\n".join(lines) + "\n", encoding="utf-8")
    runs, rows = _both([p], monkeypatch)
    assert runs == rows
    rep = json.loads(runs[0])
    assert rep["problems"][1:] == [f"{p}:6: same run as line 4"]  # line 3: mfu 0.0
    assert [pt["sources"] for g in rep["groups"] for pt in g["points"]] == [
        [f"{p}:3"], [f"{p}:{n}" for n in (2, 4, 5, 7)]]  # aurora, then größe


# --- check's runs of clean rows ------------------------------------------------------------

def _row(n: int, **cells: str) -> str:
    base = {"timestamp": f"2026-08-11T00:{n // 60:02d}:{n % 60:02d}Z", "system": "aurora",
            "config": "c", "nodes": "1", "gpus": "4", "status": "pass",
            "wall_time_sec": "10.000", "throughput_tokens_per_sec": "400.000",
            "throughput_tokens_per_sec_per_gpu": "100.000", "mfu": "", "tflops": "",
            "final_loss": "", "steps": "", "error": ""}
    return ",".join({**base, **cells}[c] for c in HEADER)


def test_check_hands_runs_over_in_the_files_order_with_what_it_dropped(tmp_path):
    p = tmp_path / "r.csv"
    lines = [_row(0), _row(1), _row(0), _row(2, mfu="0.0"), _row(3), "", _row(4)]
    p.write_text(",".join(HEADER) + "\n" + "\n".join(lines) + "\n")
    seen: list[tuple] = []
    checked = check_results_file(
        p, lambda line, cells, _offset: seen.append(("row", line, cells[0][-3:-1])),
        on_clean=lambda texts, line, dropped: seen.append(
            ("run", line, [t[17:19] for t in texts], dropped)))
    assert seen == [
        ("run", 2, ["00", "01", "00"], [2]),  # line 4 is line 2's run again: dropped
        ("row", 5, "02"),  # mfu 0.0: read the long way (a problem, still used)
        ("run", 6, ["03"], []),
        ("run", 8, ["04"], []),  # line 7 is blank
    ]
    assert checked.rows == 6
    assert checked.problems[0] == f"{p}:4: same run as line 2"


def test_without_on_clean_or_with_on_cells_every_row_is_a_row(tmp_path):
    p = tmp_path / "r.csv"
    p.write_text(",".join(HEADER) + "\n" + _row(0) + "\n" + _row(1) + "\n")
    runs: list[int] = []
    rows: list[int] = []
    check_results_file(p, lambda line, *_: rows.append(line), lambda *_: None,
                       on_clean=lambda _t, line, _d: runs.append(line))
    assert (runs, rows) == ([], [2, 3])


# --- the report both ways ---------------------------------------------------------------

def _both(paths: list[Path], monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    """The whole reading, filed a run at a time and a row at a time."""
    out = []
    for threshold in (0, 1 << 62):
        monkeypatch.setattr(data, "RUNS_FROM_BYTES", threshold)
        sweep = read_sweep(paths)
        points = {k: {f: (list(v) if isinstance(v, array) else v)
                      for f in Point.__slots__ for v in [getattr(p, f)]}
                  for k, p in sweep.measured.items()}
        sides = {k: vars(s) for k, s in sides_of(sweep).items()}
        out.append((json.dumps(build_report(sweep), sort_keys=True), points, sides,
                    {k: dict(c) for k, c in sweep.spellings.items()}))
    return out


def _messy_sweep(rng: random.Random, rows: int) -> list[str]:
    """Rows of a few points in random order, most clean, some each way read the long way."""
    points = [(s, c, n, g) for s in ("aurora", "polaris", "größe-✓") for c in ("a/b", "c")
              for n, g in ((1, 4), (2, 8), (16, 64))]
    lines = []
    for i in range(rows):
        system, config, nodes, gpus = rng.choice(points)
        tpg = rng.choice(["100.000", "0.001", "0.000", "123456789012.345", "99.5",
                          "1234567890123456.5", "0007.250", ""])
        tps = f"{float(tpg or 0) * gpus * rng.choice([1, 1, 1, 0.975, 1.025, 0.98, 1.2]):.3f}"
        cells = {"timestamp": f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
                              f"{i // 3600 % 24:02d}:{i // 60 % 60:02d}:{i % 60:02d}Z",
                 "system": system, "config": config, "nodes": str(nodes), "gpus": str(gpus),
                 "status": rng.choice(["pass"] * 9 + ["fail"]),
                 "throughput_tokens_per_sec": rng.choice([tps] * 5 + ["", "0.000"]),
                 "throughput_tokens_per_sec_per_gpu": tpg,
                 "mfu": rng.choice(["", "", "41.5", ".5", "100", "0.0", "12.3456789012345678"]),
                 "wall_time_sec": rng.choice(["10.000", "3600.5", "00012"]),
                 "steps": rng.choice(["", "", "100", "999999999999999999", "0100"])}
        line = _row(0, **cells)
        if rng.random() < 0.02:
            line = line.replace(config, f'"{config}"', 1)  # quoted: not a plain line
        lines.append(line)
        if rng.random() < 0.01:
            lines.append(rng.choice(["", "x,y", lines[rng.randrange(len(lines))]]))
    return lines


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
def test_runs_filed_a_block_at_a_time_give_what_rows_give(tmp_path, monkeypatch, seed):
    rng = random.Random(seed)
    p = tmp_path / "s.csv"
    lines = _messy_sweep(rng, 3000)
    end = "\r\n" if seed == 5 else "\n"
    p.write_text(",".join(HEADER) + end + end.join(lines) + end, encoding="utf-8")
    runs, rows = _both([p], monkeypatch)
    assert runs == rows
    assert json.loads(runs[0])["rows"]["measured"] > 1000


def test_a_point_read_the_long_way_between_runs_keeps_its_repeats_in_order(tmp_path,
                                                                          monkeypatch):
    p = tmp_path / "s.csv"
    lines = [_row(0), _row(1, mfu="0.0"), _row(2, throughput_tokens_per_sec_per_gpu="99"),
             _row(3, throughput_tokens_per_sec='"400"'), _row(4, steps="7")]
    p.write_text(",".join(HEADER) + "\n" + "\n".join(lines) + "\n")
    runs, rows = _both([p], monkeypatch)
    assert runs == rows
    (point,) = runs[1].values()
    assert point["sources"] == [2, 3, 4, 5, 6]
    assert point["tps_per_gpu"] == [100.0, 100.0, 99.0, 100.0, 100.0]
    assert (point["mfu_zero"], point["steps"]) == (1, {"": 4, "7": 1})
    assert (point["first"], point["last"]) == ("2026-08-11T00:00:00Z", "2026-08-11T00:00:04Z")


@pytest.mark.parametrize(("threshold", "runs"), [(0, True), (-1, True), (1, False)])
def test_files_from_the_threshold_up_are_read_in_runs(tmp_path, monkeypatch, threshold, runs):
    p = tmp_path / "s.csv"
    p.write_text(",".join(HEADER) + "\n" + _row(0) + "\n" + _row(1) + "\n")
    q = tmp_path / "t.csv"
    q.write_text(",".join(HEADER) + "\n" + _row(2) + "\n")
    size = p.stat().st_size
    monkeypatch.setattr(data, "RUNS_FROM_BYTES", size + threshold)
    filed: list[int] = []
    real = columns.CleanRuns.add
    monkeypatch.setattr(columns.CleanRuns, "add",
                        lambda self, texts, *a: filed.append(len(texts)) or real(self, texts, *a))
    sweep = read_sweep([p])
    assert bool(filed) is runs and filed in ([], [2])
    assert [list(pt.sources) for pt in sweep.measured.values()] == [[2, 3]]
    filed.clear()
    monkeypatch.setattr(data, "RUNS_FROM_BYTES", 0)
    read_sweep([p, q])  # several files: run identities are kept, a row at a time
    assert filed == []
