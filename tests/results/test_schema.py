"""The row (results/schema.py and run/columns.py): status, error and wall
time resolved, numbers formatted, a failed run's row, cells as CSV."""

from __future__ import annotations

import math
import statistics

import pytest
from helpers import (
    LAUNCH,
    RUNS,
    error_line,
    expected_row,
    launch,
    launch_records,
    one_row,
    run_cli,
    set_metric,
    step,
    write_jsonl,
    write_run,
    write_run_info,
)
from hypothesis import given
from hypothesis import strategies as st

from ezpz_amsc.results.schema import (
    HEADER,
    MAX_CELL_CHARS,
    MAX_ROW_BYTES,
    build_row,
    dashboard_problems,
    fmt,
    formula_like,
    header_difference,
    parse_timestamp,
    render_csv,
    unsafe_cells,
    zero_mfu,
)

GOOD = RUNS / "fsdp_tp-2rank"
LAUNCH_ROW = expected_row(LAUNCH)


# -------------------------------------------------------------------- status and error


def test_status_and_error_columns(sunspot):
    row = one_row(run_cli(sunspot, "--config", "c", "--status", "fail", "--error", "NCCL timeout"))
    assert (row["status"], row["error"]) == ("fail", "NCCL timeout")
    assert row["throughput_tokens_per_sec"] == "34686.400"


def test_failed_run_without_steps_still_gives_a_row(tmp_path):
    run = tmp_path / "r"
    write_run_info(run, MACHINE="Aurora", NUM_NODES="8", GPUS_PER_NODE="12",
                   WORLD_SIZE_IN_USE="96", world_size="96")
    write_jsonl(run / "metrics-0.jsonl", [])
    r = run_cli(run, "--config", "c", "--status", "fail", "--error", "OOM in init",
                "--wall-time-sec", "61", "--timestamp", "2026-08-11T17:11:17Z")
    row = one_row(r)
    assert row == {
        "timestamp": "2026-08-11T17:11:17Z", "system": "Aurora", "config": "c", "nodes": "8",
        "gpus": "96", "status": "fail", "wall_time_sec": "61.000",
        "throughput_tokens_per_sec": "", "throughput_tokens_per_sec_per_gpu": "", "mfu": "",
        "tflops": "", "final_loss": "", "steps": "", "error": "OOM in init",
    }


def test_failed_run_without_steps_names_the_flags_it_needs(tmp_path):
    run = tmp_path / "r"
    write_run_info(run)
    line = error_line(run_cli(run, "--config", "c", "--status", "fail"))
    assert "no step was logged" in line
    assert line.endswith("pass --timestamp YYYY-MM-DDTHH:MM:SSZ --wall-time-sec SECONDS")


# --------------------------------------------------------------------------- wall time


def test_wall_time_flag_wins_and_is_noted(sunspot):
    r = run_cli(sunspot, "--config", "c", "--wall-time-sec", "812.5")
    assert one_row(r)["wall_time_sec"] == "812.500"
    assert "summed step time is" in r.stderr


def test_logging_gap_estimates_the_wall_time_of_every_step(tmp_path):
    run = write_run(tmp_path / "run", [step(i, dt=0.5, tps=1000.0, loss=1.0)
                                        for i in range(10, 301, 10)])
    row = one_row(run_cli(run, "--config", "c"))
    assert row["wall_time_sec"] == "150.000"  # ~300 steps x 0.5 s, never the 30 logged ones
    assert row["steps"] == "30"  # the records used: the estimate is only the wall time's


# ----------------------------------------------------------------------------- numbers


def test_tiny_positive_value_is_not_published_as_zero(tmp_path):
    run = launch(tmp_path)
    set_metric(run, "train/tflops", lambda i, v: v * 1e-4)
    tflops = [r["metrics"]["train/tflops"] * 1e-4 for r in launch_records()[1:]]
    want = statistics.median(tflops)
    row = one_row(run_cli(run, "--config", "c"))
    assert row["tflops"] == f"{want:.{2 - math.floor(math.log10(want))}f}"
    assert float(row["tflops"]) > 0 and abs(float(row["tflops"]) / want - 1) < 0.01


@pytest.mark.parametrize(("value", "decimals", "cell"), [
    (0.0004999, 3, "0.000500"), (1.234e-5, 3, "0.0000123"), (-1.234e-5, 3, "-0.0000123"),
    (1e-300, 3, "1.00e-300"), (0.0, 3, "0.000"), (-0.0, 3, "0.000"), (0.0005, 3, "0.001"),
    (1.5e-7, 6, "0.000000150"), (7.871283531, 6, "7.871284"),
    # up to 20 decimals plainly, then an exponent
    (5e-18, 3, "0.00000000000000000500"), (5e-19, 3, "5.00e-19"),
])
def test_fmt_keeps_non_zero_values_non_zero(value, decimals, cell):
    assert fmt(value, decimals) == cell


# ------------------------------------------------------------------------------- cells


def test_row_cells_survive_commas_and_quotes(tmp_path):
    r = run_cli(GOOD, "--config", 'a,b "c"', "--status", "fail", "--error", "x, y")
    row = one_row(r)
    assert (row["config"], row["error"]) == ('a,b "c"', "x, y")


# --- row.py: the cell formatter ---------------------------------------------------------------


@pytest.mark.parametrize("value,decimals,cell", [
    (0.0, 3, "0.000"),  # a median of exactly zero: the zero branch
    (0.0, 6, "0.000000"),
    (-0.0, 3, "0.000"),
    (-0.0004, 3, "-0.000400"),  # measured but below the rounding: 3 significant digits
    (0.0004, 3, "0.000400"),
    (1.234e-25, 3, "1.23e-25"),  # more than 20 decimals: exponent form
    (-1.5, 1, "-1.5"),
    (10.0, 3, "10.000"),  # zeros around a non-zero digit are kept
    (0.05, 1, "0.1"),
    (1234.5678, 3, "1234.568"),
])
def test_fmt_rounds_and_writes_zero_one_way(value, decimals, cell):
    assert fmt(value, decimals) == cell


@pytest.mark.parametrize("value", [None, math.nan, math.inf, -math.inf])
def test_fmt_leaves_an_unmeasured_value_empty_as_a_string(value):
    assert fmt(value, 3) == ""


def test_build_row_refuses_a_column_outside_the_schema():
    with pytest.raises(KeyError) as e:
        build_row({"tps": 1, "mfu_pct": 2, "nodes": 1})
    assert e.value.args == ("not in the schema: ['mfu_pct', 'tps']",)


def test_build_row_orders_and_stringifies_every_column():
    row = build_row({"nodes": 2, "config": "c", "mfu": None})
    assert list(row) == list(HEADER)
    assert row["nodes"] == "2" and row["config"] == "c"
    assert all(row[c] == "" for c in HEADER if c not in ("nodes", "config"))


# --- row.py: the dashboard's own reading ------------------------------------------------------

GOOD_CELLS = ["2026-11-29T22:18:43Z", "localhost", "c", "1", "2", "pass", "4.034", "3930.349",
        "1965.174", "", "0.014", "7.989204", "30", ""]


def test_a_short_row_lacks_its_last_required_cells_and_nothing_else():
    # Read as the dashboard reads a line with too few cells: the missing ones are
    # empty, not an error, and only the required ones are problems.
    assert dashboard_problems(GOOD_CELLS[:4]) == ["gpus is empty", "status is empty",
                                            "wall_time_sec is empty"]
    assert dashboard_problems(GOOD_CELLS[:7]) == []
    assert dashboard_problems([]) == [f"{c} is empty" for c in HEADER[:7]]


def test_a_row_as_a_mapping_may_lack_optional_columns():
    row = dict(zip(HEADER[:7], GOOD_CELLS[:7], strict=True))
    assert dashboard_problems(row) == []
    assert dashboard_problems({k: v for k, v in row.items() if k != "nodes"}) == [
        "nodes is empty"]


@pytest.mark.parametrize("column,cell,problem", [
    ("nodes", "0", "nodes '0' is below 1"),
    ("gpus", "-3", "gpus '-3' is below 1"),
    ("nodes", "1", None),  # 1 is the smallest count there is
    ("tflops", "inf", "tflops 'inf' is not finite"),
    ("mfu", "nan", "mfu 'nan' is not finite"),
    ("final_loss", "-0.5", None),
])
def test_dashboard_problems_counts_and_numbers(column, cell, problem):
    row = dict(zip(HEADER, GOOD_CELLS, strict=True)) | {column: cell}
    assert dashboard_problems(row) == ([problem] if problem else [])


# --- timestamps: strptime's reading, without strptime for the written form ----------------


def _strptime_reading(text: str) -> float | str:
    """What ``parse_timestamp`` promises: ``time.strptime``'s reading, or its refusal."""
    import calendar
    import time

    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return "refused"


def _reading(text: str) -> float | str:
    try:
        return parse_timestamp(text)
    except ValueError:
        return "refused"


@pytest.mark.parametrize("text", [
    "2026-08-11T17:11:17Z", "1970-01-01T00:00:00Z", "0001-01-01T00:00:00Z",
    "9999-12-31T23:59:59Z", "2024-02-29T12:00:00Z", "2026-12-31T23:59:60Z",
    "2026-12-31T23:59:61Z", "1969-12-31T23:59:59Z",
    # refused by both: no such day, hour, minute, second or year
    "2026-02-29T00:00:00Z", "2026-04-31T00:00:00Z", "2026-13-01T00:00:00Z",
    "2026-00-10T00:00:00Z", "2026-01-00T00:00:00Z", "2026-01-01T24:00:00Z",
    "2026-01-01T00:60:00Z", "2026-01-01T00:00:62Z", "0000-01-01T00:00:00Z",
    # not the written form: strptime decides (some of these it takes)
    "2026-8-1T1:1:1Z", "2026-08-11t17:11:17z", "2026-08-11T17:11:17", "2026-08-11 17:11:17Z",
    "2026-08-11T17:11:17Zx", " 2026-08-11T17:11:17Z", "٢٠٢٦-08-11T17:11:17Z",
    "2026-08-11T17:11:1²Z", "+026-08-11T17:11:17Z", "",
])
def test_a_timestamp_reads_as_strptime_reads_it(text):
    assert _reading(text) == _strptime_reading(text)


def test_a_timestamp_in_the_written_form_is_read_without_strptime(monkeypatch):
    import time

    def refuse(*_):
        raise AssertionError("strptime called")

    monkeypatch.setattr(time, "strptime", refuse)
    assert parse_timestamp("2026-08-11T17:11:17Z") == 1786468277.0
    assert parse_timestamp("1970-01-01T00:00:00Z") == 0.0
    # the last hour, minute and second strptime takes (61: it allows two leap seconds)
    assert parse_timestamp("1970-01-01T23:59:59Z") == 86399.0
    assert parse_timestamp("1970-01-01T23:59:61Z") == 86401.0
    with pytest.raises(AssertionError, match="strptime called"):  # any other text: strptime's
        parse_timestamp("2026-8-1T1:1:1Z")


@given(year=st.integers(0, 9999), month=st.integers(0, 13), day=st.integers(0, 32),
       hour=st.integers(0, 25), minute=st.integers(0, 61), second=st.integers(0, 63),
       lower=st.booleans())
def test_any_written_form_timestamp_reads_as_strptime_reads_it(year, month, day, hour, minute,
                                                               second, lower):
    text = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}Z"
    text = text.lower() if lower else text
    assert _reading(text) == _strptime_reading(text)


@given(st.text(alphabet="0123456789-T:Z t+٢²", max_size=22))
def test_any_text_reads_as_strptime_reads_it(text):
    assert _reading(text) == _strptime_reading(text)


def test_other_modules_name_columns_through_the_schema():
    from ezpz_amsc.results.schema import column

    assert column("mfu") == "mfu"
    with pytest.raises(KeyError) as err:
        column("tokens_per_sec")
    assert err.value.args == ("not a column of the results schema: 'tokens_per_sec'",)


def test_a_run_index_says_where_a_run_was_first_seen():
    from ezpz_amsc.results.schema import RunIndex, cells_key, run_key

    row = dict(zip(HEADER, ["2026-08-11T17:11:17Z", "Aurora", "c", "2", "24", "pass", "1.0",
                            *[""] * 7], strict=True))
    key = run_key(row)
    assert key == ("2026-08-11T17:11:17Z", "Aurora", "c", "2", "24")
    assert cells_key([row[c] for c in HEADER]) == key
    index = RunIndex()
    assert key not in index
    assert index.first(key, "a.csv:2") is None
    assert key in index
    assert index.first(key, "b.csv:7") == "a.csv:2"
    assert index.first(key, "b.csv:9") == "a.csv:2"  # always the first place, not the last
    assert index.first(("x",), 3) is None


# ------------------------------------------------------------------ cells a file must not hold


@pytest.mark.parametrize("text", [
    "=1+1", "+SUM(A1:A9)", "@SUM(1)", "-x", "-", "+", "\t1", "\r1", "\tx", "-2+3+cmd|' /C calc'!A0",
    "-1+HYPERLINK(\"x\")", "+1e", "-1e+", "-1.5e3x", "- 1", "-1 ", "--1", "+-1",
    "-.", "-nan", "-inf", "+1_000",
])
def test_a_cell_starting_like_a_formula_that_is_no_number_is_one(text):
    assert formula_like(text) is True


@pytest.mark.parametrize("text", [
    "-1", "+1", "-0.5", "+.5", "-5.", "-1e5", "+1.5E-3", "-12345678901234567890", "x-1", "a=b",
    "", "1+1", " =1", "Aurora", "agpt-2b/bs1",
])
def test_a_number_or_a_cell_not_starting_like_a_formula_is_none(text):
    assert formula_like(text) is False


def test_unsafe_cells_names_each_column_once():
    row = dict.fromkeys(HEADER, "")
    row |= {"system": "=HYPERLINK(\"x\")", "config": "c" * 4097, "error": "x" * 4096,
            "mfu": "-1.5"}
    assert unsafe_cells(row) == [
        "system '=HYPERLINK(\"x\")' would run as a formula when the CSV is opened in a "
        "spreadsheet (it starts with =, +, -, @, a tab or a carriage return and is not a "
        "number)",
        "config is 4,097 characters long (a cell holds at most 4,096)"]


def test_a_formula_cell_is_shown_by_its_first_40_characters():
    row = dict.fromkeys(HEADER, "") | {"error": "=" + "x" * 60}
    assert unsafe_cells(row) == [
        f"error {'=' + 'x' * 39!r} would run as a formula when the CSV is opened in a spreadsheet "
        "(it starts with =, +, -, @, a tab or a carriage return and is not a number)"]


def test_the_row_cap_holds_any_row_of_capped_cells():
    worst = ["\"" * MAX_CELL_CHARS] * len(HEADER)  # every quote doubled, every cell quoted
    assert len(render_csv([worst], header=False).encode()) <= MAX_ROW_BYTES
    wide = ["\U0001F600" * MAX_CELL_CHARS] * len(HEADER)  # 4 bytes a character
    assert len(render_csv([wide], header=False).encode()) <= MAX_ROW_BYTES


# ------------------------------------------------------------- how a header differs


@pytest.mark.parametrize("found, said", [
    (tuple(reversed(HEADER)), "the same columns in another order"),
    ((*HEADER[:-1], "mfu"), "lacks error"),
    ((*HEADER, "mfu"), "a column named twice"),
    ((*HEADER, "a", "b", "c", "d"), "has a, b, c, d"),
    ((*HEADER, "a", "b", "c", "d", "e"), "has a, b, c, d and 1 more"),
    ((*HEADER, "x" * 40), "has " + "x" * 40),
    ((*HEADER, "y" * 41), "has <41 characters>"),  # no longer than a column name
    ((*HEADER, "y" * 40), "has " + "y" * 40),
    ((*HEADER, "HF_TOKEN=hf_abcdefgh"), "has <20 characters>"),  # not name-like: not shown
    ((*HEADER, "wandb_key_0123456789abcdef"), "has <26 characters>"),  # letters and digits
    ((*HEADER, "tokens_per_sec_per_gpu_2"), "has tokens_per_sec_per_gpu_2"),
    (("z",) + HEADER[1:], "lacks timestamp; has z"),
])
def test_header_difference_says_what_differs(found, said):
    assert header_difference(list(found)) == said


@pytest.mark.parametrize("mfu, zero", [("0", True), ("0.000", True), ("-0.0", True),
                                       ("0.001", False), ("", False), ("n/a", False)])
def test_zero_mfu_is_a_number_equal_to_zero(mfu, zero):
    assert zero_mfu({"mfu": mfu}) is zero
    assert zero_mfu({}) is False  # a file without the column


def _strptime_epoch(text: str) -> float | None:
    """What parse_timestamp answered before its fast path: time.strptime's reading."""
    import calendar
    import time

    try:
        return float(calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


def _parsed(text: str) -> float | None:
    from ezpz_amsc.results.schema import parse_timestamp

    try:
        return parse_timestamp(text)
    except ValueError:
        return None


_DIGITS = st.sampled_from("0123456789")
_FIELD = st.one_of(st.text(_DIGITS, min_size=1, max_size=5),
                   st.sampled_from(["٢", " 1", "+1", "-1", "00", "60", "61", "62", "29", "31"]))


@given(year=st.one_of(st.integers(0, 9999).map("{:04d}".format), _FIELD),
       month=st.one_of(st.integers(0, 13).map("{:02d}".format), _FIELD),
       day=st.one_of(st.integers(0, 32).map("{:02d}".format), _FIELD),
       hour=st.one_of(st.integers(0, 25).map("{:02d}".format), _FIELD),
       minute=st.one_of(st.integers(0, 61).map("{:02d}".format), _FIELD),
       sec=st.one_of(st.integers(0, 62).map("{:02d}".format), _FIELD),
       seps=st.sampled_from(["-", "-", "-", "T", "Z", "t", "z", ":", " ", "/"]),
       tail=st.sampled_from(["Z", "z", "", "ZZ", " "]))
def test_a_timestamp_is_read_exactly_as_strptime_reads_it(year, month, day, hour, minute, sec,
                                                          seps, tail):
    text = f"{year}-{month}-{day}T{hour}:{minute}:{sec}{tail}"
    assert _parsed(text) == _strptime_epoch(text)
    odd = f"{year}{seps}{month}-{day}T{hour}:{minute}:{sec}{tail}"
    assert _parsed(odd) == _strptime_epoch(odd)


@given(st.text(max_size=24))
def test_any_text_is_a_timestamp_exactly_when_strptime_says_so(text):
    assert _parsed(text) == _strptime_epoch(text)


@pytest.mark.parametrize("text", ["2024-02-29T00:00:00Z", "2000-02-29T12:00:00Z",
                                  "0001-01-01T00:00:00Z", "9999-12-31T23:59:61Z",
                                  "2026-11-29T22:18:43Z"])
def test_timestamps_at_the_edges_of_the_calendar(text):
    assert _parsed(text) == _strptime_epoch(text) is not None


@pytest.mark.parametrize("text", ["1900-02-29T00:00:00Z", "2026-02-29T00:00:00Z",
                                  "0000-01-01T00:00:00Z", "2026-04-31T00:00:00Z",
                                  "2026-12-31T23:59:62Z", "2026-12-31T24:00:00Z",
                                  "2026-12-31T23:60:00Z", "2026-13-01T00:00:00Z",
                                  "2026-00-01T00:00:00Z", "2026-01-00T00:00:00Z"])
def test_dates_no_calendar_has_are_refused(text):
    assert _parsed(text) is None is _strptime_epoch(text)


def test_a_header_is_shown_up_to_its_limit_and_counted_past_it():
    from ezpz_amsc.results.schema import shown_header

    names = [f"c{i}" for i in range(13)]
    assert shown_header(names[:12]) == ",".join(names[:12])  # exactly the limit: all shown
    assert shown_header(names) == ",".join(names[:12]) + ",... (13 columns)"


@pytest.mark.parametrize("sep, name", [(";", "semicolons"), ("\t", "tabs")])
def test_a_header_of_exactly_the_required_columns_in_another_separator_is_named(sep, name):
    from ezpz_amsc.results.schema import REQUIRED, foreign_format

    got = foreign_format(sep.join(REQUIRED).encode() + b"\n")
    assert got is not None and got.startswith(f"has its columns separated by {name}")
    assert foreign_format(sep.join(REQUIRED[:-1]).encode() + b"\n") is None


def test_only_the_first_line_is_read_as_a_spreadsheets_header():
    """A ``;`` header on the second line (the first a note ending in ``;``) is no
    spreadsheet's save: the first line is the header, and it is none."""
    from ezpz_amsc.results.schema import REQUIRED, foreign_format

    assert foreign_format(b"exported by hand;\n" + ";".join(REQUIRED).encode() + b"\n") is None
