"""Export at the end of training: the run this process has just finished.

The finalize hook (:mod:`ezpz_amsc.hook`) knows what a later command line does not: the
job is this process, and it knows when the process started. The records stamped since
then are its own: one attempt, however the rules of the command line would split them;
records from before it are another launch's into the folder, left out with a note. When
the start is unknown, or no record is the process's own, the hook cannot settle which
attempt is its own and writes no row (the command line's refusal becomes its one warning).
A failed run that logged no step gets the job's own start and duration, with a note.
"""

from __future__ import annotations

import functools
import os
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ezpz_amsc.errors import NoStepTime, SeveralAttempts
from ezpz_amsc.flow import export as export_flow
from ezpz_amsc.results.schema import PROCESS_START_SLACK_SEC, format_timestamp
from ezpz_amsc.text import Text, opt

if TYPE_CHECKING:
    from ezpz_amsc.options import ExportOptions
    from ezpz_amsc.run.steps import Digests


def export_finished_run(run_dir: Path, opts: ExportOptions, hash_budget_bytes: int
                        ) -> tuple[export_flow.ExportResult, ExportOptions]:
    """The row of the run this process finished, hashed for its provenance record, and the
    options it was exported with (the record keeps them: reproduce needs them)."""
    # Looked up when called, so that a test can stand in for it.
    since = process_start()
    export = functools.partial(export_flow.export_run, hash_files=True,
                               hash_budget_bytes=hash_budget_bytes, since=since)
    try:
        result = export(run_dir, opts)
    except SeveralAttempts as e:  # a relaunch into the folder: this process wrote the last
        if since is None:
            raise  # which records are this process's is not known: the CLI's refusal stands
        opts = replace(opts, attempt="last")
        result = export(run_dir, opts)
        first = result.details.attempts[-1].first_timestamp
        if first is None or first < since - PROCESS_START_SLACK_SEC:
            raise e from None  # no record is this process's own: nothing settles it
        result.notes.insert(0, f"the records hold {e.attempts} attempts; exported the last, "
                               f"the records this process wrote since it started at "
                               f"{format_timestamp(since)} (the others are an earlier launch's "
                               "into the folder; " + opt("attempt", "last") + ")")
    except NoStepTime:  # a failed run that logged no step: the hook knows when the job ran
        window = job_window(run_dir)
        if window is None:
            raise
        start, seconds, how = window
        opts = replace(opts, timestamp=opts.timestamp or format_timestamp(start),
                       wall_time_sec=opts.wall_time_sec or seconds)
        result = export(run_dir, opts)
        result.notes.insert(0, f"no step was logged: timestamp {opts.timestamp} and "
                               f"wall_time_sec {opts.wall_time_sec:.3f} are the job's, {how}")
    assert result.read is not None  # hash_files=True
    result.notes.extend(unhashed_notes(result.read.digests))
    return result, opts


def unhashed_notes(digests: Digests) -> list[Text]:
    """One note per metrics file the hash budget left unhashed: reproduce cannot compare it."""
    return [f"{path.name} ({d.size} bytes) is not hashed in the provenance record: over "
            + opt("hash_budget", digests.budget_bytes) + " bytes, so reproduce cannot compare "
            "it; raise " + opt("hash_budget") + " to hash it"
            for path, d in digests.items() if d.sha256 is None]


def job_window(run_dir: Path) -> tuple[float, float, str] | None:
    """When the job started and how long it ran, for a row without steps.

    From ``run_info.json``'s Timings (its duration, ended when the file was written),
    else this process's start time (Linux) until now; None when neither is known.
    """
    from ezpz_amsc.run.placement import job_duration_sec

    info = run_dir / "run_info.json"
    seconds = job_duration_sec(info) if info.is_file() else None
    if seconds is not None:
        end = info.stat().st_mtime
        return end - seconds, seconds, "from run_info.json's Timings, ending when it was written"
    start = process_start()
    if start is None:
        return None
    return start, max(time.time() - start, 1e-3), "from this process's start time until now"


def process_start() -> float | None:
    """When this process started, in Unix seconds (from /proc); None where unknown."""
    try:
        with open("/proc/self/stat", "rb") as f:
            after_name = f.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith(b"btime "))
        # starttime is field 22 of stat, in clock ticks since boot; fields 3.. follow the name
        return boot + int(after_name[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None
