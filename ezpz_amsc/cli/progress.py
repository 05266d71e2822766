"""A progress line for long batches: ``exporting 120 of 340 runs`` on a terminal's stderr.

Shown only where a person is watching and waiting: when stderr is a terminal,
not with ``-q``, and only once the work has taken :data:`DELAY_SEC` (a batch
that finishes sooner never shows one). It is one line, redrawn in place at
most every :data:`EVERY_SEC`, and erased before anything else is printed and
at the end, so what stays on the screen is exactly what a pipe would get.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TextIO

from ezpz_amsc.cli.output import is_terminal

DELAY_SEC = 2.0  # work this short shows no progress at all
EVERY_SEC = 0.1  # redraws at most this often: a terminal over ssh is slow
_ERASE = "\r\x1b[K"  # back to the start of the line, clear to its end


class Progress:
    """``done of total what`` on ``stream``, when it is a terminal and the work is long."""

    def __init__(self, total: int, what: str, verb: str, stream: TextIO, *, quiet: bool = False,
                 clock: Callable[[], float] | None = None) -> None:
        self.total, self.what, self.verb = total, what, verb
        self.stream, self.clock = stream, clock or time.monotonic
        self.on = not quiet and is_terminal(stream)
        self.start = self.clock()
        self.drawn_at: float | None = None  # when the line was last drawn; None: not shown

    def update(self, done: int) -> None:
        """``done`` items of :attr:`total` are finished."""
        if not self.on:
            return
        now = self.clock()
        if now - self.start < DELAY_SEC:
            return
        if self.drawn_at is not None and now - self.drawn_at < EVERY_SEC and done < self.total:
            return
        self.stream.write(f"{_ERASE}{self.verb} {done} of {self.total} {self.what}")
        self.stream.flush()
        self.drawn_at = now

    def clear(self) -> None:
        """Erase the line (before other output, and at the end); the next update redraws it."""
        if self.drawn_at is not None:
            self.stream.write(_ERASE)
            self.stream.flush()
            self.drawn_at = None
