"""The report as text (report/text.py): its exact layout, 80 columns, colour."""

from __future__ import annotations

import json

import pytest
from helpers import (
    run_report,
    strip_ansi,
)
from hypothesis import given
from hypothesis import strategies as st
from sweeps import (
    ANSI,
    CFG,
    EXPECTED,
    Sweep,
    _rate,
    _report_of,
    _report_on_a_tty,
    _table_cells,
    _text,
    _two_systems,
    scaling_sweep,
)

from ezpz_amsc.report.text import render_text


def test_synthetic_sweep_exact_report(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scaling_sweep().write(tmp_path / "sweep.csv")
    r = run_report("sweep.csv")
    assert r.exit_code == 0 and r.stderr == ""
    assert r.stdout == EXPECTED


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


@pytest.mark.parametrize("x,text", [
    (10, "10.0"), (9.999, "9.999"), (9.5, "9.500"), (12345.678, "12,345.7"), (0.001, "0.001")])
def test_rate_text_shows_three_decimals_below_ten(x, text):
    from ezpz_amsc.report.data import rate_text

    assert rate_text(x) == text


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
