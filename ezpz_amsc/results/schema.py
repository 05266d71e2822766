"""The results row: its columns, its run identity, how cells are written, and how the
dashboard reads them.

The one home of the schema. Appending (:mod:`ezpz_amsc.results.append`),
checking (:mod:`ezpz_amsc.results.validate`), the report and provenance records
all take the header, the run identity and the duplicate rule from here.
"""

from __future__ import annotations

import csv
import io
import math
import re
import time
from collections.abc import Iterable, Mapping, Sequence

HEADER: tuple[str, ...] = (
    "timestamp", "system", "config", "nodes", "gpus", "status", "wall_time_sec",
    "throughput_tokens_per_sec", "throughput_tokens_per_sec_per_gpu", "mfu", "tflops",
    "final_loss", "steps", "error",
)
REQUIRED = HEADER[:7]  # the dashboard refuses a row without these
INT_COLUMNS = ("nodes", "gpus")
# Whole numbers in the row. The dashboard reads steps as a float, but the row counts
# records, and an empty cell (not a 0) is a row without steps.
COUNT_COLUMNS = (*INT_COLUMNS, "steps")
TEXT_COLUMNS = ("timestamp", "system", "config", "status", "error")
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
STATUSES = ("pass", "fail")
# The identity of a run on the dashboard: a second row with these is a double count.
KEY_COLUMNS = ("timestamp", "system", "config", "nodes", "gpus")
KEY_INDEX = tuple(HEADER.index(c) for c in KEY_COLUMNS)
# A cell starting with one of these runs as a formula when the CSV is opened in a
# spreadsheet, unless the whole cell is a number ("-2", "+1.5e3"): "-2+3+cmd|..."
# starts like a number and is still a formula.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# The longest cell a row may hold, in characters. Far above any system name,
# config label or error note, and far below the csv module's field limit
# (131,072), which a reader of the file would otherwise trip on.
MAX_CELL_CHARS = 4096
# The longest line a row of such cells can make, in bytes (4 bytes a character in
# UTF-8, every cell quoted with doubled quotes at worst): a longer line in a results
# file is no row this tool wrote, and is not read whole.
MAX_ROW_BYTES = len(HEADER) * (4 * MAX_CELL_CHARS + 3)
# ezpz's compute_mfu returns 0.0 when it does not know the device's peak FLOPS
# (every CPU run), and ezpz's own exporter writes that 0.0 into the mfu cell: an
# mfu of zero is "unknown", never a measurement.
MFU_ZERO_MEANS = "ezpz writes 0.0 when it does not know the device's peak FLOPS"
# MFU is a percentage of the device's peak: above 100 it is not a utilisation
# (FP8 measured against a BF16 peak table, fsdp_tp's tensor-parallel over-count).
# The mfu column's bound (results/fields.py) and the steps the export drops.
MFU_MAX_PCT = 100.0

RunKey = tuple[str, ...]

# ------------------------------------------------------------------ limits
# nodes and gpus: a run used at least one of each. No machine runs a million ranks or
# nodes (Aurora: 10,624 nodes, 127,488 GPU tiles); a larger count is a broken record or a
# typo, never a real run.
MIN_COUNT = 1
MAX_COUNT = 1_000_000
# Step timestamps a row may hold: from 2015-01-01 (older is a clock counting from boot,
# e.g. time.monotonic()) to now, plus some skew between two hosts' clocks.
TIMESTAMP_MIN = 1420070400.0
CLOCK_SLACK_SEC = 600.0
# A process's start time read from /proc counts from the boot time in whole seconds: a
# record stamped up to this much before it may be the process's own.
PROCESS_START_SLACK_SEC = 1.0
# A metrics line longer than this is skipped unread rather than held in memory.
MAX_LINE_BYTES = 64 << 20
# A provenance file (run_info.json, config.json, a report) larger than this is skipped by
# the export, and only hashed in a provenance record.
MAX_PROVENANCE_BYTES = 16 << 20
# Seconds an append (--append, the hook) waits for the results file's lock. An append
# holds it for milliseconds on an idle machine, but 128 writers ending at one instant on a
# million-row file, on two cores loaded ~60 deep, held it 0.2 s each at the median and 2 s
# at worst: 10 s timed 4 of them out (docs/performance.md). A minute covers that twice
# over, and is nothing beside the job that waits for it.
LOCK_TIMEOUT_SEC = 60.0
# The longest wait a lock timeout may ask for: a day. More is a typo (or inf), and a job
# that waits longer for a lock held milliseconds at a time is better failed.
MAX_LOCK_TIMEOUT_SEC = 86400.0
# Problems ``check`` and ``report`` keep per file; the rest are counted. A hostile file of
# ten million bad lines is then a thousand lines and a count, not gigabytes of messages.
MAX_PROBLEMS = 1000
# What git leaves in a file it could not merge: each marker starts a line, seven
# characters long (diff3's ``|||||||`` opens the common ancestor's lines).
CONFLICT_OPEN, CONFLICT_BASE, CONFLICT_MIDDLE, CONFLICT_CLOSE = (
    "<<<<<<<", "|||||||", "=======", ">>>>>>>")
CONFLICT_FIX = ("keep the rows of both sides (not the common ancestor's lines between "
                "||||||| and =======, if any) and delete the marker lines; a results "
                "repository with merge=union in .gitattributes (ezpz-amsc init) merges "
                "appended rows without conflicts")


def column(name: str) -> str:
    """``name``, checked to be a column of :data:`HEADER`: how other modules name a column."""
    if name not in HEADER:
        raise KeyError(f"not a column of the results schema: {name!r}")
    return name


def run_key(row: Mapping[str, str]) -> RunKey:
    """A row's run identity (:data:`KEY_COLUMNS`): two rows with one key double-count a run."""
    return tuple(row.get(c, "") for c in KEY_COLUMNS)


def cells_key(cells: Sequence[str]) -> RunKey:
    """:func:`run_key` of a row given as its cells in :data:`HEADER` order."""
    return tuple(cells[i] for i in KEY_INDEX)


class RunIndex:
    """Where each run identity was first seen: the duplicate rule, for a few rows (an
    append's); ``check`` and ``report`` apply it to whole files through
    :class:`~ezpz_amsc.results.seen.SeenRuns`."""

    def __init__(self) -> None:
        self._first: dict[RunKey, object] = {}

    def first(self, key: RunKey, where: object) -> object | None:
        """Record ``key`` as seen at ``where``; return where it was seen first, if earlier."""
        seen = self._first.get(key)
        if seen is None:
            self._first[key] = where
        return seen

    def __contains__(self, key: object) -> bool:
        return key in self._first


def header_difference(found: Sequence[str]) -> str:
    """How a results file's header differs from :data:`HEADER`, in a few words.

    ``lacks mfu, error``, ``has extra``, both, or ``the same columns in another order``.
    """
    def listed(names: list[str]) -> str:
        shown = ", ".join(shown_name(n) for n in names[:4])
        return shown if len(names) <= 4 else f"{shown} and {len(names) - 4} more"

    missing = [c for c in HEADER if c not in found]
    extra = list(dict.fromkeys(c for c in found if c not in HEADER))
    parts = [f"lacks {listed(missing)}"] if missing else []
    parts += [f"has {listed(extra)}"] if extra else []
    if parts:
        return "; ".join(parts)
    return ("the same columns in another order" if len(found) == len(HEADER)
            else "a column named twice")


def zero_mfu(row: Mapping[str, str]) -> bool:
    """True when the row's mfu cell is a number equal to 0: "unknown" (:data:`MFU_ZERO_MEANS`)."""
    try:
        return float(row.get("mfu", "")) == 0
    except ValueError:  # empty (not measured), or not a number (its own problem)
        return False


def formula_like(text: str) -> bool:
    """True when a spreadsheet would run ``text`` as a formula: it starts with one of
    :data:`FORMULA_STARTS` and the whole of it is not a number."""
    return text.startswith(FORMULA_STARTS) and _NUMBER.fullmatch(text) is None


FORMULA_REASON = ("would run as a formula when the CSV is opened in a spreadsheet (it starts "
                  "with =, +, -, @, a tab or a carriage return and is not a number)")


def cell_problem(value: str) -> str | None:
    """Why ``value`` cannot be a cell of a results file, worded to follow what it is (a
    column, an option, a provenance key): longer than :data:`MAX_CELL_CHARS`, or run as a
    formula by a spreadsheet; None when it can be one. The one rule and wording for cells
    from every source."""
    if len(value) > MAX_CELL_CHARS:
        return f"is {len(value):,} characters long (a cell holds at most {MAX_CELL_CHARS:,})"
    if formula_like(value):
        return f"{value[:40]!r} {FORMULA_REASON}"
    return None


def unsafe_cells(cells: Mapping[str, str]) -> list[str]:
    """Cells of a row that must not be published (:func:`cell_problem`), one line each,
    naming the column."""
    return [f"{col} {why}" for col, value in cells.items() if (why := cell_problem(value))]


def cells_of(row: Mapping[str, str]) -> list[str]:
    """A row's cells in :data:`HEADER` order."""
    return [row[c] for c in HEADER]


def render_csv(rows: Iterable[Sequence[str]], header: bool, newline: str = "\n") -> str:
    """Rows (and the header) as CSV text, in the one dialect every results file uses."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator=newline)
    if header:
        w.writerow(HEADER)
    w.writerows(rows)
    return buf.getvalue()


def format_timestamp(epoch_sec: float) -> str:
    """Epoch seconds → ``YYYY-MM-DDTHH:MM:SSZ`` (UTC, truncated to the second)."""
    return time.strftime(TIMESTAMP_FORMAT, time.gmtime(math.floor(epoch_sec)))


def parse_timestamp(text: str) -> float:
    """The inverse of :func:`format_timestamp`; ``ValueError`` if it is not one.

    What ``time.strptime`` with :data:`TIMESTAMP_FORMAT` accepts, and the same value.
    A text in exactly the written form is read without it: strptime's first call
    builds its regular expressions, which costs more than a tiny export's work.
    """
    when = _written_form(text)
    if when is not None:
        return when
    import calendar  # not at import time: the CLI's start-up does not need it

    return float(calendar.timegm(time.strptime(text, TIMESTAMP_FORMAT)))


def _written_form(text: str) -> float | None:
    """Epoch seconds of ``YYYY-MM-DDTHH:MM:SSZ`` in ASCII digits, each field in the range
    strptime takes (a second up to 61, as it allows); None for any other text, which
    strptime then reads or refuses."""
    if len(text) != 20 or text[4::3] != "--T::Z" or not text.isascii():
        return None
    parts = (text[0:4], text[5:7], text[8:10], text[11:13], text[14:16], text[17:19])
    if not all(part.isdigit() for part in parts):
        return None
    year, month, day, hour, minute, second = map(int, parts)
    if hour > 23 or minute > 59 or second > 61:
        return None
    import datetime

    try:  # a day the month has (strptime asks datetime.date too), from year 1
        days = datetime.date(year, month, day).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        return None
    return float(((days * 24 + hour) * 60 + minute) * 60 + second)


_EPOCH_ORDINAL = 719163  # datetime.date(1970, 1, 1).toordinal(), as calendar.timegm counts


def fmt(value: float | None, decimals: int) -> str:
    """A measured value rounded; an unmeasured one is an empty cell, never 0.

    A non-zero value too small for ``decimals`` keeps three significant digits
    (0.0000123, not 0.000): a measured rate is never published as zero.
    """
    if value is None or not math.isfinite(value):
        return ""
    out = f"{value:.{decimals}f}"
    if out.lstrip("-").strip("0.") != "":
        return out
    if value == 0:
        return "0." + "0" * decimals
    digits = 2 - math.floor(math.log10(abs(value)))
    return f"{value:.{digits}f}" if digits <= 20 else f"{value:.2e}"


def build_row(values: Mapping[str, object]) -> dict[str, str]:
    """Order and stringify ``values`` into exactly :data:`HEADER`."""
    unknown = set(values) - set(HEADER)
    if unknown:
        raise KeyError(f"not in the schema: {sorted(unknown)}")
    return {k: "" if values.get(k) is None else str(values[k]) for k in HEADER}


def typed_row(row: Mapping[str, str]) -> dict[str, str | int | float | None]:
    """A row's cells as JSON values: counts as int, measurements as float, text as text,
    an empty cell as None. Every cell of a written row parses (:func:`dashboard_problems`)."""
    out: dict[str, str | int | float | None] = {}
    for col, text in row.items():
        if col in TEXT_COLUMNS:
            out[col] = text
        elif not text:
            out[col] = None
        else:
            out[col] = int(text) if col in COUNT_COLUMNS else float(text)
    return out


def dashboard_problems(cells: Sequence[str] | Mapping[str, str]) -> list[str]:
    """What the dashboard would reject in one row; empty if it reads it (docs/numbers.md).

    Mirrors its reading exactly: the first seven columns present and non-empty,
    ``nodes``/``gpus`` as int, ``wall_time_sec`` as float, and every other
    non-empty cell outside the text columns as a float.
    """
    row = dict(zip(HEADER, cells, strict=False)) if not isinstance(cells, Mapping) else dict(cells)
    problems = []
    for col in REQUIRED:
        if not row.get(col, "").strip():
            problems.append(f"{col} is empty")
    for col in INT_COLUMNS:
        v = row.get(col, "")
        if v.strip():
            try:
                if int(v) < MIN_COUNT:
                    problems.append(f"{col} {v!r} is below {MIN_COUNT}")
            except ValueError:
                problems.append(f"{col} {v!r} is not an integer")
    for col in HEADER:
        if col in TEXT_COLUMNS or col in INT_COLUMNS:
            continue
        v = row.get(col, "")
        if v.strip():
            try:
                x = float(v)
            except ValueError:
                problems.append(f"{col} {v!r} is not a number")
                continue
            if not math.isfinite(x):
                problems.append(f"{col} {v!r} is not finite")
    st = row.get("status", "")
    if st and st not in STATUSES:
        problems.append(f"status {st!r} is not pass or fail")
    ts = row.get("timestamp", "")
    if ts:
        try:
            parse_timestamp(ts)
        except ValueError:
            problems.append(f"timestamp {ts!r} is not YYYY-MM-DDTHH:MM:SSZ")
    return problems


def conflict_marker(text: str) -> str | None:
    """The git conflict marker ``text`` (a line, without its end) is, if it is one."""
    head = text[:7]
    if head in (CONFLICT_OPEN, CONFLICT_BASE, CONFLICT_CLOSE):
        return head if len(text) == 7 or text[7] == " " else None
    return head if text == CONFLICT_MIDDLE else None


_SHOWN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_ ./()%-]{0,39}")
# A token, key or password: twelve or more letters and digits in a row, with both.
_KEYLIKE = re.compile(r"(?=[A-Za-z0-9]*[0-9])(?=[A-Za-z0-9]*[A-Za-z])[A-Za-z0-9]{12,}")


def shown_name(name: str) -> str:
    """A column name of a file's header as a message may show it: a name-like text of at
    most 40 characters, else only its length. A file that is no results file (an
    environment, a key) is never echoed: a token looks like no column name."""
    if _SHOWN_NAME.fullmatch(name) and not _KEYLIKE.search(name):
        return name
    return f"<{len(name):,} characters>"


def shown_header(names: Sequence[str], limit: int = 12) -> str:
    """A file's header for a message: at most ``limit`` names, each :func:`shown_name`."""
    shown = ",".join(shown_name(n) for n in names[:limit])
    return shown + (f",... ({len(names):,} columns)" if len(names) > limit else "")


def foreign_format(head: bytes) -> str | None:
    """Why the first bytes of a file are no results file's header although a spreadsheet
    may have saved them from one: UTF-16 text, or cells separated by ``;`` or tabs; with
    the fix. None when it is none of these."""
    nul = b"\0" * 4  # every other byte of UTF-16 ASCII text, without its byte-order mark
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or nul in (head[1:8:2], head[0:8:2]):
        return ("is UTF-16 text (a spreadsheet's \"Unicode text\" export), not UTF-8 CSV; "
                "save it again as \"CSV UTF-8 (comma delimited)\"")
    first = head.split(b"\n", 1)[0].decode("utf-8", "replace").lstrip("\ufeff").rstrip("\r")
    for sep, name in ((";", "semicolons"), ("\t", "tabs")):
        if set(REQUIRED) <= {c.strip().strip('"') for c in first.split(sep)}:
            return (f"has its columns separated by {name}, not commas (a spreadsheet set to "
                    "a language that writes decimal commas saves CSV that way); save it "
                    "again with comma separators and decimal points")
    return None
