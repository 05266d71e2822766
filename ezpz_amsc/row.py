"""Stage 5: the CSV row — schema, formatting, and the dashboard's own reading."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence

from .options import STATUSES

HEADER: tuple[str, ...] = (
    "timestamp", "system", "config", "nodes", "gpus", "status", "wall_time_sec",
    "throughput_tokens_per_sec", "throughput_tokens_per_sec_per_gpu", "mfu", "tflops",
    "final_loss", "steps", "error",
)
REQUIRED = HEADER[:7]  # the dashboard refuses a row without these
INT_COLUMNS = ("nodes", "gpus")
TEXT_COLUMNS = ("timestamp", "system", "config", "status", "error")
TIMESTAMP_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def format_timestamp(epoch_sec: float) -> str:
    """Epoch seconds → ``YYYY-MM-DDTHH:MM:SSZ`` (UTC, truncated to the second)."""
    return time.strftime(TIMESTAMP_FORMAT, time.gmtime(math.floor(epoch_sec)))


def parse_timestamp(text: str) -> float:
    """The inverse of :func:`format_timestamp`; ``ValueError`` if it is not one."""
    import calendar

    return float(calendar.timegm(time.strptime(text, TIMESTAMP_FORMAT)))


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


def dashboard_problems(cells: Sequence[str] | Mapping[str, str]) -> list[str]:
    """What the dashboard would reject in one row (SPEC §2.1); empty if it reads it.

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
                if int(v) < 1:
                    problems.append(f"{col} {v!r} is below 1")
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
