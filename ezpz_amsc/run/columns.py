"""The row's cells, each decided in one place from the flags, the placement and the
reduced steps.

Where a number is derived rather than read (tokens/s from tokens/s/gpu or the
other way round, an mfu of 0.0 left empty, wall time from summed step times),
the note that says so is made here, beside the value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ezpz_amsc.errors import AmscError, plural
from ezpz_amsc.results.schema import (
    MFU_ZERO_MEANS,
    build_row,
    dashboard_problems,
    fmt,
    format_timestamp,
)
from ezpz_amsc.run.steps import SERIES_KEYS

if TYPE_CHECKING:
    from ezpz_amsc.run.crosschecks import Context
    from ezpz_amsc.run.reduce import Reduced


def resolve_columns(ctx: Context, notes: list[str]) -> dict[str, str]:
    """The row: flags, placement and the reduced steps; notes what a column derived."""
    opts, placement = ctx.opts, ctx.placement
    values: dict[str, Any] = {
        "config": opts.config, "system": placement.system, "nodes": placement.nodes,
        "gpus": placement.gpus, "status": opts.status, "error": opts.error or "",
        "steps": ctx.red.steps or None,
        **_time_values(ctx, notes), **_metric_values(ctx, notes),
    }
    if opts.error and opts.status == "pass":
        notes.append(f"--error {opts.error!r} is set but the status is pass; "
                     "pass --status fail if the run failed")
    row = build_row(values)
    problems = dashboard_problems(row)
    if problems:  # a bug, not a user error: never print a row the dashboard rejects
        raise AmscError(f"internal: row would be rejected by the dashboard: {'; '.join(problems)}")
    return row


def coverage_text(red: Reduced) -> str | None:
    """``30 of ~300 steps (...)`` when the logged step numbers leave gaps."""
    cov = red.coverage
    timed = red.stats["dt"].present if "dt" in red.stats else 0
    if cov is None or not timed:
        return None
    every = f"every {cov.stride} steps" if cov.stride > 1 else "with gaps"
    return (f"{timed} of ~{cov.estimated_total} steps (logged {every}, "
            f"steps {cov.first}..{cov.last})")


def _time_values(ctx: Context, notes: list[str]) -> dict[str, Any]:
    """timestamp and wall_time_sec: from the steps, else the flags; refuse when neither."""
    opts, red = ctx.opts, ctx.red
    values: dict[str, Any] = {}
    missing: list[str] = []
    if opts.timestamp:
        values["timestamp"] = opts.timestamp
    elif red.first_timestamp is not None:
        values["timestamp"] = format_timestamp(red.first_timestamp)
    else:
        missing.append("--timestamp YYYY-MM-DDTHH:MM:SSZ")

    # Summed step time over all steps (warmup included), else the flag.
    summed, covers = red.wall_time_sec, coverage_text(red)
    if opts.wall_time_sec is not None:
        values["wall_time_sec"] = fmt(opts.wall_time_sec, 3)
        if summed is not None:
            notes.append(f"wall_time_sec from --wall-time-sec; summed step time is {summed:.3f}"
                         + (f" and covers {covers}" if covers else ""))
    elif summed is not None and summed > 0:
        values["wall_time_sec"] = fmt(summed, 3)
        if covers:  # the sum is of the logged steps only; never scaled up silently
            notes.append(f"wall_time_sec covers {covers}; pass --wall-time-sec")
    else:
        missing.append("--wall-time-sec SECONDS")

    if missing:
        why = "no step was logged" if not red.steps else "the steps do not record it"
        if red.invalid.get("dt") and red.wall_time_sec is None:
            why += f"; all {red.invalid['dt']} step times logged are zero or negative"
        what = ", ".join(m.split()[0][2:].replace("-", "_") for m in missing)
        raise AmscError(f"cannot tell {what} ({why}); pass {' '.join(missing)}")
    return values


def _metric_values(ctx: Context, notes: list[str]) -> dict[str, Any]:
    """The reduced metric cells; a throughput logged one way only is derived the other."""
    red, gpus = ctx.red, ctx.placement.gpus
    if not red.steps:
        return {}
    st = red.stats
    tps, tpg = st["tps"].value, st["tps_per_gpu"].value
    if tps is None and tpg is not None:
        tps = tpg * gpus
        notes.append(f"throughput_tokens_per_sec derived as per-GPU x {plural(gpus, 'gpu')} "
                     "(no global throughput logged)")
    elif tpg is None and tps is not None:
        tpg = tps / gpus
        notes.append(f"throughput_tokens_per_sec_per_gpu derived as global / "
                     f"{plural(gpus, 'gpu')} (no per-GPU throughput logged)")
    elif not (st["tps"].present or st["tps_per_gpu"].present) and ctx.opts.status == "pass":
        # A throughput benchmark's row without its rate: say so, not only by empty cells.
        looked = ", ".join(SERIES_KEYS["tps"] + SERIES_KEYS["tps_per_gpu"])
        notes.append(f"no throughput series logged (looked for {looked}); both throughput "
                     "cells are empty")
    mfu = st["mfu"].value
    if st["mfu"].all_zero:
        mfu = None
        notes.append(f"mfu is 0.0 on every step ({MFU_ZERO_MEANS}); left empty")
    kept = warmup_kept_note(ctx.opts.warmup, red)
    if kept:
        notes.append(kept)
    return {
        "throughput_tokens_per_sec": fmt(tps, 3),
        "throughput_tokens_per_sec_per_gpu": fmt(tpg, 3),
        "mfu": fmt(mfu, 3),
        "tflops": fmt(st["tflops"].value, 3),
        "final_loss": fmt(red.final_loss, 6),
    }


def warmup_kept_note(warmup: int, red: Reduced) -> str | None:
    """One note for every published series that ``--warmup`` would have left empty.

    The loss is left out: its reduced value is no column (final_loss is the last one).
    """
    kept = {name: s.used for name, s in red.stats.items() if s.kept_warmup and name != "loss"}
    if not kept:
        return None
    names = list(kept)
    listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"
    counts = set(kept.values())
    reduced = (f"all {plural(counts.pop(), 'step')}" if len(counts) == 1 else
               "all their steps (" + ", ".join(f"{k} {n}" for k, n in kept.items()) + ")")
    return f"--warmup {warmup} leaves no {listed} values; reduced {reduced}"
