"""Find the files of a run directory in one pass over its tree.

Nothing here parses metrics; per-rank files are only *named*, never opened,
so a 12,288-rank run costs one directory listing, not 12,288 opens.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ezpz_amsc.errors import AmscError, os_error_text, reason
from ezpz_amsc.fs.read import open_regular
from ezpz_amsc.run.lines import open_metrics

# Folders that hold plots, checkpoints or tracker caches: never metrics, and
# often thousands of files each. Names are compared in lower case; the prefixes
# also cover checkpoints/, ckpts/, .git/, .cache/ and .aim/.
_SKIP_DIRS = frozenset(
    {"plots", "mplot", "tplot", "assets", "wandb", "mlruns", "tensorboard", "tb", "runs_tb",
     "aim", "__pycache__", "cache", "lightning_logs", "hub", "datasets"}
)
_SKIP_PREFIXES = ("checkpoint", "ckpt", "global_step", "step_", ".")

_PER_RANK = re.compile(r"metrics-(\d+)\.jsonl(?:\.gz)?\Z")
_JSONL = (".jsonl", ".jsonl.gz")  # gzipped metrics are read as they are
_INTERLEAVED = ("metrics.jsonl", "metrics.jsonl.gz")
PER_RANK_KINDS = frozenset({"metrics-<rank>.jsonl", "metrics-<rank>.jsonl.gz"})
_SNIFF_LINES = 8
_SNIFF_BYTES = 1 << 20


class RankFiles(Mapping[int, Path]):
    """rank -> its ``metrics-<rank>.jsonl``, as a read-only mapping.

    Holds file names and builds the ``Path`` on access: a 12,288-rank run
    would otherwise spend ~50 ms making Path objects of which one is read.
    """

    __slots__ = ("folder", "_names")

    def __init__(self, folder: Path, names: dict[int, str]) -> None:
        self.folder = folder
        self._names = names

    def __getitem__(self, rank: int) -> Path:
        return self.folder / self._names[rank]

    def __iter__(self) -> Iterator[int]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __repr__(self) -> str:
        return f"RankFiles({str(self.folder)!r}, {len(self)} ranks)"


@dataclass
class MetricsSource:
    """Where the step records are: per-rank files, or one file filtered by rank."""

    scheme: str  # "per-rank" | "interleaved" | "run-id"
    folder: Path
    per_rank: Mapping[int, Path] = field(default_factory=dict)  # scheme == "per-rank"
    single: Path | None = None  # "interleaved" or "run-id"


@dataclass
class RunFiles:
    """A run directory's files, found in one pass: metrics, provenance, and notes."""

    root: Path
    metrics: MetricsSource | None
    run_info: list[Path] = field(default_factory=list)
    config: list[Path] = field(default_factory=list)
    reports: list[Path] = field(default_factory=list)
    skipped_logs: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # Set for a folder of other ranks' files whose run finalize wrote into the next
    # output folder: the advice that names it (see finalized_beside).
    finalized_elsewhere: str | None = None


def _skip_dir(name: str) -> bool:
    low = name.lower()
    return low in _SKIP_DIRS or low.startswith(_SKIP_PREFIXES)


def sniff_jsonl(path: Path) -> str:
    """Classify a ``*.jsonl`` by content: ``metrics``, ``log``, ``unknown`` or ``unreadable``.

    Reads at most a few lines (bounded bytes), so a huge structured log costs
    nothing. A record with a ``metrics`` object is a metrics record; one with
    ``message``/``level`` is a structured-log record.
    """
    try:
        with open_metrics(path) as f:  # a FIFO or /proc file is refused: it would block the sniff
            budget = _SNIFF_BYTES
            for _ in range(_SNIFF_LINES):
                line = f.readline(budget)  # b"" once the budget is spent
                if not line:
                    break
                budget -= len(line)
                try:
                    rec = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if isinstance(rec, dict):
                    if isinstance(rec.get("metrics"), dict):
                        return "metrics"
                    if "message" in rec or "level" in rec:
                        return "log"
    except OSError:
        return "unreadable"
    except EOFError:  # a gzip stream cut before any record
        return "unknown"
    return "unknown"


def rel_to(root: Path, p: Path) -> str:
    """``p`` relative to the run directory, for messages; ``p`` as is outside it."""
    try:
        return str(p.relative_to(root))  # "." for root itself
    except ValueError:
        return str(p)


def find_run_files(run_dir: str | os.PathLike[str]) -> RunFiles:
    """Walk ``run_dir`` once and name every file the export may need."""
    root = Path(run_dir)
    try:
        st = root.stat()
    except (FileNotFoundError, NotADirectoryError):
        raise AmscError(f"{root}: no such directory; pass the run directory ezpz wrote") from None
    except OSError as e:  # e.g. a folder on the way that you may not search
        raise AmscError(os_error_text(e)) from None
    if not stat.S_ISDIR(st.st_mode):
        raise AmscError(f"{root}: not a directory; pass the run directory ezpz wrote")
    try:
        first = list(os.scandir(root))
    except OSError as e:
        raise AmscError(f"{root}: cannot list directory: {reason(e)}") from None

    per_rank: dict[Path, dict[int, str]] = {}  # folder -> rank -> file name
    interleaved: dict[Path, Path] = {}
    other_jsonl: dict[Path, list[Path]] = {}
    kinds: dict[Path, set[str]] = {}  # folder -> the per-rank and shared file kinds in it
    twice: set[Path] = set()  # folders where some rank has a plain and a gzipped file
    files = RunFiles(root=root, metrics=None)

    # Depth-first over real directories only: a symlinked directory is never
    # entered, so symlink loops cannot trap the walk.
    stack: list[tuple[Path, list[os.DirEntry[str]]]] = [(root, first)]
    while stack:
        folder, entries = stack.pop()
        ranks_here: dict[int, str] | None = None
        for entry in entries:
            name = entry.name
            try:
                if entry.is_dir(follow_symlinks=False):
                    if not _skip_dir(name):
                        sub = Path(entry.path)
                        try:
                            stack.append((sub, list(os.scandir(sub))))
                        except OSError as e:
                            files.notes.append(
                                f"skipped folder {rel_to(root, sub)}: {reason(e)}"
                            )
                    continue
                is_file = entry.is_file()  # follows file symlinks; False if dangling
            except OSError:
                continue
            if not is_file:
                continue
            if name.endswith(_JSONL):
                m = _PER_RANK.match(name)
                if m:
                    if ranks_here is None:
                        ranks_here = per_rank.setdefault(folder, {})
                    rank = int(m.group(1))
                    if rank in ranks_here:  # one rank's file both plain and gzipped: two runs
                        twice.add(folder)
                    ranks_here[rank] = name
                    kinds.setdefault(folder, set()).add(
                        "metrics-<rank>.jsonl" + name[m.end(1) + len(".jsonl"):])
                    continue
                path = Path(entry.path)
                if name in _INTERLEAVED:
                    interleaved[folder] = path
                    kinds.setdefault(folder, set()).add(name)
                else:
                    other_jsonl.setdefault(folder, []).append(path)
            elif name == "run_info.json":
                files.run_info.append(Path(entry.path))
            elif name == "config.json":
                files.config.append(Path(entry.path))
            elif name.startswith("report") and name.endswith(".md"):
                files.reports.append(Path(entry.path))

    run_id: dict[Path, list[Path]] = {}
    for folder, paths in other_jsonl.items():
        for p in sorted(paths):
            kind = sniff_jsonl(p)
            if kind == "metrics":
                run_id.setdefault(folder, []).append(p)
            elif kind == "log":
                files.skipped_logs.append(p)
            elif kind == "unreadable":
                files.notes.append(f"skipped {rel_to(root, p)}: cannot be read")

    folders = sorted(set(per_rank) | set(interleaved) | set(run_id))
    if len(folders) > 1:
        shown = ", ".join(rel_to(root, f) for f in folders[:4])
        more = f" and {len(folders) - 4} more" if len(folders) > 4 else ""
        if _one_run_per_subfolder(root, folders):
            raise AmscError(
                f"{root}: a folder of {len(folders)} runs ({shown}{more}); pass one of them, "
                f"or {os.path.join(root, '*', '')} to export each (one row per run)"
            )
        raise AmscError(
            f"{root}: metrics files in {len(folders)} folders ({shown}{more}); "
            "pass the directory of a single run"
        )
    if folders:
        folder = folders[0]
        schemes = sorted(kinds.get(folder, ()))
        if folder not in twice and PER_RANK_KINDS.issuperset(schemes):
            # Per-rank files, some gzipped (a quota clean-up that compressed the largest,
            # rank 0's), each rank's once: one scheme. A rank's file both plain and
            # gzipped is two runs' (or a copy), two schemes.
            schemes = schemes[:1]
        if folder in run_id:
            schemes.extend(p.name for p in run_id[folder])
        if len(schemes) > 1:
            raise AmscError(
                f"{rel_to(root, folder)}: more than one metrics file scheme "
                f"({', '.join(schemes)}); keep one run per directory"
            )
        if folder in per_rank:
            files.metrics = MetricsSource("per-rank", folder,
                                          per_rank=RankFiles(folder, per_rank[folder]))
        elif folder in interleaved:
            files.metrics = MetricsSource("interleaved", folder, single=interleaved[folder])
        else:
            files.metrics = MetricsSource("run-id", folder, single=run_id[folder][0])

    _place_provenance(files)
    return files


def _one_run_per_subfolder(root: Path, folders: list[Path]) -> bool:
    """Metrics folders each below a different subfolder of ``root``, none in it: runs."""
    tops = [f.relative_to(root).parts[0] for f in folders if f != root]
    return len(tops) == len(folders) == len(set(tops))


# ezpz's output folders are named by a local time stamp: outputs/<name>/2026-11-29-222215/
_STAMP = re.compile(r"\d{4}-\d{2}-\d{2}-\d{6}\Z")
# How far up a folder without metrics may sit inside a run (RUN/plots/train/tplot).
_RUN_DEPTH = 3


def where_the_run_is(folder: Path) -> str | None:
    """For a folder without metrics: the folder that is probably the run, as advice.

    A subfolder of a run (``train/``, ``plots/``) names the run above it. A
    timestamped output folder that finalize left empty names the next one
    beside it that holds metrics and run_info.json: without an output dir,
    ``History.finalize()`` writes rank 0's metrics and run_info.json into a new
    timestamped folder, and only other ranks' files stay in the announced one.
    """
    here = folder.absolute()
    for up in here.parents[:_RUN_DEPTH]:
        found = holds_metrics(up)
        if found:
            return f"it is inside the run {_shown(up, folder)} (which holds {found}): pass that"
    return finalized_beside(folder)


def finalized_beside(folder: Path) -> str | None:
    """For a timestamped output folder without run_info.json: the advice naming the next
    one beside it that holds metrics and run_info.json, where finalize wrote the run.

    Without an output dir, ``History.finalize()`` writes rank 0's metrics and
    run_info.json into a new timestamped folder; other ranks' files, if any, stay
    in the announced one, which then looks like an unfinished run.
    """
    later = _next_output_folder(folder.absolute())
    if later is None:
        return None
    return (f"ezpz probably put this run's data in {_shown(later, folder)}, the next output "
            "folder beside it (History.finalize() without an output dir writes rank 0's "
            "metrics and run_info.json into a new timestamped folder): pass that")


def _shown(path: Path, given: Path) -> str:
    """``path`` as the user would type it: relative when they gave a relative folder."""
    return str(path) if given.is_absolute() else os.path.relpath(path)


def holds_metrics(folder: Path) -> str | None:
    """The name of a metrics file directly in ``folder`` (named, or sniffed), if any."""
    try:
        names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(_JSONL))
    except OSError:
        return None
    for name in names:
        if name in _INTERLEAVED or _PER_RANK.match(name):
            return name
    for name in names[:_SNIFF_LINES]:  # a run-id file: a few sniffs, on an error path only
        if sniff_jsonl(folder / name) == "metrics":
            return name
    return None


def _next_output_folder(folder: Path) -> Path | None:
    """The first timestamped sibling after ``folder`` with metrics: where finalize wrote."""
    if not _STAMP.match(folder.name) or (folder / "run_info.json").exists():
        return None
    try:
        later = sorted(e.name for e in os.scandir(folder.parent)
                       if _STAMP.match(e.name) and e.name > folder.name and e.is_dir())
    except OSError:
        return None
    for name in later:
        sibling = folder.parent / name
        if holds_metrics(sibling):
            return sibling if (sibling / "run_info.json").is_file() else None
    return None


def _place_provenance(files: RunFiles) -> None:
    """Keep provenance of this run only: the metrics folder and its parents up to the
    run directory (reports also in a subfolder of the metrics folder, where
    ``dataset_fname`` puts them). A sibling folder is another run, or another
    attempt (diffusion's finalize writes into a new timestamped folder).
    Next to the metrics first, then the nearest parent.
    """
    root = files.root
    anchor = files.metrics.folder if files.metrics else root
    chain = [anchor, *anchor.parents]
    chain = chain[:chain.index(root) + 1] if root in chain else [anchor]
    depth = {folder: i for i, folder in enumerate(chain)}

    def place(paths: list[Path], reports: bool) -> list[Path]:
        keep: list[Path] = []
        away: list[Path] = []
        for p in paths:
            ok = p.parent in depth or (reports and p.parent.parent == anchor)
            (keep if ok else away).append(p)
        for p in away:
            files.notes.append(f"ignored {rel_to(root, p)}: not in the metrics folder or a "
                               "folder above it (another run's or attempt's?)")
        return sorted(keep, key=lambda p: (depth.get(p.parent, 0.5), str(p)))

    files.run_info = place(files.run_info, False)
    files.config = place(files.config, False)
    files.reports = place(files.reports, True)


# ``ezpz launch`` ends its log with this line; N is the job's exit status.
_LAUNCH_END = re.compile(r"Execution finished with (-?\d+)\.\Z")
_LAUNCH_END_BYTES = b"Execution finished with "
LOG_TAIL_BYTES = 16 << 10


def launch_exit_status(path: Path) -> int | None:
    """The exit status ``ezpz launch`` logged last in ``path`` (a structured log), from
    the file's last :data:`LOG_TAIL_BYTES`; None when it logged none there."""
    try:
        with open_regular(path) as f:
            size = f.seek(0, os.SEEK_END)
            f.seek(max(0, size - LOG_TAIL_BYTES))
            tail = f.read()
    except OSError:
        return None
    for line in reversed(tail.split(b"\n")):
        if _LAUNCH_END_BYTES not in line:
            continue
        try:
            rec = json.loads(line)
        except (ValueError, RecursionError):
            continue  # the first line of the tail, cut by the seek
        m = _LAUNCH_END.match(rec.get("message", "")) if isinstance(rec, dict) and \
            isinstance(rec.get("message"), str) else None
        if m:
            return int(m.group(1))
    return None
