"""What the command line prints besides rows (cli/output.py): notes, batch errors, JSON text,
options spelled as flags, and whether a stream is a terminal."""

from __future__ import annotations

import io

import pytest

from ezpz_amsc.cli import output
from ezpz_amsc.cli.output import batch_notes, json_text, say
from ezpz_amsc.errors import AmscError
from ezpz_amsc.text import opt


def test_say_spells_options_as_flags():
    assert say("plain") == "plain"
    assert say("pass " + opt("wall_time_sec", "SECONDS") + " or " + opt("gpus")) == (
        "pass --wall-time-sec SECONDS or --gpus")


def test_notes_and_errors_go_to_stderr_one_line_each(capsys):
    output.notes(["a", "pass " + opt("status", "fail")])
    output.notes(["hidden"], quiet=True)
    output.errors([("run/a", AmscError("no metrics; pass " + opt("status", "fail"))),
                   ("run/b", AmscError("run/b: already named"))])
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == ["note: a", "note: pass --status fail",
                                "error: run/a: no metrics; pass --status fail",
                                "error: run/b: already named"]


def test_batch_notes_lose_no_run():
    got = batch_notes([("A", ["x", "only a"]), ("B", ["x", "y"]), ("C", ["y", "x", "x"])], 4)
    assert got == ["x (runs A, B, C)", "A: only a", "y (runs B, C)"]
    assert batch_notes([("A", ["x"]), ("B", ["x"])], 2) == ["x (all 2 runs)"]
    assert batch_notes([("A", ["x"])], 1) == ["A: x"]
    assert batch_notes([], 0) == []
    named = "n " + opt("gpus", 2)
    assert [say(n) for n in batch_notes([("A", [named]), ("B", [named])], 3)] == [
        "n --gpus 2 (runs A, B)"]


def test_json_text_is_strict_and_keeps_text_as_it_is():
    assert json_text({"a": "größe", "n": [1]}) == '{"a": "größe", "n": [1]}'
    assert json_text([1], indent=2) == "[\n  1\n]"
    with pytest.raises(ValueError):
        json_text({"x": float("inf")})


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


class _Closed(io.StringIO):
    def isatty(self) -> bool:
        raise ValueError("I/O operation on closed file")


def test_colour_only_on_a_terminal_and_never_with_no_color():
    assert output.use_colour(_Tty(), {}) is True
    assert output.use_colour(_Tty(), {"NO_COLOR": "1"}) is False
    assert output.use_colour(_Tty(), {"NO_COLOR": ""}) is True
    assert output.use_colour(io.StringIO(), {}) is False
    assert output.is_terminal(_Closed()) is False
