"""The exception type for failures a user can cause.

The pipeline raises :class:`AmscError`, a plain exception that knows nothing
about click. The CLI turns it into one ``error: ...`` line at its edge
(:mod:`ezpz_amsc.cli`); the finalize hook catches it by type and logs it.
"""

from __future__ import annotations

import errno
import os


class AmscError(Exception):
    """A user-caused failure; its message says what went wrong and what to pass."""

    #: The exit status the CLI uses for it.
    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def format_message(self) -> str:
        return self.message

    def __str__(self) -> str:
        return self.message


class SeveralAttempts(AmscError):
    """The records hold several attempts (a retried or resumed job) and none was chosen.

    Its own type so that the finalize hook, which runs at the end of the attempt
    that wrote the last records, can export that one instead of giving up.
    """

    def __init__(self, message: str, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


class NoStepTime(AmscError):
    """A run that logged no step, so its timestamp or wall time is unknown: the flags
    give them, or the finalize hook, which knows when the job ran."""


class AmscUsageError(AmscError):
    """Bad command-line usage (a bad option value): exit 2, like click's own."""

    exit_code = 2


def plural(n: int, word: str) -> str:
    """``1 step``, ``2 steps``: counts in messages, notes and reports."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def about(path: str | os.PathLike[str], message: str) -> str:
    """``PATH: message``, unless the message already starts with that path (or a file in it)."""
    shown = os.fspath(path)
    for prefix in {shown.rstrip(os.sep) or shown, os.path.normpath(shown)}:
        if message.startswith((prefix + ":", prefix + os.sep)):
            return message
    return f"{shown}: {message}"


def os_error_text(e: OSError) -> str:
    """``PATH: reason`` for an OSError, with what to look at when access was denied."""
    reason = e.strerror or str(e)
    if e.errno == errno.EACCES:
        reason += " (check its permissions and those of the folders above it)"
    return f"{e.filename}: {reason}" if e.filename is not None else reason
