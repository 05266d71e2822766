"""The pipeline end to end: run directory in, one row plus its story out.

find files → read steps → provenance → reduce → row. Pure: no printing, no
writing; the CLI and the finalize hook decide where rows and notes go.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .checks import Context, plural, run_checks, unfinished_evidence
from .discover import find_run_files
from .errors import AmscError
from .options import ExportOptions  # re-exported: its home moved to options.py
from .provenance import load_provenance, resolve_placement
from .row import build_row, dashboard_problems, fmt, format_timestamp
from .steps import Digest, Steps, read_steps

if TYPE_CHECKING:
    from .reduce import Reduced

__all__ = ["ExportOptions", "ExportResult", "export_many", "export_run", "plural"]


@dataclass
class FilesRead:
    """The files a row came from, for its provenance record."""

    root: Path
    metrics: list[Path]  # in the order read
    digests: dict[Path, Digest]  # of the metrics files, taken while they were read
    provenance: list[Path]  # the files placement used
    run_info: list[Path]  # every run_info.json found, nearest first


@dataclass
class ExportResult:
    row: dict[str, str]
    notes: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    read: FilesRead | None = None  # only when export_run was asked to hash


def coverage_text(red: Reduced) -> str | None:
    """``30 of ~300 steps (...)`` when the logged step numbers leave gaps."""
    cov = red.coverage
    timed = red.stats["dt"].present if "dt" in red.stats else 0
    if cov is None or not timed:
        return None
    every = f"every {cov.stride} steps" if cov.stride > 1 else "with gaps"
    return (f"{timed} of ~{cov.estimated_total} steps (logged {every}, "
            f"steps {cov.first}..{cov.last})")


def _reading_notes(steps: Steps, n: int, max_line: int) -> list[str]:
    """What reading the metrics skipped or fell back on."""
    notes = []
    if steps.rank not in (0, None) and n:
        notes.append(f"rank 0 logged no step; used rank {steps.rank}")
    dropped = {k: v for k, v in steps.nonfinite.items() if v}
    if dropped:
        parts = ", ".join(f"{k} {v}" for k, v in dropped.items())
        notes.append(f"dropped {sum(dropped.values())} non-finite values ({parts})")
    if steps.bad_lines:
        notes.append(f"skipped {plural(steps.bad_lines, 'unparsable line')}")
    if steps.long_lines:
        size = f"{max_line >> 20} MiB" if max_line >= 1 << 20 else f"{max_line} bytes"
        notes.append(f"skipped {plural(steps.long_lines, 'line')} over {size} unread")
    if steps.truncated_last_line:
        notes.append(f"last line of {steps.files_read[-1].name} is truncated; ignored it")
    return notes


def _time_values(ctx: Context, notes: list[str]) -> dict[str, Any]:
    """timestamp and wall_time_sec: from the steps, else the flags; refuse when neither."""
    opts, red = ctx.opts, ctx.red
    n = red.steps if red is not None else 0
    values: dict[str, Any] = {}
    missing: list[str] = []
    if opts.timestamp:
        values["timestamp"] = opts.timestamp
    elif red is not None and red.first_timestamp is not None:
        values["timestamp"] = format_timestamp(red.first_timestamp)
    else:
        missing.append("--timestamp YYYY-MM-DDTHH:MM:SSZ")

    # Summed step time over all steps (warmup included), else the flag.
    summed = red.wall_time_sec if red is not None else None
    covers = coverage_text(red) if red is not None else None
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
        why = "no step was logged" if n == 0 else "the steps do not record it"
        if red is not None and red.invalid.get("dt") and red.wall_time_sec is None:
            why += f"; all {red.invalid['dt']} step times logged are zero or negative"
        what = ", ".join(m.split()[0][2:].replace("-", "_") for m in missing)
        raise AmscError(f"cannot tell {what} ({why}); pass {' '.join(missing)}")
    return values


def _metric_values(ctx: Context, notes: list[str]) -> dict[str, Any]:
    """The reduced metric cells; a throughput logged one way only is derived the other."""
    red, gpus = ctx.red, ctx.placement.gpus
    if red is None or not red.steps:
        return {}
    st = red.stats
    tps, tpg = st["tps"].value, st["tps_per_gpu"].value
    if tps is None and tpg is not None:
        tps = tpg * gpus
        notes.append(f"throughput_tokens_per_sec derived as per-GPU x {gpus} gpus "
                     "(no global throughput logged)")
    elif tpg is None and tps is not None:
        tpg = tps / gpus
        notes.append(f"throughput_tokens_per_sec_per_gpu derived as global / "
                     f"{gpus} gpus (no per-GPU throughput logged)")
    mfu = st["mfu"].value
    if st["mfu"].all_zero:
        mfu = None
        notes.append("mfu is 0.0 on every step (ezpz writes 0.0 when it does not know the "
                     "device's peak FLOPS); left empty")
    for name, s in st.items():
        if s.kept_warmup:
            notes.append(f"--warmup {ctx.opts.warmup} leaves no {name} values; reduced all "
                         f"{plural(s.used, 'step')}")
    return {
        "throughput_tokens_per_sec": fmt(tps, 3),
        "throughput_tokens_per_sec_per_gpu": fmt(tpg, 3),
        "mfu": fmt(mfu, 3),
        "tflops": fmt(st["tflops"].value, 3),
        "final_loss": fmt(red.final_loss, 6),
    }


def export_run(run_dir: str | os.PathLike[str], opts: ExportOptions, *,
               hash_files: bool = False) -> ExportResult:
    """Export one run directory. Raises :class:`AmscError` for anything a user caused.

    find files → provenance → read steps → reduce → cross-check → row. ``opts``
    validated itself when it was built (:class:`ExportOptions`). ``hash_files``:
    take the metrics files' sha256 while reading them (for a provenance record),
    returned in :attr:`ExportResult.read`.
    """
    from .reduce import reduce_steps  # numpy: only once there is work to do

    files = find_run_files(run_dir)
    source = files.metrics
    if source is None and opts.status == "pass":
        looked = "metrics-<rank>.jsonl, metrics.jsonl or a <run_id>.jsonl with 'metrics' records"
        raise AmscError(f"{files.root}: no metrics found (looked for {looked}); "
                        "if the run failed, pass --status fail")
    # Provenance before the (possibly long) read: a missing flag fails fast.
    prov = load_provenance(files)
    placement = resolve_placement(prov, opts.system, opts.nodes, opts.gpus)
    digests: dict[Path, Digest] | None = {} if hash_files else None
    steps = read_steps(source, opts.max_line_bytes, digests) if source is not None else None
    red = (reduce_steps(steps, opts.warmup, opts.reducer, opts.attempt)
           if steps is not None else None)
    n = red.steps if red is not None else 0
    if n == 0 and opts.status == "pass":
        assert steps is not None  # no metrics source at all was refused above
        read = ", ".join(str(p) for p in steps.files_read) or str(source.folder)
        raise AmscError(f"{read}: no step records (lines with numeric 'metrics'); "
                        "if the run failed, pass --status fail")

    ctx = Context(opts, files, prov, placement, steps, red)
    notes = [*files.notes, *prov.notes,
             *(_reading_notes(steps, n, opts.max_line_bytes) if steps is not None else []),
             *(red.notes if red is not None else []), *run_checks(ctx)]
    values: dict[str, Any] = {
        "config": opts.config, "system": placement.system, "nodes": placement.nodes,
        "gpus": placement.gpus, "status": opts.status, "error": opts.error or "",
        "steps": n if n else None,
        **_time_values(ctx, notes), **_metric_values(ctx, notes),
    }
    row = build_row(values)
    problems = dashboard_problems(row)
    if problems:  # a bug, not a user error: never print a row the dashboard rejects
        raise AmscError(f"internal: row would be rejected by the dashboard: {'; '.join(problems)}")
    read = None if digests is None else FilesRead(
        files.root, list(steps.files_read) if steps is not None else [], digests,
        [files.root / rel for rel in prov.tiers], files.run_info)
    return ExportResult(row=row, notes=notes, details=_details(ctx, notes), read=read)


def _details(ctx: Context, notes: list[str]) -> dict[str, Any]:
    """What ``--explain`` and ``--format json`` show: where every number came from."""
    opts, files, steps, red = ctx.opts, ctx.files, ctx.steps, ctx.red
    source = files.metrics
    n = red.steps if red is not None else 0
    warm_steps = opts.warmup if n > opts.warmup else 0  # all kept when none is left
    details: dict[str, Any] = {
        "run_dir": str(files.root),
        "metrics_scheme": source.scheme if source else None,
        "files_read": [str(p) for p in steps.files_read] if steps is not None else [],
        "rank_files_not_read": steps.files_not_read if steps is not None else 0,
        "other_rank_records": sum(steps.other_ranks.values()) if steps is not None else 0,
        "rank": steps.rank if steps is not None else None,
        "provenance": {"tiers": ctx.prov.tiers, "sources": ctx.prov.source},
        "placement": ctx.placement.how,
        "steps": n,
        "steps_used": n - warm_steps,
        "steps_dropped_warmup": warm_steps,
        "warmup": opts.warmup,
        "reducer": opts.reducer,
        "series": {},
        "trend": None,
        "step_coverage": asdict(red.coverage) if red is not None and red.coverage else None,
        "attempts": [asdict(s) for s in red.segments] if red is not None else [],
        "attempt": red.attempt if red is not None else None,
        "unfinished": unfinished_evidence(ctx),
        "notes": notes,
    }
    if red is not None:
        for name, s in red.stats.items():
            key = steps.keys_used.get(name) if steps is not None else None
            details["series"][name] = {
                "key": key, "present": s.present, "used": s.used,
                "dropped_warmup": s.dropped_warmup, "kept_warmup": s.kept_warmup,
                "value": s.value, "p10": s.p10, "p90": s.p90, "all_zero": s.all_zero,
            }
        details["trend"] = _trend(red, details["series"], opts.warmup)
    return details


def export_many(run_dirs: list[str], opts: ExportOptions, *, hash_files: bool = False
                ) -> tuple[list[tuple[str, ExportResult]], list[tuple[str, AmscError]]]:
    """Export every directory, in order; failures are collected, not raised.

    Batch semantics live in the caller: validate all, then write all or nothing
    (or the good ones with ``--keep-going``).
    """
    done: list[tuple[str, ExportResult]] = []
    failed: list[tuple[str, AmscError]] = []
    for d in run_dirs:
        try:
            done.append((d, export_run(d, opts, hash_files=hash_files)))
        except AmscError as e:
            failed.append((d, e))
    return done, failed


# The sparkline shows throughput; a run that logs none gets its step time.
_TREND_SERIES = ("tps", "tps_per_gpu", "dt")


def _trend(red: Reduced, series: dict[str, dict[str, Any]], warmup: int) -> dict[str, Any] | None:
    from .reduce import trend

    for name in _TREND_SERIES:
        s = red.stats.get(name)  # no stats at all when no step was logged (a failed run)
        if s is not None and s.present and s.values is not None:
            warm = 0 if s.kept_warmup else min(warmup, int(s.values.size))
            return {"series": name, "key": series[name]["key"], **trend(s.values, warm)}
    return None
