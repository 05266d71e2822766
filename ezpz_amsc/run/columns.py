"""The row's cells, each decided in one place from the flags, the placement and the
reduced steps.

Where a number is derived rather than read (tokens/s from tokens/s/gpu or the
other way round, wall time from summed or estimated step times), or left empty
(an mfu of 0.0, a series that is mostly impossible values, a rate from too few
steps, a cell an identity between the numbers shows to be wrong), the note that
says so is made here, beside the value.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from ezpz_amsc.errors import AmscError, NoStepTime
from ezpz_amsc.results.schema import (
    MFU_ZERO_MEANS,
    build_row,
    dashboard_problems,
    fmt,
    format_timestamp,
)
from ezpz_amsc.run.steps import SERIES_KEYS
from ezpz_amsc.text import Message, Text, joined, opt, plural

if TYPE_CHECKING:
    from ezpz_amsc.run.crosschecks import Context
    from ezpz_amsc.run.reduce import Reduced

# The per-step rates, each reduced into its cell.
RATE_COLUMNS = {"tps": "throughput_tokens_per_sec",
                "tps_per_gpu": "throughput_tokens_per_sec_per_gpu",
                "mfu": "mfu", "tflops": "tflops"}
# More than this share of a series' logged values dropped as impossible (mfu above
# 100, a negative rate, a step time <= 0) and the rest is not a measurement: one
# odd step in 30 is a glitch; one in ten or more means the series is computed
# wrong on many steps (FP8 measured against a BF16 peak hovers around 100).
INVALID_SHARE_MAX = 0.10
# A rate reduced from fewer steps than this, after warmup, is not the run's rate.
MIN_RATE_STEPS = 2
# A wall time estimated for the steps not logged that exceeds the records' clock: when the
# clock left by the logged step times is under 1/this of what the steps in the gaps would
# take, they would have to run this many times faster than the logged steps beside them:
# the gaps are no steps (a counter of micro-batches, a dt over the logging interval: the
# logged dt fill 0.98-0.99 of the clock). Real sparse logging leaves most of the clock to
# the steps not logged (a real LOG_FREQ 5 run: 0.85 of what they take at their neighbours'
# step time, the logged steps being the slower ones); then the clock bounds the estimate.
UNLOGGED_SPEEDUP_MAX = 2.0
# Step times covering under this share of the clock between records, with accumulation
# asked for: dt times part of each optimizer step (one micro-batch of 8 covers ~12 %, the
# whole step 0.8-0.98).
ACCUMULATION_COVER_MAX = 0.5
# Steps not logged counted one by one in a float: beyond 2**53 a float no longer tells
# one count from the next, and no run takes that many steps.
EXACT_COUNT_MAX = 2**53


def resolve_columns(ctx: Context, notes: list[Text]) -> dict[str, str]:
    """The row: flags, placement and the reduced steps; notes what a column derived."""
    opts, placement = ctx.opts, ctx.placement
    values: dict[str, Any] = {
        "config": opts.config, "system": placement.system, "nodes": placement.nodes,
        "gpus": placement.gpus, "status": opts.status, "error": opts.error or "",
        "steps": ctx.red.steps or None,
        **_time_values(ctx, notes), **_metric_values(ctx, notes),
    }
    if opts.error and opts.status == "pass":
        notes.append(opt("error", repr(opts.error)) + " is set but the status is pass; pass "
                     + opt("status", "fail") + " if the run failed")
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


# ---------------------------------------------------------------- timestamp and wall time


def _time_values(ctx: Context, notes: list[Text]) -> dict[str, Any]:
    """timestamp and wall_time_sec: from the steps, else the flags; refuse when neither."""
    opts, red = ctx.opts, ctx.red
    values: dict[str, Any] = {}
    missing: list[Message] = []
    if opts.timestamp:
        values["timestamp"] = opts.timestamp
    elif red.first_timestamp is not None:
        values["timestamp"] = format_timestamp(red.first_timestamp)
        if _one_timestamp(red):
            notes.append(f"every step has the same timestamp ({values['timestamp']}): the clock "
                         "did not move between records, so it may be when the job started or "
                         "the file was written, not the first step's time; it is the row's "
                         "timestamp; pass " + opt("timestamp") + " to set it")
    else:
        missing.append(opt("timestamp", "YYYY-MM-DDTHH:MM:SSZ"))

    why_unknown = ""  # why a wall time that the steps do record is no measurement
    summed = red.wall_time_sec
    bad_dt = red.invalid.get("dt", 0)
    if summed is not None and bad_dt > INVALID_SHARE_MAX * (bad_dt + red.stats["dt"].present):
        why_unknown = (f"{bad_dt} of {bad_dt + red.stats['dt'].present} step times logged are "
                       "zero or negative: the rest does not measure the run")
        summed = None
    covers, estimate = coverage_text(red), wall_time_estimate(red, opts.warmup)
    if opts.wall_time_sec is not None:
        values["wall_time_sec"] = fmt(opts.wall_time_sec, 3)
        if summed is not None:
            notes.append("wall_time_sec from " + opt("wall_time_sec")
                         + f"; summed step time is {summed:.3f}"
                         + (f" and covers {covers}" if covers else ""))
    elif summed is not None and summed > 0 and estimate is not None:
        value, how, scaled = estimate
        values["wall_time_sec"] = fmt(value, 3)
        notes.append((f"wall_time_sec is estimated for all the steps: {how}" if scaled else how)
                     + "; pass " + opt("wall_time_sec") + " for the job's real time")
    elif summed is not None and summed > 0 and covers is not None:  # never the 1/k figure
        why_unknown = (f"the logged steps cover {covers} and no estimate can be made for "
                       "the others")
        missing.append(opt("wall_time_sec", "SECONDS"))
    elif summed is not None and summed > 0:
        values["wall_time_sec"] = fmt(summed, 3)
    else:
        missing.append(opt("wall_time_sec", "SECONDS"))

    if opts.wall_time_sec is None and "wall_time_sec" in values:
        said = _accumulation_asked(ctx)
        if said:
            notes.append(said + "; pass " + opt("wall_time_sec", "SECONDS")
                         + " for the job's real time")
    if missing:
        why = "no step was logged" if not red.steps else "the steps do not record it"
        if red.invalid.get("dt") and red.wall_time_sec is None:
            why += f"; all {red.invalid['dt']} step times logged are zero or negative"
        if why_unknown:  # the steps do record a wall time, and it says nothing
            why = why_unknown if len(missing) == 1 else f"{why}; {why_unknown}"
        what = ", ".join(m.options()[0].name for m in missing)
        kind = AmscError if red.steps else NoStepTime
        raise kind(f"cannot tell {what} ({why}); pass " + joined(" ", missing))
    return values


def _accumulation_asked(ctx: Context) -> str:
    """A note when the launch command asks for gradient accumulation and the logged step
    times cover under :data:`ACCUMULATION_COVER_MAX` of the records' clock (every step
    logged): dt then times one micro-batch, not the optimizer step."""
    import numpy as np

    asked = ctx.placement.launch.accumulation
    red = ctx.red
    if asked is None or asked[0] < 2 or red.coverage is not None or red.steps < 2:
        return ""
    count, flag = asked
    ts, dt = red.ts_values, red.stats["dt"].values
    ok = np.isfinite(ts[1:]) & np.isfinite(ts[:-1]) & np.isfinite(dt[1:])
    span = float((ts[1:] - ts[:-1])[ok].sum())
    covered = float(dt[1:][ok].sum())
    if not (span > 0 and covered < ACCUMULATION_COVER_MAX * span):
        return ""
    return (f"the launch command asks for gradient accumulation ({flag} {count}) and the "
            f"step times cover {covered / span:.0%} of the time between records: dt likely "
            f"times one micro-batch of the {count}, not "
            "the whole optimizer step; "
            "wall_time_sec is the summed step time")


def _one_timestamp(red: Reduced) -> bool:
    """Two or more steps, and every timestamp the same."""
    import numpy as np

    ts = red.ts_values[np.isfinite(red.ts_values)]
    return ts.size >= 2 and float(ts.min()) == float(ts.max())


def wall_time_estimate(red: Reduced, warmup: int = 0) -> tuple[float, str, bool] | None:
    """The summed step time of a run that logged every k-th step, scaled to all its steps,
    and how: ``(seconds, how, scaled)``. None when no step is missing.

    Each gap between two logged steps counts its steps at the mean of the two logged step
    times that bound it (a drifting step time is followed, not flattened to one median);
    the steps before the first logged one count its time. The first ``warmup`` steps (a
    compile, an allocator warming up) stand for themselves only: a gap beside one, and the
    steps before it, count the first logged step after the warmup. The records' clock bounds it:
    the steps after the first record cannot take longer than the time to the last one.
    Over that, the gaps in the counter are no unlogged steps (a counter of micro-batches, a
    ``dt`` timing the whole logging interval) when the logged step times leave the steps in
    the gaps under half the clock they would take (:data:`UNLOGGED_SPEEDUP_MAX`): then the
    summed step time stands (``scaled`` False). Otherwise the clock's figure is the estimate.
    """
    import numpy as np

    cov, summed = red.coverage, red.wall_time_sec
    if cov is None or summed is None:  # a coverage needs steps: there are stats then
        return None
    dt = red.stats["dt"]
    if not dt.present:
        return None
    ok = np.isfinite(dt.values) & np.isfinite(red.step_values)
    step, d = red.step_values[ok], dt.values[ok]
    missing = cov.estimated_total - int(step.size)  # step numbers the records skip
    if not 0 < missing <= EXACT_COUNT_MAX:
        return None
    # What each logged step stands for: a warmup step the first trained one's time.
    warm = int(np.count_nonzero(np.flatnonzero(ok) < warmup))
    like = d
    if 0 < warm < d.size:
        like = d.copy()
        like[:warm] = d[warm]
    with np.errstate(over="ignore", invalid="ignore"):
        between = np.diff(step) - 1
        inner = (between >= 1) & np.isfinite(between)
        if red.by_epoch:  # the counter starts again each epoch: no gap across epochs
            e = red.epoch_values[ok]
            inner &= e[1:] == e[:-1]
        gaps = float(between[inner].sum())
        filled = float((between[inner] * (like[1:][inner] + like[:-1][inner]) / 2).sum())
    head = max(0.0, missing - gaps)  # before the first logged step (each epoch's)
    first, lead = float(d[0]), float(like[0])
    value = summed + filled + head * lead
    if not math.isfinite(value):
        return None
    every = f"every {cov.stride} steps" if cov.stride > 1 else "with gaps"
    which = f"~{cov.estimated_total} steps (logged {every}, steps {cov.first}..{cov.last})"
    span = _clock_span(red, ok)
    outside = first + head * lead  # the first logged step and those before it
    inside = value - outside
    if span is not None and inside > span:
        room = span - (summed - first)  # the clock the logged step times leave to the gaps
        if filled > UNLOGGED_SPEEDUP_MAX * room:
            skips = plural(cov.stride - 1, "number") if cov.stride > 1 else "numbers"
            return summed, (
                f"the step counter {red.counter} skips {skips} between records, but the "
                f"{dt.present} logged step times already fill the records' clock "
                f"({summed - first:.4g} s of the {span:.4g} s between the first and last "
                "record): the counter counts micro-batches, or dt times the whole logging "
                "interval, not one step; wall_time_sec is the summed step time, not "
                f"{value:.4g} s scaled for the numbers skipped"), False
        return span + outside, (
            f"the {dt.present} logged steps' {summed:.3f} s plus {int(missing)} steps not "
            f"logged, each gap at the mean of the logged step times that bound it, would be "
            f"{value:.4g} s, more than the records' clock allows; bounded by it: the "
            f"{span:.4g} s between the first and last record plus {outside:.4g} s for the "
            f"first logged step and the {int(head)} before it, {which}"), True
    how = f"the {dt.present} logged steps' {summed:.3f} s plus {int(missing)} steps not logged"
    how += ", each gap at the mean of the logged step times that bound it"
    if head:
        how += f" ({int(head)} before the first logged step at {lead:.4g} s)"
    return value, f"{how}, {which}", True


def _clock_span(red: Reduced, ok: Any) -> float | None:
    """Seconds between the first and last logged step time's records, when both carry a
    plausible timestamp and time moved forward."""
    import numpy as np

    at = np.flatnonzero(ok)
    ts = red.ts_values
    if at.size < 2 or ts.size != ok.size:
        return None
    a, b = float(ts[at[0]]), float(ts[at[-1]])
    return b - a if math.isfinite(a) and math.isfinite(b) and b > a else None


# ---------------------------------------------------------------- the rates


def _metric_values(ctx: Context, notes: list[Text]) -> dict[str, Any]:
    """The reduced metric cells, each left empty when it is not a measurement of the run;
    a throughput logged one way only is derived the other."""
    from ezpz_amsc.run.identities import peak_finding, tflops_finding, throughput_finding

    red, gpus = ctx.red, ctx.placement.gpus
    if not red.steps:
        return {}
    st = red.stats
    value: dict[str, float | None] = {name: st[name].value for name in RATE_COLUMNS}
    emptied: set[str] = set()  # series a rule left empty: never derived from the other one

    def leave_empty(names: set[str] | frozenset[str]) -> None:
        for name in names:
            value[name] = None
            emptied.add(name)

    mfu_unknown = st["mfu"].all_zero
    if mfu_unknown:
        leave_empty({"mfu"})
    leave_empty(_invalid_shares(red, notes))
    leave_empty(_too_few_steps(ctx, emptied, notes))
    if not {"tps", "tps_per_gpu"} <= emptied:
        tp = ctx.placement.tp[0] if ctx.placement.tp else None
        found = throughput_finding(red, ctx.steps.keys_used, gpus, lambda: _accumulation(ctx),
                                   tp)
        if found.note:
            notes.append(found.note)
            leave_empty({name for name, col in RATE_COLUMNS.items() if col in found.empty})
    value["tps_per_gpu"] = _per_gpu_over_flag(ctx, value, notes)

    if value["tps"] is None and value["tps_per_gpu"] is not None and "tps" not in emptied:
        value["tps"] = value["tps_per_gpu"] * gpus
        notes.append(f"throughput_tokens_per_sec derived as per-GPU x {plural(gpus, 'gpu')} "
                     "(no global throughput logged)")
    elif (value["tps_per_gpu"] is None and value["tps"] is not None
          and "tps_per_gpu" not in emptied):
        value["tps_per_gpu"] = value["tps"] / gpus
        notes.append(f"throughput_tokens_per_sec_per_gpu derived as global / "
                     f"{plural(gpus, 'gpu')} (no per-GPU throughput logged)")
    elif not (st["tps"].present or st["tps_per_gpu"].present) and ctx.opts.status == "pass":
        # A throughput benchmark's row without its rate: say so, not only by empty cells.
        looked = ", ".join(SERIES_KEYS["tps"] + SERIES_KEYS["tps_per_gpu"])
        notes.append(f"no throughput series logged (looked for {looked}); both throughput "
                     "cells are empty")
    rate = None  # the per-GPU TFLOPS of each step the tflops series stands for
    if "tflops" not in emptied:
        found, rate = tflops_finding(red, gpus, ctx.placement.nodes, ctx.placement.system)
        if found.note:
            notes.append(found.note)
            leave_empty(found.empty)
    if mfu_unknown:
        notes.append(f"mfu is 0.0 on every step ({MFU_ZERO_MEANS}); left empty")
    elif "mfu" not in emptied and rate is not None:
        found = peak_finding(red, gpus, ctx.placement.system, ctx.placement.nodes,
                             None if "tflops" not in emptied else rate)
        if found.note:
            notes.append(found.note)
            leave_empty(found.empty)
    return {
        **{col: fmt(value[name], 3) for name, col in RATE_COLUMNS.items()},
        "final_loss": fmt(red.final_loss, 6),
    }


def _invalid_shares(red: Reduced, notes: list[Text]) -> set[str]:
    """Rates of which more than :data:`INVALID_SHARE_MAX` of the logged values were
    impossible; the note on mfu above 100 either way."""
    out = set()
    for name in RATE_COLUMNS:
        over = red.mfu_over_100 if name == "mfu" else 0
        bad = red.invalid.get(name, 0) + over
        logged = bad + red.stats[name].present
        empty = bad > INVALID_SHARE_MAX * logged
        left = ""
        if empty:
            left = f"; {RATE_COLUMNS[name]} left empty" + (
                f": {bad} of {logged} steps dropped, over {INVALID_SHARE_MAX:.0%}, and the "
                "rest is not a measurement of the run" if red.stats[name].present else "")
        if over:
            notes.append(f"dropped {plural(over, 'mfu value')} above 100 % (FP8 measured "
                         "against a BF16 peak, or fsdp_tp's tensor-parallel over-count): not "
                         f"a utilisation{left}")
        elif empty:
            notes.append(f"{bad} of {logged} {name} values are negative{left}")
        if empty:
            out.add(name)
    return out


def _too_few_steps(ctx: Context, emptied: set[str], notes: list[Text]) -> set[str]:
    """Rates that would come from fewer than :data:`MIN_RATE_STEPS` steps after warmup.

    A run that short is refused, naming the largest ``--warmup`` that leaves
    enough (``--warmup 0`` for a run without a warmup step); with ``--status
    fail``, or in a run long enough (a series logged on one step only), the cells
    are left empty.
    """
    import numpy as np

    red, warmup = ctx.red, ctx.opts.warmup
    st = red.stats
    short = {name: 0 if st[name].kept_warmup else st[name].used for name in RATE_COLUMNS
             if st[name].present and name not in emptied
             and (st[name].kept_warmup or st[name].used < MIN_RATE_STEPS)}
    if not short:
        return set()
    names = _listed([RATE_COLUMNS[name] for name in short])
    fewest = min(short.values())
    after = (f"{plural(fewest, 'step')} after " + opt("warmup", warmup)
             + f" ({plural(red.steps, 'step')} logged)")
    if red.steps - warmup >= MIN_RATE_STEPS or ctx.opts.status == "fail":
        notes.append(f"{names} left empty: " + after + " is not a measurement of the run's rate")
        return set(short)
    logged = [np.flatnonzero(np.isfinite(st[name].values)) for name in short]
    if warmup and all(at.size >= MIN_RATE_STEPS for at in logged):
        most = min(int(at[-MIN_RATE_STEPS]) for at in logged)  # leaves 2 values of each
        none: Text = opt("warmup", 0) + " if the run had no warmup step"
        which = opt("warmup", most) + " or less (" + none + ")" if most else none
        raise AmscError(f"{names} would come from " + after + ": too few to measure the run's "
                        "rate (the first step is usually a slow warmup); pass " + which)
    raise AmscError(f"{names} would come from " + after + ": one step is not a measurement of "
                    "the run's rate; if the run failed, pass " + opt("status", "fail")
                    + " (the rate cells are then left empty)")


def _listed(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _per_gpu_over_flag(ctx: Context, value: dict[str, float | None],
                       notes: list[Text]) -> float | None:
    """tokens/s/gpu as global / ``--gpus`` when the flag overrides a logged ratio that
    disagrees: the logged per-GPU figure is the one that is wrong."""
    from ezpz_amsc.run.identities import logged_world_size

    gpus, tps, tpg = ctx.placement.gpus, value["tps"], value["tps_per_gpu"]
    if ctx.placement.gpus_source != "flag" or tps is None or tpg is None:
        return tpg
    logged = logged_world_size(ctx.red)
    if logged is None or logged == gpus:
        return tpg
    key = ctx.steps.keys_used["tps_per_gpu"]
    notes.append("throughput_tokens_per_sec_per_gpu is global / " + opt("gpus", gpus)
                 + f"; the logged {key} ({tpg:.3f}, for {plural(logged, 'rank')}) was not used")
    return tps / gpus


def _accumulation(ctx: Context) -> str:
    """``; train/accum is 8 (gradient accumulation)`` when the records log an accumulation
    count above 1: a second pass over the chosen rank's metrics file (a rare path)."""
    import numpy as np

    from ezpz_amsc.run.crosschecks import exported_window
    from ezpz_amsc.run.reduce import median_sorted
    from ezpz_amsc.run.steps import values_of_keys

    window = exported_window(ctx.red)
    if window is None:
        return ""
    found = values_of_keys(ctx.steps, (b"accum",), lambda k: "accum" in k.lower(), window)
    said = [f"{k} is {median_sorted(np.sort(np.array(v))):g}" for k, v in sorted(found.items())
            if median_sorted(np.sort(np.array(v))) > 1]
    return f"; {', '.join(said)} (gradient accumulation)" if said else ""
