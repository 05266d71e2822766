"""A small stand-in for ``ezpz.history.History``, as far as docs/ezpz-integration.md describes it.

``finalize`` writes the run directory where the real one does — ``outdir`` when
given, else ``./outputs/<run_name or History-<stamp>>/<stamp>/`` — by copying a
real fixture run there, and leaves ``_jsonl_path`` and ``_report_dir`` pointing
into it. It returns a fresh object, as the real one returns its dataset.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any


class StandInHistory:
    """Stand-in for ezpz's History: only what the finalize wrapping relies on."""

    stamp = "2026-11-29-221908"

    def __init__(self, source: Path, rank: int = 0) -> None:
        self.source = source  # the run finalize "writes": a real fixture run
        self.rank = rank
        self.calls: list[Path] = []

    def update(self, metrics: dict[str, Any]) -> None:  # present so History checks pass
        pass

    def finalize(self, outdir: str | Path | None = None, run_name: str | None = None,
                 dataset_fname: str | None = None, *, plot: bool = True,
                 save: bool = True) -> object:
        """Write the run directory; return a new object, like ezpz's dataset."""
        if outdir is None:
            outdir = Path("outputs") / (run_name or f"History-{self.stamp}") / self.stamp
        dest = Path(outdir)
        shutil.copytree(self.source, dest, symlinks=True, dirs_exist_ok=True)
        self._jsonl_path = dest / "metrics-0.jsonl"
        self._report_dir = dest / dataset_fname if dataset_fname else dest
        self.calls.append(dest)
        self.returned = object()
        return self.returned
