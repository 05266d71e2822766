"""Property-based: hand-edited results files are appended to correctly or left untouched."""

from __future__ import annotations

import csv
import io
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from ezpz_amsc.errors import AmscError
from ezpz_amsc.results.append import append_rows
from ezpz_amsc.results.schema import HEADER, dashboard_problems, render_csv

ROW = ["2026-08-11T17:11:17Z", "Aurora", "agpt-2b/bs1,tp1", "2", "24", "pass", "61.500",
       "34686.000", "1445.250", "", "", "2.712345", "6", 'said "hi"']
HEADER_LINE = ",".join(HEADER)

csv_line = st.one_of(
    st.just(HEADER_LINE),
    st.just(render_csv([ROW], header=False).rstrip("\n")),
    st.lists(st.text(max_size=6), max_size=len(HEADER) + 1).map(
        lambda cells: render_csv([cells], header=False).rstrip("\r\n")),
    st.text(max_size=20),
)


@st.composite
def results_file(draw: st.DrawFn) -> bytes:
    """What a person might leave in a results file: edits, other tools' endings, junk."""
    first = draw(st.one_of(st.just(HEADER_LINE), st.just(HEADER_LINE), csv_line,
                           st.just(",".join(reversed(HEADER))), st.just(HEADER_LINE + ",extra")))
    lines = [first, *draw(st.lists(csv_line, max_size=4))]
    sep = draw(st.sampled_from(("\n", "\r\n", "\r")))
    text = sep.join(lines) + draw(st.sampled_from((sep, "", sep * 2)))
    data = text.encode("utf-8")
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    if draw(st.integers(0, 5)) == 3:
        data += draw(st.binary(max_size=8))  # stray bytes after the last line
    return data


@pytest.mark.slow
@given(before=results_file())
def test_append_keeps_old_bytes_and_adds_one_parseable_row(scratch, before):
    root = Path(tempfile.mkdtemp(dir=scratch))
    try:
        path = root / "results.csv"
        path.write_bytes(before)
        try:
            append_rows(path, [ROW])
        except AmscError as e:
            event("refused")
            # One error line; only a header refusal adds both headers on indented lines.
            first, *details = e.format_message().split("\n")
            assert all(line.startswith("  ") for line in details)
            assert not details or "existing header differs" in first
            assert path.read_bytes() == before  # refused: byte-identical
            assert [p.name for p in root.iterdir()] == ["results.csv"]  # no lock file
            return
        event("appended")
        assert [p.name for p in root.iterdir()] == ["results.csv"]
        after = path.read_bytes()
        assert after.startswith(before)  # nothing rewritten, only added
        # The old header was this tool's (or there was none) ...
        head = before.lstrip(b"\xef\xbb\xbf").splitlines()[:1]
        assert head in ([], [b""], [HEADER_LINE.encode()]), head
        # ... and the added bytes are one whole row on a line of its own (plus the
        # header if the file held none). Bytes already in the file are not judged.
        added = after[len(before):].decode("utf-8")
        rows = list(csv.reader(io.StringIO(added, newline="")))
        if rows and rows[0] == []:  # the newline a file without a final one needed
            assert not before.endswith((b"\n", b"\r")) and before
            rows.pop(0)
        else:
            assert not before.strip(b"\xef\xbb\xbf\r\n \t") or before.endswith((b"\n", b"\r"))
        if tuple(rows[0]) == HEADER:
            assert not before.strip(b"\xef\xbb\xbf\r\n \t")
            rows.pop(0)
        assert rows == [ROW], rows
        assert dashboard_problems(rows[0]) == []
    finally:
        shutil.rmtree(root)
