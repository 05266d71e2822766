"""Text for a terminal, shared by ``--explain`` and the report: colour, wrapping, tables.

Every line either of them prints fits :data:`WIDTH` columns.
"""

from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Mapping, Sequence
from typing import TextIO

WIDTH = 80


def use_colour(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (no-color.org)."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", ""):
        return False
    return is_terminal(stream)


def is_terminal(stream: TextIO) -> bool:
    """Whether ``stream`` is a terminal (a closed or odd stream is not)."""
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):
        return False


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


def printable(text: str) -> str:
    """Text from a file people edit by hand, made safe for a terminal (no escapes, no breaks)."""
    if text.isprintable():  # nearly always: no copy
        return text
    return "".join(c if c.isprintable() else " " for c in text)


def wrap(text: str, first: str, rest: str, *, break_long_words: bool = False) -> list[str]:
    """``first + text`` in lines of at most :data:`WIDTH`, the next ones after ``rest``.

    Without ``break_long_words`` a word longer than a line (a path) stays whole.
    """
    return textwrap.wrap(text, WIDTH, initial_indent=first, subsequent_indent=rest,
                         break_long_words=break_long_words,
                         break_on_hyphens=False) or [first.rstrip()]


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
