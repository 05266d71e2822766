"""Each column of the row as a reader without this tool needs it: type, bounds, description.

The header, the required columns, the statuses and the run identity are in
:mod:`ezpz_amsc.results.schema`; this module adds what each column holds: its
type, the bounds ``check`` enforces, and a one-line description with the unit
and where the value comes from (docs/numbers.md). :func:`table_schema` turns
them into the Frictionless Table Schema of a results file
(docs/results-files.md); :func:`bound_problems` is ``check``'s side of the
same bounds, so a file ``check`` passes is one ``frictionless validate`` passes.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ezpz_amsc.results.schema import (
    COUNT_COLUMNS,
    HEADER,
    INT_COLUMNS,
    KEY_COLUMNS,
    MFU_MAX_PCT,
    MIN_COUNT,
    REQUIRED,
    STATUSES,
    TEXT_COLUMNS,
    column,
)
from ezpz_amsc.text import Text, opt, spelled

# A Table Schema cannot say "finite"; the largest float either way says it
# (inf is beyond it, and NaN fails every comparison).
FINITE_MAX = sys.float_info.max
# A required text cell of only spaces is empty to the dashboard.
NOT_BLANK = r"[\s\S]*\S[\s\S]*"
TIMESTAMP = column("timestamp")
STATUS = column("status")


@dataclass(frozen=True)
class Column:
    """What one column holds: its description and the bounds of its values."""

    description: Text
    minimum: float | None = None
    maximum: float | None = None


COLUMNS: dict[str, Column] = {
    column("timestamp"): Column(
        "Start of the run: the first step's timestamp, UTC, YYYY-MM-DDTHH:MM:SSZ "
        "(or " + opt("timestamp") + ")."),
    column("system"): Column("Facility name: " + opt("system")
                             + ", else MACHINE from run_info.json."),
    column("config"): Column("Benchmark configuration label, from " + opt("config") + "."),
    column("nodes"): Column(
        "Nodes used: " + opt("nodes") + ", else ceil(gpus / ranks per node of the launch line, "
        "else GPUS_PER_NODE), else NUM_NODES.", minimum=MIN_COUNT),
    column("gpus"): Column(
        "GPUs (ranks) that ran: " + opt("gpus")
        + ", else max(WORLD_SIZE_IN_USE, world_size), else NGPUS.",
        minimum=MIN_COUNT),
    column("status"): Column("pass or fail, from " + opt("status") + "; never inferred."),
    column("wall_time_sec"): Column(
        "Seconds: sum of the step times (dt) over all steps, warmup included, "
        "or " + opt("wall_time_sec") + ".", minimum=0),
    column("throughput_tokens_per_sec"): Column(
        "Tokens per second, all GPUs together: reduced train/tps, else "
        "train/tokens_per_sec, else per-GPU tokens/s x gpus.", minimum=0),
    column("throughput_tokens_per_sec_per_gpu"): Column(
        "Tokens per second per GPU: reduced train/tps_per_gpu, else tokens/s / gpus.",
        minimum=0),
    column("mfu"): Column(
        "Model FLOPS utilisation, percent (0-100) per GPU: reduced train/mfu; empty when "
        "every step logged 0.0 (peak FLOPS unknown).", minimum=0, maximum=MFU_MAX_PCT),
    column("tflops"): Column("TFLOPS per GPU: reduced train/tflops.", minimum=0),
    column("final_loss"): Column(
        "Last logged loss in step order; empty when it is NaN or inf (a diverged run)."),
    column("steps"): Column(
        "Training-step records used from the chosen rank (and attempt).", minimum=1),
    column("error"): Column("Note for a failed run, from " + opt("error") + "."),
}


def field_type(name: str) -> str:
    """The Table Schema type of a column: datetime, string, integer or number."""
    if name == TIMESTAMP:
        return "datetime"
    if name in TEXT_COLUMNS:
        return "string"
    return "integer" if name in COUNT_COLUMNS else "number"


def field(name: str) -> dict[str, Any]:
    """One column as a Table Schema field, with the constraints ``check`` enforces."""
    col, kind = COLUMNS[name], field_type(name)
    out: dict[str, Any] = {"name": name, "type": kind, "description": spelled(col.description)}
    # The timestamp's format is Table Schema's default, ISO 8601: readers (frictionless,
    # pandas) then take the Z as UTC and give timezone-aware times. (A strptime format would
    # make them naive.) check alone insists on exactly YYYY-MM-DDTHH:MM:SSZ.
    constraints: dict[str, Any] = {}
    if name in REQUIRED:
        constraints["required"] = True
        if kind == "string" and name != STATUS:
            constraints["pattern"] = NOT_BLANK
    if name == STATUS:
        constraints["enum"] = list(STATUSES)
    if col.minimum is not None or kind == "number":
        constraints["minimum"] = -FINITE_MAX if col.minimum is None else col.minimum
    if col.maximum is not None or kind == "number":
        constraints["maximum"] = FINITE_MAX if col.maximum is None else col.maximum
    if constraints:
        out["constraints"] = constraints
    return out


def table_schema() -> dict[str, Any]:
    """The Frictionless Table Schema of a results file.

    An empty cell is a value that was not measured (``missingValues``), never
    0; the run identity is the primary key, as for the duplicate rule.
    """
    return {"fields": [field(name) for name in HEADER], "missingValues": [""],
            "primaryKey": list(KEY_COLUMNS)}


# The columns bound_problems judges: the numbers, less nodes and gpus (dashboard_problems').
BOUNDED = tuple(name for name in HEADER
                if field_type(name) in ("integer", "number") and name not in INT_COLUMNS)


def bound_problems(row: Mapping[str, str]) -> list[str]:
    """What breaks a column's bounds in one row: ``check``'s half of :func:`table_schema`.

    ``nodes`` and ``gpus`` are judged by :func:`~ezpz_amsc.results.schema.dashboard_problems`
    (as is any cell that is not a finite number), so nothing is reported twice. A
    column the row lacks (an older file's header) is not judged.
    """
    problems = []
    for name in BOUNDED:
        col, v = COLUMNS[name], row.get(name)
        if v is None:
            continue
        try:
            x = float(v)  # an empty cell too is no number: nothing to bound
        except ValueError:
            continue
        if not math.isfinite(x):
            continue
        if name in COUNT_COLUMNS:
            try:
                int(v)
            except ValueError:
                problems.append(f"{name} {v!r} is not a whole number")
                continue
        if col.minimum is not None and x < col.minimum:
            problems.append(f"{name} {v!r} is below {col.minimum:g}")
        elif col.maximum is not None and x > col.maximum:
            problems.append(f"{name} {v!r} is above {col.maximum:g}")
    return problems
