"""The pipeline end to end: run directory in, one row plus its story out.

:func:`export_run` reads as its steps, each a function below whose name says
what it decides. Pure: no printing, no writing; the CLI and the finalize hook
decide where rows and notes go.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ezpz_amsc.errors import AmscError
from ezpz_amsc.options import ExportOptions  # re-exported: its home moved to options.py
from ezpz_amsc.results.schema import typed_row
from ezpz_amsc.run.columns import resolve_columns
from ezpz_amsc.run.crosschecks import Context, run_checks, unfinished_evidence
from ezpz_amsc.run.details import (
    TREND_SERIES,
    Details,
    PlacementDetail,
    ProvenanceDetail,
    SeriesDetail,
    Trend,
    as_data,
)
from ezpz_amsc.run.layout import RunFiles, finalized_beside, find_run_files, where_the_run_is
from ezpz_amsc.run.placement import load_provenance, placement_sources, resolve_placement
from ezpz_amsc.run.steps import Digests, FilesRead, Steps, read_steps
from ezpz_amsc.text import Text, opt, plural, spelled

if TYPE_CHECKING:
    from ezpz_amsc.run.reduce import Reduced

__all__ = ["ExportOptions", "ExportResult", "export_many", "export_run",
           "plural"]


@dataclass
class ExportResult:
    """One run exported: its row, the notes on stderr, and where every number came from."""

    row: dict[str, str]
    notes: list[Text]
    details: Details
    read: FilesRead | None = None  # only when export_run was asked to hash

    def to_data(self) -> dict[str, Any]:
        """``{"row": ..., "values": ..., "details": ...}``: JSON-ready, the one serialisation
        of a result.

        ``row`` holds the exact CSV cell strings; ``values`` the same cells typed
        (numbers as numbers, an empty cell as null), for ``jq`` filters and sums;
        ``details`` the fields of :class:`Details` in their order, then the notes.
        ``--format json`` prints this; a provenance record takes ``row`` (never ``details``).
        """
        return {"row": dict(self.row), "values": typed_row(self.row),
                "details": {**as_data(self.details),
                            "notes": [spelled(note) for note in self.notes]}}


def export_run(run_dir: str | os.PathLike[str], opts: ExportOptions, *,
               hash_files: bool = False, hash_budget_bytes: int | None = None,
               since: float | None = None) -> ExportResult:
    """Export one run directory. Raises :class:`AmscError` for anything a user caused.

    ``opts`` validated itself when it was built (:class:`ExportOptions`).
    ``hash_files``: take the metrics files' sha256 while reading them (for a
    provenance record), returned in :attr:`ExportResult.read`; with ``hash_budget_bytes``, only as
    many bytes of them, whole files in the order read (the others are left unhashed).
    ``since``: when the process that wrote the last records started (the finalize hook):
    its records are one attempt.
    """
    files = find_files(run_dir, opts)
    # Provenance before the (possibly long) read: a missing flag fails fast.
    prov = load_provenance(files)
    try:
        placement = resolve_placement(prov, opts.system, opts.nodes, opts.gpus)
    except AmscError as e:  # the flags it names are second best to the run's own folder
        if files.finalized_elsewhere is not None:
            e.message = e.message + f"; but {files.finalized_elsewhere}"
        raise
    digests = Digests(hash_budget_bytes) if hash_files else None
    steps = read_run_steps(files, opts, digests)
    red = reduce_run(steps, files, opts, since)
    ctx = Context(opts, files, prov, placement, steps, red)
    notes = [*files.notes, *prov.notes, *reading_notes(steps, red, opts.max_line_bytes),
             *red.notes, *run_checks(ctx)]
    row = resolve_columns(ctx, notes)
    read = None if digests is None else FilesRead(
        files.root, list(steps.files_read), digests, [files.root / rel for rel in prov.tiers],
        files.run_info, placement_sources(placement, prov))
    return ExportResult(row=row, notes=notes, details=build_details(ctx), read=read)


def export_many(run_dirs: list[str], opts: ExportOptions, *, hash_files: bool = False,
                progress: Callable[[int], None] | None = None,
                ) -> tuple[list[tuple[str, ExportResult]], list[tuple[str, AmscError]]]:
    """Export every directory, in order; failures are collected, not raised.

    Batch semantics live in the caller: validate all, then write all or nothing
    (or the good ones with ``--keep-going``). ``progress(n)`` is told after
    each directory how many are finished.
    """
    done: list[tuple[str, ExportResult]] = []
    failed: list[tuple[str, AmscError]] = []
    for n, d in enumerate(run_dirs, 1):
        try:
            done.append((d, export_run(d, opts, hash_files=hash_files)))
        except AmscError as e:
            failed.append((d, e))
        if progress is not None:
            progress(n)
    return done, failed


# ------------------------------------------------------------------ find files


def find_files(run_dir: str | os.PathLike[str], opts: ExportOptions) -> RunFiles:
    """The run's files. A folder without metrics is refused for a passing run, naming
    the folder that is probably the run when there is one; a failed run needs no steps."""
    files = find_run_files(run_dir)
    if files.metrics is not None:
        if not (files.run_info or files.config or files.reports):
            # Other ranks' files in the folder ezpz announced, the run finalized next door.
            files.finalized_elsewhere = finalized_beside(files.root)
            if files.finalized_elsewhere:
                files.notes.append(f"no run_info.json or report here; "
                                   f"{files.finalized_elsewhere}")
        return files
    elsewhere = where_the_run_is(files.root)
    if opts.status == "fail":
        if elsewhere:
            files.notes.append(f"no metrics found in {files.root}; {elsewhere}")
        return files
    if elsewhere:
        raise AmscError(f"{files.root}: no metrics found; {elsewhere}")
    looked = ("metrics-<rank>.jsonl, metrics.jsonl or a <run_id>.jsonl with 'metrics' records, "
              "each also as .jsonl.gz")
    raise AmscError(f"{files.root}: no metrics found (looked for {looked}); "
                    "if the run failed, pass " + opt("status", "fail"))


# ------------------------------------------------------------------ read steps


def read_run_steps(files: RunFiles, opts: ExportOptions,
                   digests: Digests | None = None) -> Steps:
    """The chosen rank's step records; none (an empty :class:`Steps`) without a metrics file.

    ``digests``, when given, receives the size and sha256 of every file read.
    """
    if files.metrics is None:
        return Steps()
    return read_steps(files.metrics, opts.max_line_bytes, digests)


def reading_notes(steps: Steps, red: Reduced, max_line: int) -> list[str]:
    """What reading the metrics skipped or fell back on."""
    notes = []
    if steps.rank not in (0, None) and red.steps:
        notes.append(f"rank 0 logged no step; used rank {steps.rank}")
    dropped = {k: v for k, v in steps.nonfinite.items() if v}
    if dropped:
        parts = ", ".join(f"{k} {v}" for k, v in dropped.items())
        notes.append(f"dropped {plural(sum(dropped.values()), 'non-finite value')} ({parts})")
    if steps.bad_lines:
        notes.append(f"skipped {plural(steps.bad_lines, 'unparsable line')}")
    if steps.long_lines:
        size = f"{max_line >> 20} MiB" if max_line >= 1 << 20 else f"{max_line} bytes"
        notes.append(f"skipped {plural(steps.long_lines, 'line')} over {size} unread")
    if steps.truncated_last_line:
        notes.append(f"last line of {steps.files_read[-1].name} is truncated; ignored it")
    return notes


# ------------------------------------------------------------------ reduce


def reduce_run(steps: Steps, files: RunFiles, opts: ExportOptions,
               since: float | None = None) -> Reduced:
    """Every series reduced; a passing run must have logged at least one training step."""
    from ezpz_amsc.run.reduce import reduce_steps  # numpy: only once there is work to do

    red = reduce_steps(steps, opts.warmup, opts.reducer, opts.attempt, since=since)
    if not red.steps and opts.status == "pass":
        where = files.metrics.folder if files.metrics else files.root
        read = ", ".join(str(p) for p in steps.files_read) or str(where)
        raise AmscError(f"{read}: no step records (lines with numeric 'metrics'); "
                        "if the run failed, pass " + opt("status", "fail"))
    return red


# ------------------------------------------------------------------ build details


def build_details(ctx: Context) -> Details:
    """What ``--explain`` and ``--format json`` show: where every number came from."""
    opts, files, steps, red = ctx.opts, ctx.files, ctx.steps, ctx.red
    n = red.steps
    warm_steps = opts.warmup if n > opts.warmup else 0  # all kept when none is left
    series = {name: SeriesDetail(steps.keys_used.get(name), s.present, s.used, s.dropped_warmup,
                                 s.kept_warmup, s.value, s.p10, s.p90, s.all_zero)
              for name, s in red.stats.items()}
    how = ctx.placement.how
    return Details(
        run_dir=str(files.root),
        metrics_scheme=files.metrics.scheme if files.metrics else None,
        files_read=[str(p) for p in steps.files_read],
        rank_files_not_read=steps.files_not_read,
        other_rank_records=sum(steps.other_ranks.values()),
        rank=steps.rank,
        provenance=ProvenanceDetail(tiers=list(ctx.prov.tiers), sources=dict(ctx.prov.source)),
        placement=PlacementDetail(system=how["system"], gpus=how["gpus"], nodes=how["nodes"]),
        steps=n, steps_used=n - warm_steps, steps_dropped_warmup=warm_steps,
        warmup=opts.warmup, reducer=opts.reducer,
        series=series, trend=_trend(red, series, opts.warmup),
        step_coverage=red.coverage, attempts=list(red.segments), attempt=red.attempt,
        unfinished=unfinished_evidence(ctx),
    )


def _trend(red: Reduced, series: dict[str, SeriesDetail], warmup: int) -> Trend | None:
    from ezpz_amsc.run.reduce import trend

    for name in TREND_SERIES:
        s = red.stats.get(name)  # no stats at all when no step was logged (a failed run)
        if s is not None and s.present:
            warm = 0 if s.kept_warmup else min(warmup, int(s.values.size))
            return Trend(series=name, key=series[name].key,
                         **cast("dict[str, Any]", trend(s.values, warm)))
    return None
