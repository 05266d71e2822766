"""What an export is asked to do: the options, their names, and their validation.

One home for the CLI, the finalize hook and the pipeline. An
:class:`ExportOptions` validates itself when it is built, so every one that
exists is valid and the pipeline never checks it again. Numpy-free and
click-free: the CLI and the hook import it on every call.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import MISSING, dataclass, fields
from typing import Any

from ezpz_amsc.errors import AmscUsageError
from ezpz_amsc.results.schema import (
    CLOCK_SLACK_SEC,
    LOCK_TIMEOUT_SEC,
    MAX_COUNT,
    MAX_LINE_BYTES,
    MAX_LOCK_TIMEOUT_SEC,
    STATUSES,
    TIMESTAMP_MIN,
    cell_problem,
    format_timestamp,
    parse_timestamp,
)
from ezpz_amsc.text import Text, digits, opt, spelled

REDUCERS = ("median", "mean", "max", "min", "last")
CONFIG_EXAMPLE = "agpt-2b/bs1/seq2048/tp1"
# The finalize hook's settings (read when it runs, so a job script can ``export`` them).
ENV_CONFIG = "EZPZ_AMSC_CONFIG"
ENV_APPEND = "EZPZ_AMSC_APPEND"
ENV_STATUS = "EZPZ_AMSC_STATUS"
ENV_WALL_TIME = "EZPZ_AMSC_WALL_TIME_SEC"
ENV_PROVENANCE = "EZPZ_AMSC_PROVENANCE"  # with ENV_APPEND: the folder of provenance records
ENV_LOCK_TIMEOUT = "EZPZ_AMSC_LOCK_TIMEOUT"  # seconds the hook waits for the results file's lock
ENV_HASH_BUDGET = "EZPZ_AMSC_HASH_BUDGET"  # bytes of metrics files the hook's record hashes
# The option each variable sets: how the hook names an option in its advice.
ENV_OF = {"config": ENV_CONFIG, "append": ENV_APPEND, "status": ENV_STATUS,
          "wall_time_sec": ENV_WALL_TIME, "provenance": ENV_PROVENANCE,
          "lock_timeout": ENV_LOCK_TIMEOUT, "hash_budget": ENV_HASH_BUDGET}
# ``stdlib``: parse metrics with the standard library's json even where orjson is installed
# (the tests run the parser on both paths).
ENV_JSON = "EZPZ_AMSC_JSON"
# The hash runs on a thread beside the parse (steps._Hasher): ~1 s of one core per GiB.
# 1 GiB covers a 1,000,000-step run of one rank (~800 MB), the largest benchmark case.
HASH_BUDGET_BYTES = 1 << 30
_BYTE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class OptionError(AmscUsageError):
    """One bad option value: ``<subject> <reason>``, e.g. ``--warmup must be 0 or more, got -1``.

    ``name`` is the :class:`ExportOptions` field, so that the CLI can point at
    its flag and the hook at its environment variable. ``standalone`` marks a
    message the CLI shows as it is rather than as click's ``invalid value for``.
    """

    def __init__(self, name: str, reason: Text, subject: Text | None = None,
                 standalone: bool = False) -> None:
        self.name, self.reason, self.standalone = name, reason, standalone
        self.subject: Text = opt(name) if subject is None else subject
        super().__init__(self.subject + " " + reason)


@dataclass(frozen=True)
class ExportOptions:
    """Everything that shapes one row besides the run directory. Invalid values raise
    :class:`OptionError` here, before any file is touched."""

    config: str
    system: str | None = None
    nodes: int | None = None
    gpus: int | None = None
    status: str = "pass"
    error: str = ""
    warmup: int = 1
    reducer: str = "median"
    wall_time_sec: float | None = None
    timestamp: str | None = None
    attempt: str | None = None  # "last" or a 1-based number: one attempt of several
    max_line_bytes: int = MAX_LINE_BYTES

    def __post_init__(self) -> None:
        validate_options(self)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ExportOptions | None:
        """The finalize hook's options, from ``EZPZ_AMSC_*``; None when no config is set.

        Errors name the variable, not the flag: ``EZPZ_AMSC_STATUS must be pass or fail``.
        """
        env = os.environ if environ is None else environ
        config = env.get(ENV_CONFIG, "")
        if not config:
            return None
        status = env.get(ENV_STATUS, "").strip() or "pass"
        raw_wall = env.get(ENV_WALL_TIME, "").strip()
        try:
            wall = _env_float(raw_wall, "wall_time_sec") if raw_wall else None
            return cls(config=config, status=status, wall_time_sec=wall)
        except OptionError as e:
            if e.name == "config":
                raise OptionError("config", "is not a one-line label",
                                  f"{ENV_CONFIG}={config!r}") from None
            var = {"status": ENV_STATUS, "wall_time_sec": ENV_WALL_TIME}[e.name]
            shown = raw_wall if e.name == "wall_time_sec" else status
            raise OptionError(e.name, _with_got(spelled(e.reason), repr(shown)), var) from None


def _env_float(raw: str, name: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise OptionError(name, _positive_reason(name, raw)) from None


def _positive_reason(name: str, value: object) -> str:
    unit = " of seconds" if name.endswith("_sec") else ""
    return f"must be a positive number{unit}, got {value!r}"


def _with_got(reason: str, shown: str) -> str:
    """The reason with its ``got ...`` replaced by the text the user wrote."""
    head, sep, _ = reason.rpartition(", got ")
    return f"{head}{sep}{shown}" if sep else reason


def validate_options(opts: ExportOptions) -> None:
    """Refuse bad options before any file is touched (run once, when they are built)."""
    if not opts.config or not opts.config.strip():
        raise OptionError("config", "must not be empty; pass the benchmark label, e.g. "
                                    + opt("config", CONFIG_EXAMPLE))
    if opts.reducer not in REDUCERS:
        raise OptionError("reducer", f"must be one of {', '.join(REDUCERS)}, "
                                     f"got {opts.reducer!r}")
    if opts.status not in STATUSES:
        raise OptionError("status", f"must be pass or fail, got {opts.status!r}")
    if not isinstance(opts.warmup, int) or opts.warmup < 0:
        raise OptionError("warmup", f"must be 0 or more, got {opts.warmup}")
    for name in ("nodes", "gpus"):
        check_count(name, getattr(opts, name))
    wall = opts.wall_time_sec
    if wall is not None and not (0 < wall < math.inf):
        raise OptionError("wall_time_sec", _positive_reason("wall_time_sec", wall))
    if opts.timestamp is not None:
        check_timestamp(opts.timestamp)
    if opts.attempt is not None and opts.attempt != "last" and not (
            isinstance(opts.attempt, str) and opts.attempt.isdigit()
            and 1 <= int(opts.attempt) <= MAX_COUNT):
        raise OptionError("attempt", f"must be 'last' or a number from 1, got {opts.attempt!r}")
    for name in ("config", "system", "error"):
        val = getattr(opts, name) or ""
        if val and not val.isprintable():  # line breaks, control chars, undecodable bytes
            raise OptionError(name, f"must be a single line of printable text, got {val!r}",
                              standalone=True)
        why = cell_problem(val)
        if why:
            raise OptionError(name, why)


def check_count(name: str, value: int | None) -> None:
    """A node or GPU count: 1 to :data:`MAX_COUNT`."""
    if value is None:
        return
    if value < 1:
        raise OptionError(name, f"must be 1 or more, got {value}")
    if value > MAX_COUNT:
        raise OptionError(name, f"{digits(str(value))} is not a plausible count "
                                f"(more than {MAX_COUNT:,})")


def check_timestamp(text: str) -> None:
    """Exactly ``YYYY-MM-DDTHH:MM:SSZ``, the form the row is written in."""
    import time

    try:
        # strptime also takes "2026-8-1T1:1:1Z" and second 61; the row needs the
        # exact form, so only a text that formats back to itself is accepted.
        when = parse_timestamp(text)
        if format_timestamp(when) != text:
            raise ValueError(text)
    except (ValueError, OverflowError, OSError):
        raise OptionError("timestamp", f"must look like 2026-08-11T17:11:17Z, "
                                       f"got {text!r}") from None
    if not TIMESTAMP_MIN <= when <= time.time() + CLOCK_SLACK_SEC:
        raise OptionError("timestamp", f"{text} is before 2015 or later than now")


def expand_home(text: str) -> str:
    """A path with a leading ``~`` or ``~user`` expanded, as the shell expands a word of its
    own; ``ValueError`` when that user is unknown (never a literal ``~`` folder)."""
    if not text.startswith("~"):
        return text
    expanded = os.path.expanduser(text)
    if expanded.startswith("~"):
        head = text.split(os.sep, 1)[0]
        raise ValueError(f"cannot expand {head}: no such user")
    return expanded


_LOCK_TIMEOUT_RANGE = f"must be 0 to {MAX_LOCK_TIMEOUT_SEC:,.0f} seconds (a day)"


def check_lock_timeout(seconds: float) -> float:
    """How long ``--append`` waits for the results file's lock: 0 to a day (finite)."""
    if not 0 <= seconds <= MAX_LOCK_TIMEOUT_SEC:  # NaN compares false: refused too
        raise OptionError("lock_timeout", f"{_LOCK_TIMEOUT_RANGE}, got {seconds}")
    return seconds


@dataclass(frozen=True)
class PublishOptions:
    """Where rows go once exported: stdout, or appended to a results file (and records).

    One home for the CLI and the finalize hook; :func:`ezpz_amsc.flow.publish.publish`
    takes it.
    """

    append: str | None = None  # results CSV; None: stdout
    header: bool = True  # on stdout
    allow_duplicate: bool = False
    skip_existing: bool = False  # a run already in the file is skipped, not refused
    # Seconds --append (and the hook) wait for the results file's lock.
    lock_timeout: float = LOCK_TIMEOUT_SEC
    provenance: str | None = None  # folder of provenance records (needs append)
    # The run directory itself: the row and its record beside the run (the finalize
    # hook's amsc.csv and amsc.json), instead of stdout or a results file.
    run_folder: str | None = None

    def __post_init__(self) -> None:
        check_lock_timeout(self.lock_timeout)
        if self.run_folder is not None and (self.append or self.provenance):
            raise ValueError("a run folder target takes no results file or records folder")
        if self.allow_duplicate and self.skip_existing:
            raise OptionError("skip_existing", "and " + opt("allow_duplicate")
                              + " contradict each other; pass one", standalone=True)
        if self.provenance and not self.append:
            raise OptionError("provenance", "needs " + opt("append", "PATH") + ": a record is "
                              "the evidence of a row in a results file (to see what a record "
                              "would hold, pass " + opt("format", "json") + ")", standalone=True)


def lock_timeout_from_env(environ: Mapping[str, str] | None = None) -> float:
    """The finalize hook's lock timeout: ``EZPZ_AMSC_LOCK_TIMEOUT`` seconds, else the default."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV_LOCK_TIMEOUT, "").strip()
    if not raw:
        return float(default_of(PublishOptions, "lock_timeout"))
    try:
        return check_lock_timeout(float(raw))
    except (ValueError, OptionError):
        raise OptionError("lock_timeout", f"{_LOCK_TIMEOUT_RANGE}, got {raw!r}",
                          ENV_LOCK_TIMEOUT) from None


def hash_budget_from_env(environ: Mapping[str, str] | None = None) -> int:
    """The finalize hook's hash budget: ``EZPZ_AMSC_HASH_BUDGET`` bytes (``512M``, ``2G``:
    binary units), else :data:`HASH_BUDGET_BYTES`."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV_HASH_BUDGET, "").strip()
    if not raw:
        return HASH_BUDGET_BYTES
    number = raw.lower().removesuffix("ib").removesuffix("b")
    unit = number[-1:] if number[-1:] in _BYTE_UNITS else ""
    count = number[:len(number) - len(unit)].strip()
    if not count.isdigit() or not count.isascii():  # isdigit alone takes "٣" and "²"
        raise OptionError("hash_budget", "must be a number of bytes (e.g. 512M, 2G, or 0 to "
                                         f"hash no metrics file), got {raw!r}", ENV_HASH_BUDGET)
    return int(count) * _BYTE_UNITS[unit]


def default_of(cls: type, name: str) -> Any:
    """The default of field ``name`` of the options dataclass ``cls``: its one home."""
    for f in fields(cls):
        if f.name == name:
            if f.default is MISSING:
                raise KeyError(f"{cls.__name__}.{name} has no default")
            return f.default
    raise KeyError(f"{cls.__name__} has no field {name}")
