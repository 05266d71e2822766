"""text.py, the text helpers ``--explain`` and the report share: colour, wrapping,
numbers and tables."""

from __future__ import annotations

import io
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ezpz_amsc.cli.output import use_colour
from ezpz_amsc.text import WIDTH, Paint, _wrap_words, number, printable, table, wrap

# --- colour ----------------------------------------------------------------------------------


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("stream", "env", "want"), [
    (_Tty(), {}, True),
    (_Tty(), {"NO_COLOR": ""}, True),  # no-color.org: only a non-empty value disables
    (_Tty(), {"NO_COLOR": "1"}, False),
    (io.StringIO(), {}, False),
])
def test_use_colour(stream, env, want):
    assert use_colour(stream, env) is want


def test_colour_off_when_the_stream_cannot_say():
    closed = io.StringIO()
    closed.close()  # isatty() raises ValueError
    assert use_colour(closed, {}) is False


def test_paint_styles_only_when_on_and_only_text():
    on = Paint(True)
    assert (on.bold("a"), on.dim("a"), on.warn("a"), on.good("a")) == (
        "\x1b[1ma\x1b[0m", "\x1b[2ma\x1b[0m", "\x1b[33ma\x1b[0m", "\x1b[36ma\x1b[0m")
    assert on.bold("") == ""  # no escape pair around nothing
    assert Paint(False).warn("a") == "a"


def test_printable_blanks_escapes_and_line_breaks():
    assert printable("a\x1b[31mb\nc\td") == "a [31mb c d"


# --- wrapping and numbers --------------------------------------------------------------------


def test_wrap_keeps_long_and_hyphenated_words_whole():
    word = "x" * 90
    assert wrap(f"a {word} b", "  ", "    ") == ["  a", f"    {word}", "    b"]
    lines = wrap("y " * 33 + "--wall-time-sec-given", "", "")
    assert lines == [("y " * 33).rstrip(), "--wall-time-sec-given"]
    assert wrap("", "! ", "  ") == ["!"]


@given(st.one_of(st.text(st.sampled_from("ab é:/-,\t\xa0"), max_size=300),
                 st.lists(st.tuples(st.text("ab/é-", min_size=1, max_size=90),
                                    st.sampled_from([" ", " ", "  ", "   "])), max_size=30)
                 .map(lambda words: "".join(w + gap for w, gap in words).rstrip())),
       st.sampled_from(["", "  ", "! ", "note: " * 3, "x" * 79, " " * 80]),
       st.sampled_from(["", "    ", " " * 30, " " * 80]),
       st.booleans())
def test_wrap_is_what_textwrap_makes_of_the_text(text, first, rest, break_long_words):
    # Words between single spaces take a shorter way than textwrap's; it must not show.
    want = textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=rest,
                         break_long_words=break_long_words, break_on_hyphens=False)
    assert wrap(text, first, rest, break_long_words=break_long_words) == (
        want or [first.rstrip()])


@pytest.mark.parametrize(("text", "first", "rest", "long", "fast"), [
    ("a:1  cfg on aurora, 2 nodes, " + "x" * 47 + " end", "  ", "      ", True, True),
    ("w " * 50 + "w", "! ", "  ", False, True),
    ("w " * 50 + "w", "", " " * 79, False, True),  # one column left: a word a line
    ("a " + "x" * 81, "", "", False, False),  # a word longer than its line
    ("a b " + "x" * 78, "", "   ", True, False),  # one textwrap would break
    ("a " + "x" * 78, " ", "", True, True),  # fits the next line whole
    ("a\tb", "", "", False, False), (" a", "", "", False, False), ("a ", "", "", False, False),
    ("", "", "", False, False), ("a  b", "", "", True, True),
    # longer than the first line (textwrap breaks it), though not than the next
    ("a " + "y" * 75, "x" * 10, "", True, False),
    ("a " + "y" * 70, "x" * 10, "", True, True),  # as long as the first line: whole
    ("y" * 80, "", "   ", True, True),  # fits its line exactly: nothing to break
])
def test_words_between_spaces_are_wrapped_the_short_way(text, first, rest, long, fast):
    lines = _wrap_words(text, first, rest, long)
    assert (lines is not None) is fast
    if fast:
        assert lines == textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=rest,
                                      break_long_words=long, break_on_hyphens=False)


@pytest.mark.parametrize(("x", "want"), [
    (None, "-"), (float("nan"), "-"), (0.0, "0"), (1e9, "1.00000e+09"),
    (999999999.0, "999999999"), (1e-4, "0.0001"), (9.99e-5, "9.99000e-05"),
    (1e6, "1000000"), (999999.0, "999999"), (-2.5e-5, "-2.50000e-05"),
    (999999.5, "1000000"), (-999999.7, "-1000000"), (531441.25, "531441"), (12.345678, "12.3457"),
])
def test_number(x, want):
    assert number(x) == want


# --- tables ----------------------------------------------------------------------------------


def test_a_table_aligns_right_unless_told_left_two_spaces_apart():
    rows = [("a", "bb"), ("ccc", "d")]
    assert table(rows) == ["  a  bb", "ccc   d"]
    assert table(rows, "l") == ["a    bb", "ccc   d"]
    assert table(rows, "rl") == ["  a  bb", "ccc  d"]  # trailing spaces dropped


def test_a_table_marks_each_line_in_two_columns():
    assert table([("n", "x"), ("1", "22")], marks=["", "!"]) == ["  n   x", "! 1  22"]


def test_a_table_refuses_an_alignment_for_more_columns_than_it_has():
    # a caller that miscounts its columns fails here, not with a table shifted by one
    with pytest.raises(ValueError, match="zip"):
        table([("a",), ("b",)], "lr")


def test_messages_name_options_as_data():
    from ezpz_amsc.text import Message, Opt, as_flag, joined, named_options, opt, spelled

    assert as_flag(Opt("gpus")) == "--gpus" and as_flag(Opt("gpus", "N")) == "--gpus N"
    m = "pass " + opt("wall_time_sec", "SECONDS") + " or " + opt("gpus")
    assert isinstance(m, Message)
    assert str(m) == m.render() == spelled(m) == "pass --wall-time-sec SECONDS or --gpus"
    assert m.render(lambda o: o.name.upper()) == "pass WALL_TIME_SEC or GPUS"
    assert [o.name for o in named_options(m)] == ["wall_time_sec", "gpus"]
    assert named_options("plain") == () and spelled("plain") == "plain"
    assert str(m + "; " + opt("status", "fail")) == (
        "pass --wall-time-sec SECONDS or --gpus; --status fail")
    assert joined(", ", []) == "" and joined(", ", ["a"]) == "a"
    assert str(joined(" ", [opt("a"), "b", opt("c", 1)])) == "--a b --c 1"
    assert opt("warmup", 0).options() == (Opt("warmup", "0"),)
