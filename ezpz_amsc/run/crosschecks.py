"""Cross-check the sources of a row before it is published (docs/numbers.md, "Cross-checks").

A row is built from sources that can disagree: provenance (where the run ran),
the step timers, the clock, the throughput counters. Where two of them can be
compared, they are compared here. Each check returns notes when the row stays
right, and raises :class:`AmscError` naming the flag that settles it when the
row would be wrong. :data:`CHECKS` lists every check in the order it runs.

Some cross-checks happen earlier, where the value is chosen: nodes against
ranks per node and NUM_NODES, and spreadsheet-unsafe MACHINE names
(``provenance``); provenance only from the metrics folder and its parents
(``discover``); every file filtered by rank and only training throughput keys
(``steps``); mfu above 100 dropped, attempts split, the first plausible
timestamp chosen (``reduce``); spreadsheet-unsafe flags (``export``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ezpz_amsc.errors import AmscError, SeveralAttempts
from ezpz_amsc.results.schema import format_timestamp
from ezpz_amsc.run.details import Segment
from ezpz_amsc.run.layout import RunFiles, rel_to
from ezpz_amsc.run.placement import Placement, Provenance
from ezpz_amsc.run.steps import (
    CHECKPOINT_KEY,
    CHECKPOINT_NEEDLES,
    EPOCH_KEYS,
    RESTART_KEY,
    RESTART_NEEDLES,
    Steps,
)
from ezpz_amsc.text import Text, opt, plural

if TYPE_CHECKING:
    from pathlib import Path

    from ezpz_amsc.options import ExportOptions
    from ezpz_amsc.run.reduce import Boundary, Reduced

# Step time vs the clock, over steps 2..n. Each record's dt elapses between the
# previous record's write and its own, so the summed dt can never exceed the
# records' time span; 1.25 leaves room for timer granularity. (Below: a note under
# reduce.STEP_TIME_UNDER_SPAN_MIN of the span, shared with the throughput identity.)
STEP_TIME_OVER_SPAN_MAX = 1.25
# A first logged step above this many logging strides, plus the one step that ends an
# unlogged warmup of that many: the run was resumed (the minimal example logs from step 6
# after 5 warmup steps, and from step 11 after its default WARMUP_ITERS=10: no resume).
RESUMED_STRIDES = 10
# Provenance written this long before the last metrics record is an earlier
# attempt's (finalize writes it seconds after the last step).
STALE_PROVENANCE_SEC = 300.0
# Provenance written before the first exported record (finalize runs after the last one)
# belongs to another launch. The file time and the records' timestamps are both taken
# on rank 0's host (or its file server), NTP-synchronised: a minute covers any skew,
# and a relaunch into the folder starts minutes later (2 min in the case that showed it).
PROVENANCE_CLOCK_SLACK_SEC = 60.0
# In one shared file, another rank logging this many times the chosen rank's records
# stopped later. Per-rank files are compared by their last step instead: file sizes
# say nothing (rank 0 alone writes the aggregated keys, its records are several
# times larger); the ends of this many other files are read.
RANK_RECORDS_RATIO = 1.5
RANK_FILES_READ = 3
# Structured logs whose end is read for ezpz launch's exit status (one per launch).
LAUNCH_LOGS_READ = 2


@dataclass
class Context:
    """Everything a check may compare: the options, the files, and what each stage made."""

    opts: ExportOptions
    files: RunFiles
    prov: Provenance
    placement: Placement
    steps: Steps  # empty when the run has no metrics file
    red: Reduced  # ``steps == 0`` when no training step was logged


Check = Callable[[Context], list[Text]]


def duration(sec: float) -> str:
    """A human length of time for notes: ``75 s``, ``42 min``, ``3.5 h``, ``6 days``."""
    if sec < 120:
        return f"{sec:.3g} s"
    if sec < 7200:
        return f"{sec / 60:.0f} min"
    if sec < 3 * 86400:
        return f"{sec / 3600:.1f} h"
    return f"{sec / 86400:.0f} days"


def _step_name(x: float | None) -> str:
    return f"step {int(x)}" if x is not None and math.isfinite(x) else "a step without number"


def _when(ts: float | None) -> str:
    return format_timestamp(ts) if ts is not None else "no timestamp"


# ---------------------------------------------------------------- attempts


def _segment_text(k: int, seg: Segment, counter: str | None) -> str:
    unit = "epochs" if counter in EPOCH_KEYS else "steps"
    steps = (f"{unit} {int(seg.first_step)}..{int(seg.last_step)}"
             if seg.first_step is not None and seg.last_step is not None else "no step numbers")
    ranks = f", {plural(seg.ranks, 'rank')}" if seg.ranks is not None else ""
    return (f"#{k} {steps} from {_when(seg.first_timestamp)} "
            f"({plural(seg.records, 'record')}{ranks})")


def boundary_text(b: Boundary, counter: str | None) -> str:
    """The evidence that an attempt starts here, e.g. ``step numbers start again (step 1
    after step 20)``."""
    unit = "epoch" if counter in EPOCH_KEYS else "step"
    why = []
    if b.restart is not None:
        why.append(f"{unit} numbers start again ({unit} {b.restart[1]:.0f} after "
                   f"{unit} {b.restart[0]:.0f})")
    if b.ranks is not None:
        why.append(f"the logged world size changes ({b.ranks[0]} to {b.ranks[1]} ranks)")
    if b.shift is not None:
        ratio, sec = b.shift
        how = f"{ratio:.3g}x higher" if ratio > 1 else f"{1 / ratio:.3g}x lower"
        why.append(f"throughput {how} after a {duration(sec)} pause")
    return " and ".join(why)


def check_attempts(ctx: Context) -> list[Text]:
    """Step numbers that start again, a change of world size, or of the throughput level
    across a long pause, split the records; the evidence is named for each.

    Summing two attempts gives a plausible wrong row, so several attempts are
    refused unless ``--attempt`` names the one to export.
    """
    red = ctx.red
    if not red.segments:
        return []
    segs = red.segments
    if len(segs) > 1 and red.attempt is None:
        shown = [_segment_text(1, segs[0], red.counter)] + [
            f"{_segment_text(k, s, red.counter)}: {boundary_text(b, red.counter)}"
            for k, (s, b) in enumerate(zip(segs[1:], red.boundaries, strict=True), 2)]
        if len(shown) > 6:
            shown = [*shown[:5], f"... {len(shown) - 6} more", shown[-1]]
        raise SeveralAttempts(
            f"the records hold {len(segs)} attempts (a retried or resumed job): "
            f"{'; '.join(shown)}; pass " + opt("attempt", "last") + ", or "
            + opt("attempt", "N") + " for one of them",
            attempts=len(segs))
    if ctx.opts.attempt is None:
        return []
    if len(segs) == 1:
        return [opt("attempt", ctx.opts.attempt) + ": the records hold one attempt; used all of it"]
    k = red.attempt or 0
    left = sum(s.records for s in segs) - segs[k - 1].records
    return [f"exported attempt {_segment_text(k, segs[k - 1], red.counter)} of {len(segs)}; "
            f"left out {plural(left, 'record')} of the others"]


# ---------------------------------------------------------------- clock sanity


def clock_problem(ts: float, now_sec: float) -> str:
    """Why a step timestamp cannot be a run's time, for notes and errors."""
    from ezpz_amsc.results.schema import CLOCK_SLACK_SEC, TIMESTAMP_MIN

    hi = now_sec + CLOCK_SLACK_SEC
    for scale, unit in ((1e3, "milliseconds"), (1e6, "microseconds"), (1e9, "nanoseconds")):
        if TIMESTAMP_MIN <= ts / scale <= hi:
            return f"{ts!r} looks like {unit} since 1970, not Unix seconds"
    when = f" ({format_timestamp(ts)})" if 0 <= ts <= 253402300799 else ""
    if ts < TIMESTAMP_MIN:
        return f"{ts!r}{when} is before 2015 (a clock counting from boot, like time.monotonic?)"
    return f"{ts!r}{when} is later than now (a skewed clock?)"


def check_clock(ctx: Context) -> list[Text]:
    """Step timestamps before 2015, later than now, or in milliseconds; a skewed first step."""
    import time

    red = ctx.red
    t, flag = red.timestamps, ctx.opts.timestamp
    if not red.steps:
        return []
    if not t.present:
        return []
    now_sec = time.time()
    notes: list[Text] = []
    if t.implausible * 2 > t.present or (t.implausible and t.used_index is None):
        why = clock_problem(t.first_bad, now_sec) if t.first_bad is not None else "unusable"
        if flag is None:
            raise AmscError(f"step timestamps cannot be the run's time: {why} "
                            f"({t.implausible} of {plural(t.present, 'step')}); "
                            "pass " + opt("timestamp", "YYYY-MM-DDTHH:MM:SSZ"))
        return [f"ignored {t.implausible} of {plural(t.present, 'step timestamp')} ({why}); "
                "timestamp from " + opt("timestamp")]
    others = t.implausible
    if t.used_index and flag is None:
        assert red.first_timestamp is not None
        subject = float(red.step_values[0])
        if t.skewed_first:
            assert t.skewed_ts is not None and t.skewed_step is not None
            subject = t.skewed_step
            reason = f"{format_timestamp(t.skewed_ts)} {t.skewed_first}"
        elif t.first_step_raw is not None:
            reason = clock_problem(t.first_step_raw, now_sec)
            others -= 1
        else:
            reason = "is missing or not a number"
        notes.append(f"{_step_name(subject)}'s timestamp {reason}; the row's "
                     f"timestamp is {_step_name(t.used_step)}'s "
                     f"({format_timestamp(red.first_timestamp)}); pass " + opt("timestamp")
                     + " to set it")
    if others > 0:
        assert t.first_bad is not None
        notes.append(f"ignored {plural(others, 'step timestamp')} before 2015 or later than now "
                     f"(e.g. {clock_problem(t.first_bad, now_sec)})")
    return notes


# ---------------------------------------------------------------- which records


def check_training_steps(ctx: Context) -> list[Text]:
    """Records without the step counter (eval batches) are not steps; epochs are said so."""
    red, steps = ctx.red, ctx.steps
    notes: list[Text] = []
    if red.not_steps:
        notes.append(f"left out {plural(red.not_steps, 'record')} without {red.counter} "
                     "(eval batches, summaries): not training steps")
    if red.not_training:
        carried = ", ".join(sorted(steps.keys_used.values()))
        notes.append(f"left out {plural(red.not_training, 'record')} with {red.counter} but "
                     f"none of the training series the others log ({carried}): eval or "
                     "summary records, not training steps")
    if red.duplicates:
        notes.append(f"dropped {plural(red.duplicates, 'record')} identical to an earlier one "
                     "(same step, timestamp and values: a line written twice)")
    if red.by_epoch:
        notes.append(f"{red.counter} starts again each epoch (the epoch number advances): one "
                     f"attempt, its records ordered by epoch, then {red.counter}")
    if red.counter in EPOCH_KEYS and red.steps:
        notes.append(f"records are epochs ({red.counter} is the only counter): steps counts "
                     "epochs, and restarts are detected on the epoch number")
    return notes


def check_rank_filter(ctx: Context) -> list[Text]:
    """A per-rank file that also holds other ranks' records (files named by local rank)."""
    steps, src = ctx.steps, ctx.files.metrics
    others = {r: n for r, n in steps.other_ranks.items() if r is not None}
    # One interleaved file holds every rank by design; others' records come from a file.
    if not others or src is None or src.scheme != "per-rank":
        return []
    ranks = ", ".join(str(r) for r in sorted(others)[:4]) + (", ..." if len(others) > 4 else "")
    return [f"{steps.files_read[-1].name} also holds {plural(sum(others.values()), 'record')} "
            f"of rank {ranks} (files named by local rank?); used rank {steps.rank}'s only"]


def check_throughput_keys(ctx: Context) -> list[Text]:
    """Bare ``tokens_per_sec`` is inference, per rank: never the row's training throughput."""
    ignored = ctx.steps.ignored_throughput
    if not ctx.red.steps or not ignored:
        return []
    keys = ", ".join(sorted(ignored))
    return [f"ignored bare {keys}: not training throughput (bare tokens_per_sec is ezpz's "
            "inference rate, per rank); only train/tps, train/tps_per_gpu and "
            "train/tokens_per_sec are"]


# ---------------------------------------------------------------- gpus vs throughput


def check_gpus(ctx: Context) -> list[Text]:
    """``gpus`` against the world size the logged throughput implies (global / per-GPU)."""
    import numpy as np

    from ezpz_amsc.run.identities import logged_world_size
    from ezpz_amsc.run.reduce import median_sorted

    steps, red = ctx.steps, ctx.red
    if not red.steps:
        return []
    gpus, source = ctx.placement.gpus, ctx.placement.gpus_source
    tps, tpg = red.stats["tps"].values, red.stats["tps_per_gpu"].values
    # 0 / 0 says nothing; a per-GPU 0 beside a global rate is a ratio of inf, said so
    both = np.isfinite(tps) & np.isfinite(tpg) & ((tpg > 0) | (tps > 0))
    if not both.any():
        if source == "NGPUS":
            return [f"gpus {gpus} is the allocation's NGPUS: no world size was recorded and no "
                    "per-GPU throughput was logged to check it; pass " + opt("gpus", "N")
                    + " if fewer ranks ran"]
        return []
    # a finite value of each was read, so each has its key
    names = f"{steps.keys_used['tps']} / {steps.keys_used['tps_per_gpu']}"
    logged = logged_world_size(red)
    if logged is None:
        with np.errstate(all="ignore"):  # x / 0 is inf, never NaN: 0 / 0 is not in both
            ratio = median_sorted(np.sort(tps[both] / tpg[both]))
        return [f"logged {names} is {ratio:.4g}, not a whole number of ranks; "
                f"gpus {gpus} not checked against it"]
    if logged == gpus:
        return []
    if source == "flag":
        return [opt("gpus", gpus) + f" differs from the {plural(logged, 'rank')} the logged "
                f"throughput implies ({names} = {logged}); kept " + opt("gpus", gpus)]
    raise AmscError(ctx.placement.how["gpus"] + " disagrees with the logged throughput: "
                    f"{names} = {logged}; pass " + opt("gpus", logged) + " (or "
                    + opt("gpus", gpus) + " if the per-GPU figure is what is wrong)")


# ---------------------------------------------------------------- step time vs clock


def check_step_time(ctx: Context) -> list[Text]:
    """Summed ``dt`` against the records' time span, and pauses between records."""
    import numpy as np

    with np.errstate(all="ignore"):  # step times near float max: inf, not a warning
        return _step_time(ctx)


def _step_time(ctx: Context) -> list[Text]:
    import numpy as np

    from ezpz_amsc.run.reduce import (
        GAP_MIN_SEC,
        STEP_TIME_UNDER_SPAN_MIN,
        UNCOVERED_MIN_SEC,
        typical_and_long,
    )

    red = ctx.red
    if not red.steps:
        return []
    ts, step, dt = red.ts_values, red.step_values, red.stats["dt"].values
    flag = ctx.opts.wall_time_sec is not None
    span_each = np.diff(ts)
    # Steps each interval covers: 10 when logging every 10th step, 9 for "plus the last".
    steps_each = np.diff(step) if red.counter is not None else np.ones(span_each.size)
    dt_each = dt[1:]
    # Every interval with elapsed time and a step time counts against the clock, whatever
    # the counter does; pauses and coverage need a whole number of steps between records.
    timed = np.isfinite(span_each) & (span_each > 0) & np.isfinite(dt_each)
    if not timed.any():
        return []
    if timed.all():  # the same sums without masked copies of a long run's columns
        span, summed = float(span_each.sum()), float(dt_each.sum())
    else:
        span, summed = float(span_each[timed].sum()), float(dt_each[timed].sum())
    if not summed <= STEP_TIME_OVER_SPAN_MAX * span + 1e-3 * int(timed.sum()):
        why = (f"step times add up to {summed:.4g} s, {summed / span:.3g}x the {span:.4g} s "
               "between the first and last record: dt is not in seconds, or the records are "
               "not one process's")
        if not flag:
            raise AmscError(f"{why}; pass " + opt("wall_time_sec", "SECONDS"))
        return [f"{why}; wall_time_sec from " + opt("wall_time_sec")]

    notes: list[Text] = []
    ok = timed & np.isfinite(steps_each) & (steps_each >= 1)
    if not ok.any():
        return []
    typical, long = typical_and_long(span_each, steps_each, ok)
    # Judged by their total: many short pauses (a checkpoint every few minutes) add up.
    paused = float((span_each[long] - typical * steps_each[long]).sum())
    gap = long if paused > GAP_MIN_SEC else np.zeros(ok.size, dtype=bool)
    if gap.any():
        k = int(np.argmax(np.where(gap, span_each, -np.inf)))
        n = int(gap.sum())
        hint: Text = "" if flag else "; pass " + opt("wall_time_sec", "SECONDS") + " to count it"
        total = "" if n == 1 else f", {duration(paused)} in all"
        notes.append(
            f"{plural(n, 'pause')} between records far above the typical "
            f"{typical:.3g} s per step{total}: the longest {duration(float(span_each[k]))} "
            f"between {_step_name(float(step[k]))} and {_step_name(float(step[k + 1]))} "
            f"(eval, checkpointing, a restart?){checkpoint_evidence(ctx)}; wall_time_sec, "
            f"the summed step time, leaves {'it' if n == 1 else 'them'} out" + hint)
    rest = ok & ~gap
    if rest.all():
        covered, between = float((dt_each * steps_each).sum()), float(span_each.sum())
    else:
        covered = float((dt_each[rest] * steps_each[rest]).sum())
        between = float(span_each[rest].sum())
    if (not flag and covered < STEP_TIME_UNDER_SPAN_MIN * between  # dt > 0: between > 0 too
            and between - covered >= UNCOVERED_MIN_SEC):
        scaled = " (scaled for the steps not logged)" if bool((steps_each[rest] > 1).any()) else ""
        where = " outside the pauses" if gap.any() else ""
        notes.append(
            f"step times{scaled} cover {covered:.4g} s of the {between:.4g} s between the "
            f"first and last record{where} ({covered / between:.0%}): dt may miss part of each "
            "step (gradient accumulation timing only the last micro-batch), or the run paused "
            "(eval, checkpoints); wall_time_sec is the summed step time; pass "
            + opt("wall_time_sec", "SECONDS") + " for the job's real time")
    return notes




def exported_window(red: Reduced) -> tuple[float, float] | None:
    """First and last plausible timestamp of the exported steps."""
    import numpy as np

    ts = red.ts_values[np.isfinite(red.ts_values)]
    return (float(ts.min()), float(ts.max())) if ts.size else None


def checkpoint_evidence(ctx: Context) -> str:
    """``; train/ckpt_stage_seconds logged 3 min of checkpointing``, when the records log it.

    A second pass over the chosen rank's metrics file: run only when a pause is noted.
    """
    from ezpz_amsc.run.steps import values_of_keys

    window = exported_window(ctx.red)
    if window is None:
        return ""
    found = values_of_keys(ctx.steps, CHECKPOINT_NEEDLES,
                           lambda k: CHECKPOINT_KEY.search(k) is not None, window)
    said = [f"{k} logged {duration(sum(v))} of checkpointing" for k, v in sorted(found.items())
            if sum(v) > 0]
    return "; " + ", ".join(said) if said else ""


def check_resumed(ctx: Context) -> list[Text]:
    """A first logged step far above the logging stride: the row covers part of the run."""
    import numpy as np

    red = ctx.red
    if not red.steps or red.counter is None:
        return []
    step = red.step_values[np.isfinite(red.step_values)]
    if not step.size:
        return []
    stride = red.coverage.stride if red.coverage else 1
    first, last = float(step.min()), float(step.max())
    every = "every step" if stride == 1 else f"every {stride} steps"
    if first <= RESUMED_STRIDES * stride + 1:
        said = _restart_logged(ctx) if first > stride else None
        if said is None:
            return []
        return [f"first logged step is {int(first)} (logged {every}) and its record logs "
                f"{said}: the run was resumed; the row covers steps {int(first)}..{int(last)} "
                "only"]
    return [f"first logged step is {int(first)} (logged {every}): the run was resumed, or did "
            f"not log its first steps; the row covers steps {int(first)}..{int(last)} only"]


def _restart_logged(ctx: Context) -> str | None:
    """The restart key (``train/restart_seconds``) the first exported record logs, if any:
    a second pass over the chosen rank's file, only for a run that logs from a late step."""
    from ezpz_amsc.run.steps import values_of_keys

    ts = float(ctx.red.ts_values[0]) if ctx.red.ts_values.size else math.nan
    if not math.isfinite(ts):
        return None
    found = values_of_keys(ctx.steps, RESTART_NEEDLES,
                           lambda k: RESTART_KEY.search(k) is not None, (ts, ts))
    return min(found) if found else None


# ---------------------------------------------------------------- values


def check_final_loss(ctx: Context) -> list[Text]:
    """A diverged run's last finite loss is stale: the cell stays empty, with this note."""
    red = ctx.red
    if not red.loss_nonfinite_tail:
        return []
    stale = ""
    if red.stale_loss is not None:
        value, at = red.stale_loss
        stale = f", not the stale {value:.6g} of {_step_name(at)}"
    return [f"loss is NaN or infinite on the last {plural(red.loss_nonfinite_tail, 'step')} "
            f"that logged it (the run diverged?); final_loss left empty{stale}"
            + _fail_hint(ctx.opts.status, "run")]


# ---------------------------------------------------------------- files


def check_rank0_stopped_early(ctx: Context) -> list[Text]:
    """Other ranks logged beyond the chosen one: it stopped early.

    Per-rank files: the last record of a few other ranks' files (their ends only,
    never read whole) against the chosen rank's last step. One shared file: the
    records every rank logged, counted while it was read.
    """
    steps, red, src = ctx.steps, ctx.red, ctx.files.metrics
    if not red.steps or src is None:
        return []
    if src.scheme != "per-rank":  # one file, parsed anyway: other ranks' records are counted
        mine = len(steps)
        larger = _far_larger({r: n for r, n in steps.other_ranks.items() if r is not None},
                             mine)
        what = larger and f"rank {larger[0]} logged {larger[1]} records, rank {steps.rank} " \
                          f"only {mine}"
    else:
        what = _further_rank_file(ctx, src.per_rank)
    if not what:
        return []
    return [f"{what}: rank {steps.rank} may have stopped early; the row covers its "
            f"{plural(red.steps, 'step')} only"]


def _further_rank_file(ctx: Context, per_rank: Mapping[int, Path]) -> str | None:
    """Another rank's file whose last record is further on than the chosen rank's last
    step by more than a logging stride (the first, middle and last other files)."""
    import numpy as np

    from ezpz_amsc.run.steps import last_logged_step

    steps, red = ctx.steps, ctx.red
    if red.counter is None or (red.attempt is not None and red.attempt < len(red.segments)):
        return None  # no step numbers, or an earlier attempt: nothing to compare with
    # files_read[-1] is the steps' file: the rank's own, or (no file holds its own rank)
    # the file numbered otherwise that its records were found in, no other rank's.
    own_path = steps.files_read[-1]
    numbered = np.flatnonzero(np.isfinite(red.step_values))  # in order: a step without
    if not numbered.size:  # a number sorts last
        return None
    k = int(numbered[-1])
    ours = (float(red.epoch_values[k]) if red.by_epoch else math.nan, float(red.step_values[k]))
    stride = red.coverage.stride if red.coverage else 1
    others = sorted(r for r in per_rank if r != steps.rank)
    picks = sorted({others[0], others[len(others) // 2], others[-1]} if others else set())
    further = []
    for r in picks[:RANK_FILES_READ]:
        path = per_rank[r]
        theirs = None if path == own_path else last_logged_step(path, red.counter)
        if theirs is not None and _further(theirs, ours, stride, red.by_epoch):
            further.append((theirs, r))
    if not further:
        return None
    theirs, r = max(further, key=lambda x: (x[0][0] if red.by_epoch else 0, x[0][1]))
    at, mine = _position(theirs, red.by_epoch), _position(ours, red.by_epoch)
    if steps.rank in per_rank:
        return f"rank {r}'s last record is {at}, rank {steps.rank}'s {mine}"
    return (f"the last record of {per_rank[r].name} is {at}, of {own_path.name} (rank "
            f"{steps.rank}'s) {mine}")


def _position(where: tuple[float, float], by_epoch: bool) -> str:
    """``step 30``, or ``epoch 2 step 30`` when the step counter restarts each epoch."""
    return (f"epoch {where[0]:.0f} " if by_epoch else "") + f"step {where[1]:.0f}"


def _further(theirs: tuple[float, float], ours: tuple[float, float], stride: int,
             by_epoch: bool) -> bool:
    """Another rank's last (epoch, step) more than one logging stride past ours."""
    if by_epoch and theirs[0] != ours[0]:
        return theirs[0] > ours[0]
    return theirs[1] > ours[1] + stride


def _far_larger(amounts: dict[int, int], own: int) -> tuple[int, int] | None:
    """The rank with the most records, when far more than the chosen rank's."""
    if not amounts or not own:
        return None
    rank, most = max(amounts.items(), key=lambda kv: kv[1])
    return (rank, most) if most > RANK_RECORDS_RATIO * own else None


def unfinished_evidence(ctx: Context) -> list[str]:
    """Signs that the job did not reach ``History.finalize()`` (it cannot prove success)."""
    files, steps, red = ctx.files, ctx.steps, ctx.red
    why = []
    if steps.truncated_last_line:
        why.append(f"{steps.files_read[-1].name} ends in a truncated line")
    if not files.run_info and not files.reports and not files.finalized_elsewhere:
        why.append("no run_info.json and no report: History.finalize() did not run")
    window = exported_window(red)
    last, first = red.timestamps.last_read, window[0] if window else None
    before_first: list[tuple[str, str]] = []
    before_last: list[tuple[str, str]] = []
    for path in (*files.run_info[:1], *files.reports[:1]):
        try:
            written = os.stat(path).st_mtime
        except OSError:
            continue
        if first is not None and written < first - PROVENANCE_CLOCK_SLACK_SEC:
            before_first.append((rel_to(files.root, path), duration(first - written)))
        elif last is not None and written < last - STALE_PROVENANCE_SEC:
            before_last.append((rel_to(files.root, path), duration(last - written)))
    if before_first:
        why.append(f"{_written(before_first)} before the first exported record: another "
                   "launch's; the row may be a relaunch into this folder that was killed "
                   "before finalize")
    if before_last:
        why.append(f"{_written(before_last)} before the last metrics record: an earlier "
                   "attempt's")
    return why


def _written(files_ago: list[tuple[str, str]]) -> str:
    """``run_info.json was written 2 min``, or ``a was written 2 min and b 116 s``."""
    (name, ago), *rest = files_ago
    return f"{name} was written {ago}" + "".join(f" and {n} {a}" for n, a in rest)


def check_finished(ctx: Context) -> list[Text]:
    """Unfinished or stale evidence is noted; the status is never changed for the user."""
    why = unfinished_evidence(ctx)
    if not why:
        return []
    status = ctx.opts.status
    return [f"run looks unfinished ({'; '.join(why)}); status stays {status!r}"
            + _fail_hint(status, "job")]


def _fail_hint(status: str, what: str) -> Text:
    """``; pass --status fail if the run failed`` while the status is pass."""
    return "; pass " + opt("status", "fail") + f" if the {what} failed" if status == "pass" else ""


def check_launch_log(ctx: Context) -> list[Text]:
    """``ezpz launch``'s log in the run directory says the job exited non-zero."""
    from ezpz_amsc.run.layout import launch_exit_status

    latest = sorted(ctx.files.skipped_logs, key=lambda p: p.name, reverse=True)
    for path in latest[:LAUNCH_LOGS_READ]:
        status = launch_exit_status(path)
        if status is None:
            continue
        if status == 0:
            return []
        given = ctx.opts.status
        return [f"{rel_to(ctx.files.root, path)} says the job exited with status {status} "
                f"(ezpz launch: 'Execution finished with {status}.'); status stays {given!r}"
                + _fail_hint(given, "job")]
    return []


# Every cross-check, in the order it runs: the first refusal wins, so checks that
# decide which records are the run come before checks that compare their values.
CHECKS: tuple[Check, ...] = (
    check_attempts,             # retries and resumes split the records, by their evidence
    check_clock,                # step timestamps before 2015, in the future, in ms
    check_training_steps,       # eval records, duplicates, epochs
    check_rank_filter,          # a per-rank file holding other ranks' records
    check_throughput_keys,      # bare tokens_per_sec is not training throughput
    check_gpus,                 # gpus vs logged global / per-GPU throughput
    check_step_time,            # summed dt vs the clock; pauses between records
    check_resumed,              # a first step far above the logging stride
    check_final_loss,           # a diverged run's loss
    check_rank0_stopped_early,  # other ranks' last step further on
    check_finished,             # unfinished run, provenance older than the metrics
    check_launch_log,           # ezpz launch logged a non-zero exit status
)


def run_checks(ctx: Context) -> list[Text]:
    """Run every check; notes in :data:`CHECKS` order, or the first refusal."""
    notes: list[Text] = []
    for check in CHECKS:
        notes.extend(check(ctx))
    return notes
