"""Text helpers for every layer: counts, paths, long numbers, wrapping, tables, colour, and
messages that name options.

Import-free beyond the standard library, so loading it costs nothing.

A message that tells the user which option settles a problem names that option as data
(:func:`opt`), not as a spelling: the command line shows it as ``--wall-time-sec SECONDS``,
the end-of-training hook as ``EZPZ_AMSC_WALL_TIME_SEC=SECONDS``. Each edge renders a
:class:`Message` with its own spelling (:meth:`Message.render`); ``str()`` gives the command
line's, the form the docs and the provenance records use.
"""

from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass

# Every line a report or --explain prints fits this many columns.
WIDTH = 80


def plural(n: int, word: str) -> str:
    """``1 step``, ``2 steps``: counts in messages, notes and reports."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def digits(text: str) -> str:
    """A long number shortened for a message: ``100000000000... (401 digits)``."""
    return text if len(text) <= 20 else f"{text[:12]}... ({len(text)} digits)"


# ------------------------------------------------------------------ messages naming options


@dataclass(frozen=True)
class Opt:
    """An option named in a message: its name (a field of the options, or a command's own
    option, with ``_`` between words) and the value shown beside it (``N``, ``last``)."""

    name: str
    value: str = ""


Spelling = Callable[[Opt], str]


def as_flag(option: Opt) -> str:
    """The command line's spelling: ``--wall-time-sec SECONDS``."""
    flag = "--" + option.name.replace("_", "-")
    return f"{flag} {option.value}" if option.value else flag


@dataclass(frozen=True)
class Message:
    """Text with options in it, each kept as an :class:`Opt` until an edge spells it.

    Built by adding text to :func:`opt`: ``f"{why}; pass " + opt("gpus", "N")``.
    """

    parts: tuple[str | Opt, ...]

    def __add__(self, other: Text) -> Message:
        return Message(self.parts + (other.parts if isinstance(other, Message) else (other,)))

    def __radd__(self, other: str) -> Message:
        return Message((other, *self.parts))

    def render(self, spell: Spelling = as_flag) -> str:
        return "".join(p if isinstance(p, str) else spell(p) for p in self.parts)

    def options(self) -> tuple[Opt, ...]:
        """The options the message names, in order."""
        return tuple(p for p in self.parts if isinstance(p, Opt))

    def __str__(self) -> str:
        return self.render()


Text = str | Message


def opt(name: str, value: object = "") -> Message:
    """A message naming one option (see :class:`Opt`); add text before and after it."""
    return Message((Opt(name, str(value)),))


def joined(sep: str, texts: Sequence[Text]) -> Text:
    """``sep.join(texts)`` for texts that may name options."""
    out: Text = ""
    for i, text in enumerate(texts):
        out = (out + sep + text) if i else text
    return out


def spelled(text: Text, spell: Spelling = as_flag) -> str:
    """``text`` as an edge shows it: a plain string as it is, a message with ``spell``."""
    return text.render(spell) if isinstance(text, Message) else text


def named_options(text: Text) -> tuple[Opt, ...]:
    """The options ``text`` names (none for a plain string)."""
    return text.options() if isinstance(text, Message) else ()


def about(path: str | os.PathLike[str], message: Text) -> Text:
    """``PATH: message``, unless the message already starts with that path (or a file in it)."""
    shown = os.fspath(path)
    lead = message.parts[0] if isinstance(message, Message) else message
    if isinstance(lead, str):
        for prefix in {shown.rstrip(os.sep) or shown, os.path.normpath(shown)}:
            if lead.startswith((prefix + ":", prefix + os.sep)):
                return message
    return f"{shown}: " + message


# ------------------------------------------------------------------ terminal text


def printable(text: str) -> str:
    """Text from a file people edit by hand, made safe for a terminal (no escapes, no breaks)."""
    if text.isprintable():  # nearly always: no copy
        return text
    return "".join(c if c.isprintable() else " " for c in text)


def wrap(text: str, first: str, rest: str, *, break_long_words: bool = False) -> list[str]:
    """``first + text`` in lines of at most :data:`WIDTH`, the next ones after ``rest``.

    Without ``break_long_words`` a word longer than a line (a path) stays whole.
    """
    lines = _wrap_words(text, first, rest, break_long_words)
    if lines is not None:
        return lines
    return textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=rest,
                         break_long_words=break_long_words,
                         break_on_hyphens=False) or [first.rstrip()]


def _wrap_words(text: str, first: str, rest: str, break_long_words: bool) -> list[str] | None:
    """What ``textwrap`` makes of words between spaces, the fast way (a report lists
    thousands of rows); None for other text. A word longer than its line is kept whole
    here; one that would be broken (``break_long_words``) is left to ``textwrap``."""
    if not text or not text.isprintable() or text[0] == " " or text[-1] == " ":
        return None
    if break_long_words and len(first) + len(text) > WIDTH:
        narrowest = WIDTH - max(len(first), len(rest))
        if max(map(len, text.split(" "))) > narrowest or " " * narrowest in text:
            return None
    lines, indent = [], first
    while len(indent) + len(text) > WIDTH:
        room = WIDTH - len(indent)
        if room < 1:
            return None
        # The words that fit end at the last space within the line, or just past it.
        end = room if text[room] == " " else text.rfind(" ", 0, room)
        if end <= 0:
            return None  # a word longer than the line
        lines.append(indent + text[:end].rstrip(" "))
        text, indent = text[end:].lstrip(" "), rest
    lines.append(indent + text)
    return lines


def wrap_at_commas(label: str, text: str) -> list[str]:
    """``label + text`` in lines of at most :data:`WIDTH`, broken after commas only, the
    next lines aligned under ``text``: a CSV header shown whole, each column name unbroken."""
    pieces = [f"{piece}," for piece in text.split(",")]
    pieces[-1] = pieces[-1][:-1]
    lines, line = [], label
    for piece in pieces:
        if len(line) + len(piece) > WIDTH and line != label and line.strip():
            lines.append(line.rstrip())
            line = " " * len(label)
        line += piece
    return [*lines, line.rstrip()]


def number(x: float | None, digits: int = 6) -> str:
    """A compact human number: ``digits`` significant digits, no exponent for everyday sizes."""
    if x is None or not math.isfinite(x):
        return "-"
    if x != 0 and (abs(x) >= 1e9 or abs(x) < 1e-4):
        return f"{x:.{digits - 1}e}"
    short = f"{x:.{digits}g}"
    return f"{x:.0f}" if "e" in short else short  # 999999.5 rounds to 1e+06: write 1000000


def table(rows: Sequence[Sequence[str]], align: str = "",
          marks: Sequence[str] | None = None) -> list[str]:
    """Aligned columns two spaces apart, right-aligned unless ``align`` has ``l`` there.

    With ``marks``, each line starts with its mark in two columns.
    """
    widths = [max(len(c) for c in col) for col in zip(*rows, strict=True)]
    align = align.ljust(len(widths), "r")
    out = []
    for i, cells in enumerate(rows):
        text = "  ".join(c.ljust(w) if a == "l" else c.rjust(w)
                         for c, w, a in zip(cells, widths, align, strict=True))
        out.append((f"{marks[i]:<2}{text}" if marks is not None else text).rstrip())
    return out


class Paint:
    """ANSI styles when ``on``; the text unchanged otherwise."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.on and text else text

    def bold(self, t: str) -> str:
        return self(t, "1")

    def dim(self, t: str) -> str:
        return self(t, "2")

    def warn(self, t: str) -> str:
        return self(t, "33")

    def good(self, t: str) -> str:
        return self(t, "36")
