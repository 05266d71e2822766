"""``check``'s reading of a results file (results/validate.py): the fast path (plain blocks,
clean rows in one match, run identities as digests) says exactly what the exact path says,
line for line. The command's own behaviour is tested in tests/cli/test_check_command.py."""

from __future__ import annotations

import csv
import io
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ezpz_amsc.results import rows as rows_module
from ezpz_amsc.results import seen as seen_module
from ezpz_amsc.results import validate
from ezpz_amsc.results.fields import bound_problems
from ezpz_amsc.results.rows import read_records
from ezpz_amsc.results.schema import (
    HEADER,
    KEY_COLUMNS,
    MAX_CELL_CHARS,
    MAX_PROBLEMS,
    dashboard_problems,
    header_difference,
    unsafe_cells,
    zero_mfu,
)


class ExactRuns:
    """The duplicate rule with whole identities in a dict: what SeenRuns must agree with."""

    def __init__(self, _key_at):
        self.first_at = {}

    def first(self, text, where, offset, key=None):
        key = tuple(text.split(",")) if key is None else key
        seen = self.first_at.get(key)
        if seen is None:
            self.first_at[key] = where
        return seen

    def release(self):
        pass  # holds no reader


def _exact_blocks(f, offset=0, line=1):
    yield from read_records(f, offset, line)


def _checked(path):
    cells, passed = [], []
    checked = validate.check_results_file(
        path, on_row=lambda line, row, offset: passed.append((line, row, offset)),
        on_cells=lambda line, row, offset: cells.append((line, row, offset)))
    assert checked.header_differs == (bool(checked.problems) and ":1: header differs from "
                                      "this tool's (" in checked.problems[0])
    return checked.rows, checked.problems, passed, cells


def _both_ways(path, block_bytes=64):
    """check's answer with the fast path (in small blocks) and with the exact one."""
    with pytest.MonkeyPatch.context() as m:
        m.setattr(rows_module, "_BLOCK_BYTES", block_bytes)
        fast = _checked(path)
    with pytest.MonkeyPatch.context() as m:
        m.setattr(validate, "read_blocks", _exact_blocks)
        m.setattr(validate, "SeenRuns", ExactRuns)
        exact = _checked(path)
    return fast, exact


GOOD = ["2026-11-29T22:18:43Z", "Aurora", "c", "1", "12", "pass", "4.034", "3930.349",
        "327.529", "31.5", "0.014", "7.989204", "30", ""]

# Per column: cells the fast path takes, and cells it must leave to the exact rules.
CELLS = {
    "timestamp": ["2026-11-29T22:18:43Z", "2024-02-29T00:00:00Z", "2026-02-29T00:00:00Z",
                  "2026-04-31T00:00:00Z", "2026-12-31T23:59:60Z", "2026-1-05T00:00:00Z",
                  "2026-01-05t00:00:00z", "0000-01-01T00:00:00Z", "2026-01-05T24:00:00Z", ""],
    "system": ["Aurora", "aurora", "AURORA", " Aurora", "=cmd", "", "  ", "Sun,spot",
               'say "hi"', "x" * 4097, "Aurora\u00e9"],
    "config": ["c", "c2", "-2", "-2+3", "@x", "\ta", "multi\nline", "c\r"],
    "nodes": ["1", "2", "0", "-1", "1.5", "01", " 2", "x", ""],
    "gpus": ["12", "1", "0", "1e3", ""],
    "status": ["pass", "fail", "PASS", ""],
    "wall_time_sec": ["4.034", "0", "-1", "inf", "nan", "1e400", ".5", "5.", "1_000", ""],
    "throughput_tokens_per_sec": ["3930.349", "", "-3", "1e5", " 7"],
    "throughput_tokens_per_sec_per_gpu": ["327.529", "", "0.000"],
    "mfu": ["31.5", "", "0", "0.000", "0.001", "100", "100.0", "100.5", "101", "-0",
            ".5", "99.99"],
    "tflops": ["0.014", "", "-0.1"],
    "final_loss": ["7.989204", "-2.5", "", "nan", "+1"],
    "steps": ["30", "", "0", "1.5", "-3"],
    "error": ["", "oom", "=HYPERLINK()", "x" * 5000],
}


@st.composite
def near_good(draw):
    """A good row with one or two cells from CELLS: mostly rows the clean pattern judges."""
    row = list(GOOD)
    for _ in range(draw(st.integers(1, 2))):
        at = draw(st.integers(0, len(HEADER) - 1))
        row[at] = draw(st.sampled_from(CELLS[HEADER[at]]))
    return row


rows_strategy = st.lists(
    st.one_of(
        st.just(GOOD),
        near_good(), near_good(),
        st.fixed_dictionaries({c: st.sampled_from(v) for c, v in CELLS.items()}).map(
            lambda d: [d[c] for c in HEADER]),
        st.lists(st.sampled_from(["a", "", "1"]), max_size=16),  # wrong cell counts, blanks
    ),
    max_size=12,
)


def _file(rows, line_end="\n", dup_every=0):
    out = io.StringIO()
    w = csv.writer(out, lineterminator=line_end)
    w.writerow(HEADER)
    for i, row in enumerate(rows):
        w.writerow(row)
        if dup_every and i % dup_every == 0:
            w.writerow(row)
    return out.getvalue().encode("utf-8", "surrogateescape")


@given(rows=rows_strategy, line_end=st.sampled_from(["\n", "\r\n"]),
       dup_every=st.integers(0, 3), block=st.sampled_from([16, 64, 300, 1 << 20]),
       junk=st.sampled_from([b"", b"\xff\xfe,x\n", b"\n\n", b"a,b\x00c\n", b'"open\n']))
def test_the_fast_path_says_what_the_exact_path_says(tmp_path_factory, rows, line_end,
                                                     dup_every, block, junk):
    path = tmp_path_factory.mktemp("f") / "runs.csv"
    data = _file(rows, line_end, dup_every)
    half = data.find(b"\n", len(data) // 2) + 1 or len(data)
    path.write_bytes(data[:half] + junk + data[half:])
    fast, exact = _both_ways(path, block)
    assert fast == exact


def test_a_long_clean_file_is_read_in_blocks_with_its_duplicates_found(tmp_path):
    rows = [[f"2026-01-{1 + k % 28:02d}T{k // 60:02d}:{k % 60:02d}:00Z", "Aurora", "c", "2",
             "12", "pass", "1.5", "", "", "", "", "", "", ""]
            for k in (i % 1000 for i in range(3000))]  # each run three times
    path = tmp_path / "runs.csv"
    path.write_bytes(_file(rows))
    fast, exact = _both_ways(path, block_bytes=4096)
    assert fast == exact
    rows_read, problems, passed, cells = fast
    assert (rows_read, len(problems), len(cells)) == (3000, 1000, 3000)  # 1,000 more counted
    assert validate.check_results_file(path).more == 1000
    assert problems[0] == f"{path}:1002: same run as line 2"
    assert problems[-1] == f"{path}:2001: same run as line 1001"
    assert [line for line, _, _ in passed] == list(range(2, 1002))
    assert passed[1][1] == rows[1]
    assert passed[1][2] == len(",".join(HEADER)) + 1 + len(",".join(rows[0])) + 1


def test_digests_that_all_collide_still_find_exactly_the_duplicates(tmp_path, monkeypatch):
    rows = [GOOD, [*GOOD[:2], "d", *GOOD[3:]], GOOD, [*GOOD[:2], "d", *GOOD[3:]],
            ["2026-11-29T22:18:43Z", "Aurora", "c,1", "1", "12", *GOOD[5:]],
            ["2026-11-29T22:18:43Z", "Aurora", "c", "1,1", "12", *GOOD[5:]]]
    path = tmp_path / "runs.csv"
    path.write_bytes(_file(rows))
    monkeypatch.setattr(seen_module, "_digest", lambda text: 7)
    rows_read, problems, passed, _ = _checked(path)
    # Lines 6 and 7 join to the same text ("c,1,1" twice) and are still two runs.
    assert (rows_read, problems) == (6, [f"{path}:4: same run as line 2",
                                         f"{path}:5: same run as line 3",
                                         f"{path}:7: nodes '1,1' is not an integer"])
    assert [line for line, _, _ in passed] == [2, 3, 6]
    assert (rows_read, problems, passed) == _both_ways(path)[1][:3]


def test_a_file_replaced_while_a_duplicate_is_confirmed_is_checked_again(tmp_path,
                                                                          monkeypatch):
    path = tmp_path / "runs.csv"
    path.write_bytes(_file([GOOD, GOOD]))
    real = validate.open_regular
    calls = []

    def reopen(p):
        calls.append(p)
        if len(calls) == 2:  # the second open: the confirmation's
            p.rename(tmp_path / "old.csv")
            p.write_bytes(_file([GOOD, GOOD]))
        return real(p)

    monkeypatch.setattr(validate, "open_regular", reopen)
    with pytest.raises(validate.AmscError, match=re.escape(
            f"{path}: replaced while it was read; check it again")):
        validate.check_results_file(path)


@given(cells=near_good().map(lambda row: dict(zip(HEADER, row, strict=True))),
       extra=st.text(alphabet=st.sampled_from("aZ09_ .-/=+@\t\u00e9,"), max_size=6))
def test_a_row_the_clean_pattern_takes_has_no_problem(cells, extra):
    for col in ("system", "config", "error"):
        row = {**cells, col: cells[col] + extra}
        text = ",".join(row[c] for c in HEADER)
        if validate._CLEAN_ROW.fullmatch(text) is None:
            continue
        assert text.count(",") == len(HEADER) - 1
        assert dashboard_problems(row) + bound_problems(row) + unsafe_cells(row) == []
        assert not zero_mfu(row)


# --- values pinned by mutation testing (tools/mutate.py) ---------------------------------------

# Per column: (cell, taken by the clean-row pattern), the rest of the row GOOD's. A cell not
# taken is judged cell by cell (it may still be clean); a cell taken must have no problem.
_X = "x" * (MAX_CELL_CHARS + 1)
_CLEAN_OR_NOT = {
    "timestamp": [("2026-11-29T22:18:43Z", True), ("2026-01-05T19:00:00Z", True),
                  ("0001-01-01T00:00:00Z", True), ("0000-01-01T00:00:00Z", False),
                  ("2026-02-28T00:00:00Z", True), ("2024-02-29T00:00:00Z", False),
                  ("2026-01-31T00:00:00Z", True), ("2026-03-31T00:00:00Z", True),
                  ("2026-04-30T00:00:00Z", True), ("2026-04-31T00:00:00Z", False),
                  ("2026-06-30T00:00:00Z", True), ("2026-06-31T00:00:00Z", False),
                  ("2026-13-01T00:00:00Z", False), ("2026-00-01T00:00:00Z", False),
                  ("2026-01-00T00:00:00Z", False), ("2026-12-31T23:59:60Z", True),
                  ("2026-12-31T23:59:61Z", True), ("2026-12-31T23:59:62Z", False),
                  ("2026-01-05T24:00:00Z", False), ("2026-01-05T23:60:00Z", False),
                  ("2026-01-05t00:00:00z", False), ("2026-1-05T00:00:00Z", False), ("", False)],
    "system": [("Aurora", True), ("_x", True), ("9", True), ("a b", True),
               ("Aurora\u00e9", True), (_X[1:], True), (_X, False), (" Aurora", False),
               ("=cmd", False), ("-2", False), ("+x", False), ("@x", False), ('a"b', False),
               ("a\x00b", False), ("", False)],
    "config": [("c", True), (_X[1:], True), (_X, False), ("\ta", False), ("", False)],
    "nodes": [("1", True), ("12", True), ("9" * 18, True), ("9" * 19, False), ("0", False),
              ("01", False), ("-1", False), ("1.5", False), ("", False)],
    "gpus": [("1", True), ("0", False), ("", False)],
    "status": [("pass", True), ("fail", True), ("PASS", False), ("", False)],
    "wall_time_sec": [("4.034", True), ("0", True), ("1" * 300, True), ("1" * 301, False),
                      ("1." + "0" * 300, True), ("1." + "0" * 301, False), (".5", False),
                      ("5.", False), ("-1", False), ("1e3", False), ("", False)],
    "throughput_tokens_per_sec": [("", True), ("3930.349", True), ("-3", False),
                                  (" 7", False)],
    "throughput_tokens_per_sec_per_gpu": [("", True), ("327.529", True), ("0.000", True),
                                          ("x", False)],
    "mfu": [("", True), ("31.5", True), ("5", True), ("99", True), ("99.99", True),
            ("100", True), ("100.0", True), ("100." + "0" * 300, True),
            ("100." + "0" * 301, False), ("0.001", True), ("0.5", True), (".5", True),
            ("0." + "0" * 299 + "1", True), ("1." + "0" * 300, True),
            ("1." + "0" * 301, False), ("0", False), ("0.0", False), ("0.000", False),
            ("100.5", False), ("100.01", False), ("101", False), ("05", False),
            ("00.5", False), ("-0", False), ("x", False)],
    "tflops": [("", True), ("0.014", True), ("-0.1", False)],
    "final_loss": [("", True), ("7.989204", True), ("-2.5", True), ("+1", False),
                   ("nan", False), ("-", False)],
    "steps": [("", True), ("30", True), ("0", False), ("1.5", False)],
    "error": [("", True), ("oom", True), (_X[1:], True), (_X, False), ("=HYPERLINK()", False)],
}


def test_the_clean_row_pattern_takes_exactly_these_cells():
    # Built here, not only read: the pattern is made while the module is imported, which no
    # test's coverage sees (docs/testing.md, Limits).
    pattern = validate._clean_row_pattern()
    assert pattern.pattern == validate._CLEAN_ROW.pattern
    wrong = []
    for col, cases in _CLEAN_OR_NOT.items():
        for cell, taken in cases:
            row = dict(zip(HEADER, GOOD, strict=True))
            row[col] = cell
            m = pattern.fullmatch(",".join(row[c] for c in HEADER))
            if (m is not None) != taken:
                wrong.append((col, cell[:40], taken))
            elif taken:
                assert m[1] == ",".join(row[c] for c in KEY_COLUMNS)
                assert dashboard_problems(row) + bound_problems(row) + unsafe_cells(row) == []
                assert not zero_mfu(row)
    assert wrong == []
    assert pattern.fullmatch(",".join(GOOD[:-1])) is None  # a cell short
    assert pattern.fullmatch(",".join(GOOD) + ",") is None  # a cell too many


def _offsets(data: bytes) -> list[int]:
    """The byte offset of each line of ``data`` after the header."""
    starts = [0] + [i + 1 for i, b in enumerate(data) if b == 0x0A]
    return starts[1:-1]


@pytest.mark.parametrize("in_order", [True, False], ids=["header", "header-reordered"])
def test_offsets_after_non_ascii_rows_are_byte_offsets_and_find_the_duplicate(tmp_path,
                                                                            in_order):
    # The offset of a row is where its run is read again to confirm a duplicate: counted in
    # characters after a row of non-ASCII text, it points into another row.
    header = list(HEADER) if in_order else list(reversed(HEADER))
    rows = [[*GOOD[:1], "Aurora\u00e9\u00e9\u00e9", *GOOD[2:]],
            ["2026-11-29T22:18:44Z", *GOOD[1:]], ["2026-11-29T22:18:45Z", *GOOD[1:]]]
    rows.append(rows[2])
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(header)
    for row in rows:
        w.writerow(row if in_order else list(reversed(row)))
    path = tmp_path / "runs.csv"
    path.write_bytes(out.getvalue().encode())
    rows_read, problems, passed, cells = _checked(path)
    offsets = _offsets(path.read_bytes())
    assert rows_read == 4
    assert problems == ([] if in_order else [
        f"{path}:1: header differs from this tool's ({header_difference(header)})"]) + [
        f"{path}:5: same run as line 4"]
    assert passed == [(2 + i, rows[i], offsets[i]) for i in range(3)]
    assert cells == [(2 + i, rows[i], offsets[i]) for i in range(4)]


@pytest.mark.parametrize("first_clean", [True, False])
def test_a_run_in_a_clean_row_and_in_a_row_judged_cell_by_cell_is_one_run(tmp_path,
                                                                         first_clean):
    unclean = [*GOOD[:9], "0", *GOOD[10:]]  # mfu 0: not clean, still read
    rows = [GOOD, unclean] if first_clean else [unclean, GOOD]
    path = tmp_path / "runs.csv"
    path.write_bytes(_file(rows))
    rows_read, problems, passed, _ = _checked(path)
    zero = f"{path}:{3 if first_clean else 2}: {validate.ZERO_MFU_PROBLEM.format('0')}"
    assert rows_read == 2
    assert problems == ([f"{path}:3: same run as line 2", zero] if first_clean
                        else [zero, f"{path}:3: same run as line 2"])
    assert [line for line, _, _ in passed] == [2]


def test_a_file_replaced_while_a_duplicate_is_confirmed_is_one_exact_error(tmp_path,
                                                                           monkeypatch):
    path = tmp_path / "runs.csv"
    path.write_bytes(_file([GOOD, GOOD]))
    real, calls = validate.open_regular, []

    def reopen(p):
        calls.append(p)
        if len(calls) == 2:
            p.rename(tmp_path / "old.csv")
            p.write_bytes(_file([GOOD, GOOD]))
        return real(p)

    monkeypatch.setattr(validate, "open_regular", reopen)
    with pytest.raises(validate.AmscError) as e:
        validate.check_results_file(path)
    assert str(e.value) == f"{path}: replaced while it was read; check it again"


@pytest.mark.parametrize("unreadable", [False, True], ids=["short", "unreadable"])
def test_a_row_rewritten_in_place_before_its_duplicate_is_confirmed_is_no_duplicate(
        tmp_path, monkeypatch, unreadable):
    # Rewritten in place (the same file), the first row is not there to confirm against.
    path = tmp_path / "runs.csv"
    data = _file([GOOD, GOOD])
    path.write_bytes(data)
    at = data.index(b"\n") + 1
    real, calls = validate.open_regular, []
    limit = csv.field_size_limit()

    def reopen(p):
        calls.append(p)
        if len(calls) == 2:
            if unreadable:  # a field past the csv module's limit, lowered for it
                csv.field_size_limit(40)
            with open(p, "r+b") as f:
                f.seek(at)
                f.write(b"x" * 41 + b"\n" if unreadable else b"a,b,c\n")
                f.truncate()
        return real(p)

    monkeypatch.setattr(validate, "open_regular", reopen)
    try:
        rows_read, problems, passed, _ = _checked(path)
    finally:
        csv.field_size_limit(limit)
    assert len(calls) == 2
    assert (rows_read, problems, [n for n, _, _ in passed]) == (2, [], [2, 3])


# ------------------------------------------------------------ git's conflict markers


def _row_line(stamp: str, config: str = "c") -> str:
    return f"{stamp},Aurora,{config},1,12,pass,1.000,,,,,,10,\n"


HEADER_LINE = ",".join(HEADER) + "\n"
T1, T2, T3 = "2026-08-11T17:11:17Z", "2026-08-11T17:11:18Z", "2026-08-11T17:11:19Z"
FIX = ("keep the rows of both sides (not the common ancestor's lines between ||||||| and "
       "=======, if any) and delete the marker lines; a results repository with merge=union "
       "in .gitattributes (ezpz-amsc init) merges appended rows without conflicts")


@pytest.mark.parametrize("diff3", [False, True], ids=["merge", "diff3"])
def test_a_merge_conflict_is_named_with_its_line_range(tmp_path, diff3):
    p = tmp_path / "runs.csv"
    base = "||||||| merged common ancestors\n" if diff3 else ""
    p.write_text(HEADER_LINE + _row_line(T1) + "<<<<<<< HEAD\n" + _row_line(T2) + base
                 + "=======\n" + _row_line(T3) + ">>>>>>> their-branch\n" + _row_line(T1, "d"))
    checked = validate.check_results_file(p)
    end = 8 if diff3 else 7
    assert checked.problems == [
        f"{p}:3-{end}: a git merge conflict (marker lines <<<<<<<, =======, >>>>>>>): {FIX}"]
    assert checked.conflicts == [f"3-{end}"]
    assert checked.rows == 4  # the rows of both sides are rows: the markers are not


@pytest.mark.parametrize("branch", ["fix,retry", "fix,retry,2"])
def test_a_marker_naming_a_branch_with_a_comma_is_a_marker(tmp_path, branch):
    """git writes the branch after the marker: ``>>>>>>> fix,retry`` reads as two cells,
    ``fix,retry,2`` as three."""
    p = tmp_path / "runs.csv"
    p.write_text(HEADER_LINE + "<<<<<<< HEAD,main\n" + _row_line(T2) + "=======\n"
                 + _row_line(T3) + f">>>>>>> {branch}\n")
    checked = validate.check_results_file(p)
    assert checked.problems == [
        f"{p}:2-6: a git merge conflict (marker lines <<<<<<<, =======, >>>>>>>): {FIX}"]
    assert checked.conflicts == ["2-6"] and checked.rows == 2


def test_a_line_that_only_starts_like_a_marker_is_a_row(tmp_path):
    """``=======,x`` is no marker (the middle one is alone on its line): a short row."""
    p = tmp_path / "runs.csv"
    p.write_text(HEADER_LINE + "=======,x\n" + _row_line(T1))
    checked = validate.check_results_file(p)
    assert checked.problems == [f"{p}:2: 2 cells, header has {len(HEADER)}"]
    assert (checked.conflicts, checked.rows) == ([], 2)


def test_an_unended_conflict_and_a_stray_marker_are_named(tmp_path):
    p = tmp_path / "runs.csv"
    p.write_text(HEADER_LINE + "=======\n" + _row_line(T1) + "<<<<<<< HEAD\n" + _row_line(T2)
                 + "<<<<<<< again\n" + _row_line(T3))
    checked = validate.check_results_file(p)
    assert checked.problems == [
        f"{p}:2: a git merge conflict marker (=======) outside a conflict: delete the line",
        f"{p}:4: a git merge conflict starts here (<<<<<<<) and never ends (>>>>>>>): {FIX}",
        f"{p}:6: a git merge conflict starts here (<<<<<<<) and never ends (>>>>>>>): {FIX}"]
    # the first runs up to the line before the second opening; the second to the end
    assert checked.conflicts == ["4-5", "6-"]


def test_a_line_like_a_marker_is_no_marker(tmp_path):
    p = tmp_path / "runs.csv"
    p.write_text(HEADER_LINE + "<<<<<<<<\n" + "=======x\n" + ">>>>>>>x\n")
    assert validate.check_results_file(p).problems == [
        f"{p}:{n}: 1 cells, header has 14" for n in (2, 3, 4)]


# ------------------------------------------------ a spreadsheet's save: its cause named


@pytest.mark.parametrize("data, cause", [
    (HEADER_LINE.replace(",", ";").encode(), "has its columns separated by semicolons"),
    (HEADER_LINE.replace(",", "\t").encode(), "has its columns separated by tabs"),
    (HEADER_LINE.encode("utf-16"), "is UTF-16 text"),
    (HEADER_LINE.encode("utf-16-le"), "is UTF-16 text"),
    (HEADER_LINE.encode("utf-16-be"), "is UTF-16 text"),
])
def test_a_semicolon_or_utf16_export_is_named_by_its_cause(tmp_path, data, cause):
    p = tmp_path / "runs.csv"
    p.write_bytes(data + _row_line(T1).encode())
    with pytest.raises(validate.AmscError) as e:
        validate.check_results_file(p)
    assert str(e.value).startswith(f"{p}: {cause}")
    assert "lacks required" not in str(e.value)


def test_a_header_lacking_columns_is_still_said_so(tmp_path):
    p = tmp_path / "runs.csv"
    p.write_text("timestamp;system\n")
    with pytest.raises(validate.AmscError) as e:
        validate.check_results_file(p)
    assert str(e.value) == (f"{p}: header lacks required columns timestamp, system, config, "
                            "nodes, gpus, status, wall_time_sec")


# ------------------------------------------------------------ bounded problems


def test_at_most_a_thousand_problems_are_kept_and_the_rest_counted(tmp_path):
    p = tmp_path / "runs.csv"
    p.write_text(HEADER_LINE + "x\n" * 1500 + _row_line(T1) * 2)
    checked = validate.check_results_file(p)
    assert MAX_PROBLEMS == 1000
    assert len(checked.problems) == 1000
    assert checked.problems[-1] == f"{p}:1001: 1 cells, header has 14"
    assert checked.more == 501  # 500 lines, and the run seen twice
    assert checked.rows == 1502
    assert validate.more_problems(p, checked.more) == [
        f"{p}: 501 more problems not listed (at most 1,000 a file are)"]
    assert validate.more_problems(p, 1) == [
        f"{p}: 1 more problem not listed (at most 1,000 a file are)"]
    assert validate.more_problems(p, 0) == []


def test_a_capped_list_keeps_its_first_items():
    kept = validate.Capped(3)
    kept.extend(range(5))
    kept.append(9)
    assert (list(kept), kept.more) == ([0, 1, 2], 3)


# ------------------------------------------------- memory on hostile files (check, report)

_MEASURED = r"""
import json, resource, subprocess, sys
r = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(json.dumps({"code": r.returncode, "out": r.stdout[-500:], "err": r.stderr,
                  "rss": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""


def _measured(*args: object) -> dict:
    """A command's exit status, stderr and peak memory (its own process alone)."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    exe = Path(sys.executable).with_name("ezpz-amsc")
    r = subprocess.run([sys.executable, "-c", _MEASURED, str(exe), *map(str, args)],
                       capture_output=True, text=True, timeout=1800)
    return json.loads(r.stdout)


def _hostile(path, kind: str):
    with open(path, "wb") as f:
        f.write(HEADER_LINE.encode())
        if kind == "lines":  # two million one-cell lines (ten million: docs/hostile-input.md)
            block = b"x\n" * 1_000_000
            for _ in range(2):
                f.write(block)
        else:  # one quoted field of 1 GB (a hole: no disk), then a good row
            f.write(b'"')
            f.seek((1 << 30), 1)
            f.write(b'"\n' + _row_line(T1).encode())


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["lines", "field"])
@pytest.mark.parametrize("command", ["check", "report"])
def test_a_hostile_file_ends_in_its_errors_and_a_summary_in_bounded_memory(tmp_path, kind,
                                                                           command):
    p = tmp_path / "runs.csv"
    _hostile(p, kind)
    got = _measured(command, p)
    err = got["err"]
    assert "Traceback" not in err and "MemoryError" not in err
    assert got["rss"] < 100 << 20, f"{got['rss'] / 2**20:.0f} MB"
    lines = err.splitlines()
    if kind == "lines":
        assert len(lines) <= 1000 + 3
        assert f"{p}: 1,999,000 more problems not listed (at most 1,000 a file are)" in (
            line.removeprefix("note: ") for line in lines)
        if command == "check":
            assert got["code"] == 1
            assert lines[-1] == f"error: {p}: 2000000 problems in 2000000 rows"
    else:
        assert f"{p}:2: line longer than 229,418 bytes; not read" in (
            line.removeprefix("note: ") for line in lines)
        if command == "check":
            assert got["code"] == 1
            assert lines[-1] == f"error: {p}: 1 problem in 2 rows"
