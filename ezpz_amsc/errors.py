"""Failures a user can cause, and the exit statuses they end in.

The pipeline raises :class:`AmscError`, a plain exception that knows nothing
about click. Its message is data: the options that settle it are named as
options (:func:`ezpz_amsc.text.opt`), so that the command line shows them as
flags and the finalize hook as its environment variables. The CLI turns it into
one ``error: ...`` line at its edge (:mod:`ezpz_amsc.cli.output`); the hook
catches it by type and logs it.
"""

from __future__ import annotations

import enum
import errno

from ezpz_amsc.text import Opt, Spelling, Text, as_flag, named_options, opt, spelled


class ExitStatus(enum.IntEnum):
    """Every exit status of every command: the one home of the numbers. Each command's
    ``--help`` says what the general meaning (:attr:`meaning`) means for it."""

    meaning: Text

    def __new__(cls, code: int, meaning: Text = "") -> ExitStatus:
        member = int.__new__(cls, code)
        member._value_ = code
        member.meaning = meaning
        return member

    OK = 0, "success"
    FAILED = 1, ("a run could not be exported, or a results file has problems; the error: "
                 "line says why and which flag settles it")
    USAGE = 2, ("bad command line: unknown option, bad value, missing " + opt("config")
                + " or RUN_DIR")
    NOTHING_COMPARABLE = 3, "nothing comparable (compare)"
    # What a shell reports for a process that SIGINT ended (128 + 2): Ctrl-C.
    INTERRUPTED = 130, "interrupted (Ctrl-C)"
    # What a shell reports for a process that SIGPIPE ended (128 + 13): stdout was closed
    # before everything was written (``... | head -1``).
    BROKEN_PIPE = 141, "stdout was closed before everything was written"


class AmscError(Exception):
    """A user-caused failure; its message says what went wrong and what to pass."""

    #: The exit status the CLI uses for it.
    exit_code: ExitStatus = ExitStatus.FAILED

    def __init__(self, message: Text) -> None:
        super().__init__(message)
        self.message: Text = message

    def render(self, spell: Spelling = as_flag) -> str:
        """The message as an edge shows it, its options spelled by ``spell``."""
        return spelled(self.message, spell)

    def options(self) -> tuple[Opt, ...]:
        """The options the message names: what settles the failure."""
        return named_options(self.message)

    def format_message(self) -> str:
        return self.render()

    def __str__(self) -> str:
        return self.render()


class SeveralAttempts(AmscError):
    """The records hold several attempts (a retried or resumed job) and none was chosen.

    Its own type so that the finalize hook, which runs at the end of the attempt
    that wrote the last records, can export that one instead of giving up.
    """

    def __init__(self, message: Text, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts


class NoStepTime(AmscError):
    """A run that logged no step, so its timestamp or wall time is unknown: the flags
    give them, or the finalize hook, which knows when the job ran."""


class AmscUsageError(AmscError):
    """Bad command-line usage (a bad option value): exit 2, like click's own."""

    exit_code = ExitStatus.USAGE


def reason(e: OSError) -> str:
    """What went wrong, as the system words it (``Permission denied``, not ``[Errno 13]
    Permission denied: 'x'``): a message names the path itself. An error raised
    without a reason (``OSError("...")``) gives its own text."""
    return e.strerror or str(e)


def os_error_text(e: OSError) -> str:
    """``PATH: reason`` for an OSError, with what to look at when access was denied."""
    why = reason(e)
    if e.errno == errno.EACCES:
        why += " (check its permissions and those of the folders above it)"
    return f"{e.filename}: {why}" if e.filename is not None else why
