"""Reading a results file's records (results/rows.py): each with its byte offset and line
numbers, whatever the line ends; lines past the cap and fields past the csv module's limit
reported, and the reading going on after them."""

from __future__ import annotations

import csv
import io
import os

import pytest
from helpers import CSV_FIELD_LIMIT
from hypothesis import given
from hypothesis import strategies as st

from ezpz_amsc.results.rows import Record, read_records, record_at
from ezpz_amsc.results.schema import MAX_ROW_BYTES

LIMIT = CSV_FIELD_LIMIT  # conftest.py holds the csv module to it


def _line_of(n: int, fill: bytes = b"x") -> bytes:
    """``n`` bytes of fields, each under the csv module's field limit."""
    cell = fill * 50_000 + b","
    return (cell * (n // len(cell) + 1))[:n]


def _read(data: bytes, offset: int = 0, line: int = 1) -> list[tuple]:
    return [(r.offset, r.line, r.last_line, r.cells, r.problem)
            for r in read_records(io.BytesIO(data), offset, line)]


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_offsets_and_line_numbers_whatever_the_line_ends(end):
    data = end.join([b"h,x", b"a,1", b"b,2", b""])
    n = len(end)
    assert _read(data) == [(0, 1, 1, ["h", "x"], None), (3 + n, 2, 2, ["a", "1"], None),
                           (6 + 2 * n, 3, 3, ["b", "2"], None)]


def test_a_bare_cr_inside_a_line_ends_a_line_and_a_crlf_does_not_end_two():
    assert _read(b"a\rb,1\r\nc\n") == [(0, 1, 1, ["a"], None), (2, 2, 2, ["b", "1"], None),
                                     (7, 3, 3, ["c"], None)]
    assert _read(b"x\ry\n") == [(0, 1, 1, ["x"], None), (2, 2, 2, ["y"], None)]


def test_reading_starts_at_an_offset_with_the_line_number_given():
    data = b"h\na,1\nb,2\n"
    assert _read(data, 2, 2) == [(2, 2, 2, ["a", "1"], None), (6, 3, 3, ["b", "2"], None)]
    assert _read(data, 6, 40) == [(6, 40, 40, ["b", "2"], None)]


def test_a_quoted_field_over_several_lines_is_one_record_numbered_by_both_ends():
    data = b'h\n"a\nb\nc",1\nd,2\n'
    assert _read(data) == [(0, 1, 1, ["h"], None), (2, 2, 4, ["a\nb\nc", "1"], None),
                           (12, 5, 5, ["d", "2"], None)]


def test_a_bom_is_taken_off_the_first_cell_of_the_file_only():
    bom = "\ufeff".encode()
    data = bom + b"h,x\n" + bom + b"a,1\n"
    assert _read(data) == [(0, 1, 1, ["h", "x"], None), (7, 2, 2, ["\ufeffa", "1"], None)]
    assert _read(b"\n" + bom + b"a\n") == [(0, 1, 1, [], None), (1, 2, 2, ["\ufeffa"], None)]
    # before a quoted first cell (a spreadsheet's save): the quotes are the csv module's
    assert _read(bom + b'"timestamp","a,b"\n1,2\n') == [
        (0, 1, 1, ["timestamp", "a,b"], None), (21, 2, 2, ["1", "2"], None)]


def test_bytes_that_are_not_utf8_are_kept_as_lone_surrogates():
    assert _read(b"a\xff,1\n") == [(0, 1, 1, ["a\udcff", "1"], None)]


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_a_line_of_the_cap_is_read_and_one_byte_longer_is_not(end):
    at_cap = _line_of(MAX_ROW_BYTES) + end  # the cap counts the bytes before the line end
    over = _line_of(MAX_ROW_BYTES + 1, b"y") + end
    got = _read(at_cap + over + b"z" + end)
    assert [(o, n, m, None if c is None else len(",".join(c)), p) for o, n, m, c, p in got] == [
        (0, 1, 1, MAX_ROW_BYTES, None),
        (len(at_cap), 2, 2, None, f"line longer than {MAX_ROW_BYTES:,} bytes; not read"),
        (len(at_cap) + len(over), 3, 3, 1, None)]


def test_a_last_line_of_the_cap_without_a_line_end_is_read():
    got = _read(b"h\n" + _line_of(MAX_ROW_BYTES))
    assert [(o, n, c is not None and len(",".join(c)), p) for o, n, _, c, p in got] == [
        (0, 1, 1, None), (2, 2, MAX_ROW_BYTES, None)]
    got = _read(b"h\n" + _line_of(MAX_ROW_BYTES + 1))
    assert got[1][3:] == (None, f"line longer than {MAX_ROW_BYTES:,} bytes; not read")


def test_a_line_many_caps_long_is_passed_over_and_the_next_read():
    long = b"x" * (3 * MAX_ROW_BYTES + 5) + b"\n"
    assert _read(b"a\n" + long + b"b\n" + long) == [
        (0, 1, 1, ["a"], None),
        (2, 2, 2, None, f"line longer than {MAX_ROW_BYTES:,} bytes; not read"),
        (2 + len(long), 3, 3, ["b"], None),
        (4 + len(long), 4, 4, None, f"line longer than {MAX_ROW_BYTES:,} bytes; not read")]


def test_a_field_past_the_csv_limit_is_reported_and_reading_goes_on():
    big = b"a," + b"x" * (LIMIT + 1) + b"\n"
    assert _read(big + b"b,1\n") == [
        (0, 1, 1, None, f"field larger than field limit ({LIMIT}); read on from the next line"),
        (len(big), 2, 2, ["b", "1"], None)]


def test_a_quoted_field_that_never_ends_is_reported_where_it_started():
    data = b'h\n"a\n' + b"x" * 100_000 + b"\n" + b"y" * 100_000 + b"\nz\n"
    got = _read(data)
    assert got[0] == (0, 1, 1, ["h"], None)
    assert got[1] == (2, 2, 4, None,
                      f"field larger than field limit ({LIMIT}); read on from the next line")
    assert got[2:] == [(len(data) - 2, 5, 5, ["z"], None)]


def test_record_at_reads_the_record_at_an_offset_without_moving_the_file(tmp_path):
    p = tmp_path / "r.csv"
    p.write_bytes(b"h\na,1\nb,2\n" + b"x" * (MAX_ROW_BYTES + 1) + b"\n")
    fd = os.open(p, os.O_RDONLY)
    try:
        os.lseek(fd, 3, os.SEEK_SET)
        assert record_at(fd, 2) == ["a", "1"]
        assert record_at(fd, 6) == ["b", "2"]
        assert record_at(fd, 10) is None  # past the cap
        assert record_at(fd, 10 + MAX_ROW_BYTES + 2) is None  # at the end
        assert os.lseek(fd, 0, os.SEEK_CUR) == 3
    finally:
        os.close(fd)


def test_a_record_is_its_fields():
    r = Record(1, 2, 3, ["a"])
    assert (r.offset, r.line, r.last_line, r.cells, r.problem) == (1, 2, 3, ["a"], None)


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_a_long_last_line_with_its_line_end_is_the_last_record(end):
    data = b"h" + end + _line_of(MAX_ROW_BYTES + 1) + end
    assert _read(data) == [
        (0, 1, 1, ["h"], None),
        (1 + len(end), 2, 2, None, f"line longer than {MAX_ROW_BYTES:,} bytes; not read")]


# --- read_blocks: the same records, plain blocks given as their lines ----------------------------

def _expanded(data: bytes, block_bytes: int) -> list[tuple]:
    """read_blocks' records of ``data``, each plain line made the record it stands for."""
    from ezpz_amsc.results import rows as rows_module
    from ezpz_amsc.results.rows import Plain, read_blocks

    out = []
    with pytest.MonkeyPatch.context() as m:
        m.setattr(rows_module, "_BLOCK_BYTES", block_bytes)
        for item in read_blocks(io.BytesIO(data)):
            if not isinstance(item, Plain):
                out.append((item.offset, item.line, item.last_line, item.cells, item.problem))
                continue
            offset, line = item.offset, item.line
            for text in item.texts:
                out.append((offset, line, line, text.split(",") if text else [], None))
                offset += len(text.encode("utf-8", "surrogateescape")) + 1
                line += 1
    return out


_PIECES = [b"a,b", b"1,2,3", b"", b'"q,1",2', b'"multi\nline",x', b"\r", b"\r\n", b"\n",
           b"\xff\xfe", "\u00e9t\u00e9".encode(), b"\x00", "\ufeff".encode(),
           b",,,", b" , "]


@given(pieces=st.lists(st.sampled_from(_PIECES), max_size=40),
       block=st.sampled_from([1, 7, 16, 64, 1 << 16]))
def test_read_blocks_gives_the_records_read_records_gives(pieces, block):
    data = b"\n".join(pieces)
    assert _expanded(data, block) == _read(data)


def test_a_long_line_or_a_field_near_the_limit_goes_the_exact_way():
    data = (b"h\n" + _line_of(LIMIT + 10) + b"\n" + b"y" * (LIMIT + 1) + b"\nok,1\n"
            + b"x" * (MAX_ROW_BYTES + 5) + b"\nz\n")
    assert _expanded(data, 1 << 16) == _read(data)
    assert [r[4] is None for r in _read(data)] == [True, True, False, True, False, True]


# --- values pinned by mutation testing (tools/mutate.py) ---------------------------------------

_CAP_READ = MAX_ROW_BYTES + 2  # what _Lines reads of a line at a time


@pytest.mark.parametrize("end", [b"\r\n", b"\r", b"\n"], ids=["CRLF", "CR", "LF"])
@pytest.mark.parametrize("extra", [-1, 0, 1, _CAP_READ], ids=["-1", "0", "+1", "+cap"])
def test_a_long_line_whose_cr_ends_a_read_is_one_line(end, extra):
    # A line past the cap is read on a cap's worth at a time. When its CR is the last byte of
    # such a read, the LF after it (if any) ends the same line: not an empty line of its own,
    # which would number every later line one too high.
    long = b"x" * (2 * _CAP_READ - 1 + extra)  # extra 0: the CR is a read's last byte
    data = b"h" + end + long + end + b"z" + end
    assert _read(data) == [
        (0, 1, 1, ["h"], None),
        (1 + len(end), 2, 2, None, f"line longer than {MAX_ROW_BYTES:,} bytes; not read"),
        (1 + 2 * len(end) + len(long), 3, 3, ["z"], None)]
    assert _expanded(data, 1 << 16) == _read(data)


def test_read_records_starts_at_the_first_byte_and_numbers_from_one():
    got = [(r.offset, r.line, r.last_line, r.cells)
           for r in read_records(io.BytesIO(b"h,x\na,1\n"))]
    assert got == [(0, 1, 1, ["h", "x"]), (4, 2, 2, ["a", "1"])]


def test_a_crlf_line_of_the_cap_before_an_empty_line_is_read_and_the_empty_line_kept():
    at_cap = _line_of(MAX_ROW_BYTES)
    got = _read(b"h\n" + at_cap + b"\r\n\nz\n")
    assert [(o, n, c is not None and len(",".join(c)), p) for o, n, _, c, p in got] == [
        (0, 1, 1, None), (2, 2, MAX_ROW_BYTES, None), (4 + MAX_ROW_BYTES, 3, 0, None),
        (5 + MAX_ROW_BYTES, 4, 1, None)]


def test_a_long_line_ended_by_a_bare_cr_is_followed_by_the_lines_after_it():
    long = b"x" * (3 * MAX_ROW_BYTES)
    data = b"h\n" + long + b"\rz\n\nw\n"
    assert _read(data) == [
        (0, 1, 1, ["h"], None),
        (2, 2, 2, None, f"line longer than {MAX_ROW_BYTES:,} bytes; not read"),
        (3 + len(long), 3, 3, ["z"], None), (5 + len(long), 4, 4, [], None),
        (6 + len(long), 5, 5, ["w"], None)]


def _blocks(data: bytes, block_bytes: int = 1 << 16) -> list[tuple]:
    from ezpz_amsc.results import rows as rows_module
    from ezpz_amsc.results.rows import Plain, read_blocks

    with pytest.MonkeyPatch.context() as m:
        m.setattr(rows_module, "_BLOCK_BYTES", block_bytes)
        return [("plain", b.offset, b.line, b.texts, b.ascii) if isinstance(b, Plain)
                else ("record", b.offset, b.line, b.cells)
                for b in read_blocks(io.BytesIO(data))]


def test_read_blocks_gives_plain_lines_as_plain_and_reads_the_rest_the_exact_way():
    # In blocks of 8 bytes: the first record, a block with a NUL or a quote, and anything up
    # to the last line end of such a block are read the exact way; the rest as they stand.
    assert _blocks(b"h,x\na,1\nb,2\nc,3\nd,4\n", 8) == [
        ("record", 0, 1, ["h", "x"]), ("plain", 4, 2, ["a,1", "b,2"], True),
        ("plain", 12, 4, ["c,3", "d,4"], True)]
    assert _blocks(b"h,x\na,1\nb,2\nc\x00,3\nd,4\n", 8) == [
        ("record", 0, 1, ["h", "x"]), ("plain", 4, 2, ["a,1", "b,2"], True),
        ("record", 12, 4, ["c\x00", "3"]), ("plain", 17, 5, ["d,4"], True)]
    assert _blocks(b'h,x\na,1\n"q",2\nb,3\nc,4\n', 8) == [
        ("record", 0, 1, ["h", "x"]), ("plain", 4, 2, ["a,1"], True),
        ("record", 8, 3, ["q", "2"]), ("plain", 14, 4, ["b,3", "c,4"], True)]
    assert _blocks(b"\na\nb\n") == [("record", 0, 1, []), ("plain", 1, 2, ["a", "b"], True)]
    assert _blocks("h\n\u00e9,1\nz,2\n".encode()) == [
        ("record", 0, 1, ["h"]), ("plain", 2, 2, ["\u00e9,1", "z,2"], False)]


def test_a_line_near_the_field_limit_or_a_quarter_of_the_cap_goes_the_exact_way():
    # A plain line is shorter than the csv module's field limit and than a quarter of the
    # cap in characters (each at most 4 bytes): the longest it can be is one less than both.
    longest = MAX_ROW_BYTES // 4 - 1
    assert longest + 1 < LIMIT
    for n, plain in ((longest, True), (longest + 1, False)):
        got = _blocks(b"h\n" + b"x" * n + b"\n")
        assert got[1] == (("plain", 2, 2, ["x" * n], True) if plain
                          else ("record", 2, 2, ["x" * n]))
    old = csv.field_size_limit(50)  # a lower limit: now it is the one that binds
    try:
        data = b"h\n" + b"x" * 49 + b"\n" + b"y" * 50 + b"\n" + b"z" * 51 + b"\nok\n"
        assert _blocks(data, 52) == [  # in blocks of 52 bytes: a line each
            ("record", 0, 1, ["h"]), ("plain", 2, 2, ["x" * 49], True),
            ("record", 52, 3, ["y" * 50]), ("record", 103, 4, None),
            ("plain", 155, 5, ["ok"], True)]
        assert _expanded(data, 52) == _read(data)
    finally:
        csv.field_size_limit(old)


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r", b""], ids=["LF", "CRLF", "CR", "EOF"])
def test_record_at_reads_a_record_of_the_cap_whole_and_none_past_it(tmp_path, end):
    at_cap, over = _line_of(MAX_ROW_BYTES), _line_of(MAX_ROW_BYTES + 1)
    for line, cells in ((at_cap, at_cap.decode().split(",")), (over, None)):
        p = tmp_path / "r.csv"
        p.write_bytes(b"h\n" + line + end)
        fd = os.open(p, os.O_RDONLY)
        try:
            assert record_at(fd, 2) == cells
        finally:
            os.close(fd)
