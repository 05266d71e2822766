"""Re-export the run of a provenance record and compare the row with the recorded one.

What is compared: the row's cells, exactly as strings, and the files the row
came from, by their path inside the run directory, size and sha256. The run
directory is the record's absolute ``run_dir`` unless another is given: a run
copied or moved elsewhere (another machine, an archive) reproduces the same,
since no comparison involves where it lives.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ezpz_amsc.errors import AmscError
from ezpz_amsc.records.record import build_record, host_name, load_record, options_from_record
from ezpz_amsc.results.schema import HEADER
from ezpz_amsc.text import Text, opt, plural
from ezpz_amsc.version import TOOL, __version__


@dataclass
class Reproduction:
    record: Path
    run_dir: str
    cells: list[tuple[str, str, str]] = field(default_factory=list)  # column, recorded, now
    files_changed: list[str] = field(default_factory=list)
    files_same: int = 0
    files_not_compared: list[str] = field(default_factory=list)  # not hashed when recorded
    version_note: str | None = None

    @property
    def identical(self) -> bool:
        return not self.cells

    def to_data(self) -> dict[str, Any]:
        """The comparison as JSON-ready data (``reproduce --format json``)."""
        return {"record": str(self.record), "run_dir": self.run_dir,
                "identical": self.identical,
                "cells": [{"column": c, "recorded": old, "now": new}
                          for c, old, new in self.cells],
                "files_changed": list(self.files_changed), "files_unchanged": self.files_same,
                "files_not_compared": list(self.files_not_compared),
                "note": self.version_note}


def reproduce(record_path: str | os.PathLike[str],
               run_dir: str | os.PathLike[str] | None = None, *,
               runs_in: bool = False) -> Reproduction:
    """Re-export the record's run with its options; :class:`AmscError` if that cannot run.

    ``run_dir`` is where the run is now, when it moved: the run directory itself,
    or the folder that holds it under its recorded name (``run_dir/NAME``, tried
    first). With ``runs_in`` (several records, one ``--run-dir``) only the latter.
    """
    from ezpz_amsc.flow.export import export_run

    where = str(record_path)
    rec = load_record(record_path)
    opts = options_from_record(rec, where)
    recorded = os.path.normpath(rec["run_dir"])  # "/runs/x/." is "/runs/x"
    target = recorded if run_dir is None else moved_run(recorded, run_dir, runs_in)
    if not os.path.isdir(target):
        host = (rec.get("exported") or {}).get("host")
        made = f" (recorded on {host})" if host and host != host_name() else ""
        what = "is not a directory" if os.path.exists(target) else "does not exist here"
        if run_dir is None:
            hint: Text = "pass " + opt("run_dir", "DIR") + " where the run is now"
        elif runs_in:  # the runs keep their names: DIR/NAME is where each must be
            hint = ("with several records, " + opt("run_dir") + " is the folder that holds "
                    "the moved runs, each under its recorded name")
        else:
            hint = "pass the run directory"
        raise AmscError(f"{where}: run directory {target}{made} {what}; " + hint)
    try:
        now = build_record(export_run(target, opts, hash_files=True), opts)
    except AmscError as e:
        raise AmscError(f"{where}: the export fails now: " + e.message) from None
    rep = Reproduction(Path(where), target)
    rep.cells = [(c, rec["row"][c], now["row"][c]) for c in HEADER
                 if rec["row"][c] != now["row"][c]]
    rep.files_changed, rep.files_same, rep.files_not_compared = _compare_files(
        rec["files"], now["files"], target)
    by = (rec.get("tool") or {}).get("version")
    if by != __version__:
        rep.version_note = (f"recorded by {TOOL} {by}, re-exported by {__version__}: a "
                            "difference may come from the tool, not the run")
    return rep


def moved_run(recorded: str, given: str | os.PathLike[str], runs_in: bool) -> str:
    """Where a moved run is: ``given/NAME`` (NAME: the recorded folder's name) when that
    is a folder, or always with ``runs_in``; else ``given`` itself."""
    inside = os.path.join(os.fspath(given), _name(recorded))
    return inside if runs_in or os.path.isdir(inside) else os.fspath(given)


def _name(run_dir: str) -> str:
    return os.path.basename(os.path.normpath(run_dir))


def _compare_files(recorded: list[dict[str, Any]], now: list[dict[str, Any]],
                   run_dir: str) -> tuple[list[str], int, list[str]]:
    """What changed among the source files, by path in the run directory; how many did not;
    and the files that cannot be compared, being unhashed in the record."""
    before = {f.get("path"): f for f in recorded}
    after = {f["path"]: f for f in now}
    changed, same, unknown = [], 0, []
    for path, old in before.items():
        new = after.get(path)
        # The re-export hashes every file (no budget): only the record can lack a sha256.
        if new is not None and old.get("sha256") is None:
            why = old.get("not_hashed") or "not hashed"
            if old.get("size") != new["size"]:  # the size alone tells
                changed.append(f"{path}: changed: {old.get('size')} -> {new['size']} bytes "
                               f"(no sha256 to compare: {why})")
            else:
                unknown.append(f"{path}: not compared: no sha256 in the record ({why}), "
                               f"same size ({new['size']} bytes)")
        elif new is None:
            gone = not os.path.lexists(os.path.join(run_dir, str(path)))
            changed.append(f"{path}: {'gone' if gone else 'no longer read'} "
                           f"(recorded sha256 {_short(old.get('sha256'))})")
        elif new["sha256"] != old.get("sha256"):
            changed.append(f"{path}: changed: sha256 {_short(old.get('sha256'))} -> "
                           f"{_short(new['sha256'])}, {old.get('size')} -> {new['size']} bytes")
        else:
            same += 1
    for path, new in after.items():
        if path not in before:
            changed.append(f"{path}: read now, not in the record (sha256 {_short(new['sha256'])})")
    return changed, same, unknown


def _short(sha: Any) -> str:
    return f"{sha[:16]}.." if isinstance(sha, str) else "unknown"


def render(rep: Reproduction) -> list[str]:
    """The report for one record: a verdict line, then what differs and what changed."""
    files = f"{plural(rep.files_same, 'source file')} unchanged"
    if rep.files_not_compared:
        files += f", {len(rep.files_not_compared)} not compared"
    if rep.identical:
        head = f"{rep.record}: identical row ({len(HEADER)} cells)"
        head += f"; {files}" if not rep.files_changed else "; but source files changed:"
    else:
        head = f"{rep.record}: row differs in {len(rep.cells)} of {len(HEADER)} cells"
    lines = [head]
    lines += [f"  {c}: recorded {old!r}, now {new!r}" for c, old, new in rep.cells]
    if rep.files_changed and not rep.identical:
        lines.append(f"  source files ({files}):")
    lines += [f"  {what}" for what in rep.files_changed]
    lines += [f"  {what}" for what in rep.files_not_compared]
    if rep.version_note:
        lines.append(f"  note: {rep.version_note}")
    return lines
