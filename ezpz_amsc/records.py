"""Provenance records: one JSON file beside every published row.

A record ties a row to its evidence: the row's exact cells, the tool's
version, the options, the details ``--format json`` prints (files read, series
stats, placement derivations, notes), the size and sha256 of every file the
row came from, and ``run_info.json``'s Python, Torch, Distributed and
Environment Variables sections as recorded, secrets redacted.
docs/provenance.md describes the layout.

Compatibility: ``schema`` is a version number and fields are only ever added,
so a reader uses the fields it knows and ignores the rest.
"""

from __future__ import annotations

import contextlib
import getpass
import hashlib
import json
import os
import re
import socket
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import __version__
from .discover import rel_to
from .errors import AmscError
from .files import create_file, make_folders, remove_folders
from .options import ExportOptions
from .row import HEADER, TIMESTAMP_FORMAT
from .sink import KEY_COLUMNS, check_can_create

if TYPE_CHECKING:
    from .export import ExportResult, FilesRead

SCHEMA = 1
TOOL = "ezpz-amsc"
REDACTED = "<redacted>"
# A key holding one of these words (any case) holds a secret: its value is never copied.
SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "CREDENTIAL")
RUN_INFO_SECTIONS = ("Python", "Torch", "Distributed", "Environment Variables")
LAUNCH_KEY = "EZPZ_RUN_COMMAND"
JOB_ID_KEYS = ("PBS_JOBID", "SLURM_JOB_ID", "SLURM_JOBID", "LSB_JOBID", "COBALT_JOBID",
               "FLUX_JOB_ID")
SUFFIX = ".json"
_MAX_RECORD_BYTES = 64 << 20
_MAX_RUN_INFO_BYTES = 16 << 20  # what the export itself reads of a run_info.json
_CHUNK_BYTES = 1 << 20

# Secrets on a launch line: "--hf-token abc", "--api-key=abc", "'--hf-token', 'abc'" (a
# list repr), "HF_TOKEN=abc python ...". There a secret word must be a whole part of the
# name, so that "--tokenizer" or "--max-tokens" (settings worth keeping) stay as they are.
_FLAG_VALUE = re.compile(r"(--?[A-Za-z][\w.-]*)(=|\s+|',\s*')((?!-)[^\s',\"]+)")
_ASSIGN = re.compile(r"\b([A-Za-z_]\w*)=([^\s',\"]+)")
_SECRET_PARTS = frozenset({*(w.lower() for w in SECRET_WORDS), "credentials", "secrets",
                           "passwd", "apikey"})
_NAME_PARTS = re.compile(r"[-_.]+")
_UNSAFE = re.compile(r"[^A-Za-z0-9._+-]+")


# ------------------------------------------------------------------ building


def is_secret(key: str) -> bool:
    upper = key.upper()
    return any(word in upper for word in SECRET_WORDS)


def _secret_name(name: str) -> bool:
    return any(part in _SECRET_PARTS for part in _NAME_PARTS.split(name.lower()))


def redact(value: Any) -> Any:
    """``value`` with every secret-looking key's value replaced, at any depth.

    Strings are also searched for secrets passed on a command line: the value
    of a flag or of a ``NAME=value`` whose name has a secret word as one of its
    parts.
    """
    if isinstance(value, dict):
        return {k: REDACTED if is_secret(str(k)) else redact(v) for k, v in value.items()}
    if isinstance(value, list):
        return [redact(v) for v in value]
    if isinstance(value, str):
        value = _FLAG_VALUE.sub(
            lambda m: f"{m[1]}{m[2]}{REDACTED}" if _secret_name(m[1]) else m[0], value)
        return _ASSIGN.sub(lambda m: f"{m[1]}={REDACTED}" if _secret_name(m[1]) else m[0],
                           value)
    return value


def digest_file(path: Path) -> dict[str, Any]:
    """``{"size", "sha256"}`` of a small provenance file, read in chunks."""
    h, size = hashlib.sha256(), 0
    try:
        with open(path, "rb") as f:
            while chunk := f.read(_CHUNK_BYTES):
                h.update(chunk)
                size += len(chunk)
    except OSError as e:
        raise AmscError(f"{path}: cannot read it for the provenance record: "
                        f"{e.strerror or e}") from None
    return {"size": size, "sha256": h.hexdigest()}


def _role(path: Path) -> str:
    # Never a run_info.json: placement uses one at most, and _sources adds it first.
    return "config" if path.name == "config.json" else "report"


@dataclass
class _Sources:
    """The files a row came from, and the run_info.json sections copied."""

    root: Path
    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # relative path -> entry
    run_info: dict[str, Any] | None = None

    def add(self, path: Path, role: str, digest: Mapping[str, Any]) -> None:
        rel = rel_to(self.root, path)
        self.files.setdefault(rel, {"path": rel, "role": role, **digest})


def _sources(read: FilesRead) -> _Sources:
    src = _Sources(read.root)
    for p in read.metrics:
        d = read.digests.get(p)  # taken while the export read it
        src.add(p, "metrics", {"size": d.size, "sha256": d.sha256} if d else digest_file(p))
    # The run_info.json whose sections are copied: the one placement used, else the nearest.
    run_info = next((p for p in read.provenance if p.name == "run_info.json"),
                    read.run_info[0] if read.run_info else None)
    if run_info is not None:
        src.run_info, digest = _read_run_info(run_info)
        src.add(run_info, "run_info", digest)
    for p in read.provenance:
        if rel_to(read.root, p) not in src.files:
            src.add(p, _role(p), digest_file(p))
    return src


def _read_run_info(path: Path) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The copied sections of a run_info.json (None if it has none) and its digest."""
    try:
        with open(path, "rb") as f:
            data = f.read(_MAX_RUN_INFO_BYTES + 1)
    except OSError:
        data = b""
    if not data or len(data) > _MAX_RUN_INFO_BYTES:  # too big for the export too: hash only
        return None, digest_file(path)
    digest = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    try:
        # NaN/Infinity kept as the text they were, so the record stays strict JSON.
        doc = json.loads(data.decode("utf-8-sig"), parse_constant=str)
    except (ValueError, RecursionError):
        return None, digest
    if not isinstance(doc, dict):
        return None, digest
    sections = {name: redact(doc[name]) for name in RUN_INFO_SECTIONS if name in doc}
    return sections or None, digest


def _launch_and_job(run_info: Mapping[str, Any] | None) -> tuple[Any, dict[str, Any]]:
    """EZPZ_RUN_COMMAND and the scheduler job ids, from the (redacted) sections."""
    order = ("Distributed", "Environment Variables")
    found = [s for name in order if isinstance(s := (run_info or {}).get(name), dict)]
    launch = next((s[LAUNCH_KEY] for s in found if LAUNCH_KEY in s), None)
    jobs: dict[str, Any] = {}
    for s in reversed(found):  # the environment as the job saw it first
        for key in JOB_ID_KEYS:
            if key in s:
                jobs.setdefault(key, s[key])
    return launch, jobs


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return None


def build_record(result: ExportResult, opts: ExportOptions,
                 results_file: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The provenance record of one exported row (``export_run(..., hash_files=True)``).

    The row and the details come from :func:`ezpz_amsc.details.to_data`, the
    same data ``--format json`` prints; the files from :attr:`ExportResult.read`.
    """
    from .details import to_data

    if result.read is None:
        raise ValueError("a record needs export_run(..., hash_files=True)")
    data = to_data(result)
    src = _sources(result.read)
    launch, jobs = _launch_and_job(src.run_info)
    return {
        "schema": SCHEMA,
        "tool": {"name": TOOL, "version": __version__},
        "row": data["row"],
        "options": asdict(opts),
        "run_dir": os.path.abspath(src.root),
        "exported": {
            "at": time.strftime(TIMESTAMP_FORMAT, time.gmtime()),
            "host": socket.gethostname(),
            "user": _user(),
            "results_file": os.path.abspath(results_file) if results_file else None,
        },
        "files": list(src.files.values()),
        "launch_command": launch,
        "job_ids": jobs,
        "run_info": src.run_info,
        "details": data["details"],
    }


def encode(record: Mapping[str, Any]) -> bytes:
    """The record as a file's bytes: indented UTF-8 JSON, strict (no NaN)."""
    try:
        text = json.dumps(record, indent=2, ensure_ascii=False, allow_nan=False)
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a \\ud800 escape: keep it escaped
        return (json.dumps(record, indent=2, allow_nan=False) + "\n").encode("ascii")


# ------------------------------------------------------------------ naming and writing


def _slug(text: str, limit: int) -> str:
    return _UNSAFE.sub("-", text).strip("-.")[:limit].strip("-.") or "x"


def record_name(row: Mapping[str, str]) -> str:
    """The file name of a row's record: its run identity, readable and filesystem-safe.

    ``20261129T221843Z_Aurora_agpt-2b-bs1-seq2048-tp1_2n-24g_b042ccb2.json``: the
    start time, system, a slug of the config, nodes and gpus, and 8 hex digits
    of the exact identity, so that two configs with the same slug ("a/b",
    "a b"), or names differing only in case, never share a file.
    """
    key = "\0".join(row[c] for c in KEY_COLUMNS)
    tag = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    stamp = row["timestamp"].replace("-", "").replace(":", "")
    return (f"{_slug(stamp, 20)}_{_slug(row['system'], 40)}_{_slug(row['config'], 80)}_"
            f"{_slug(row['nodes'], 8)}n-{_slug(row['gpus'], 8)}g_{tag}{SUFFIX}")


def check_record_folder(folder: str | os.PathLike[str]) -> None:
    """Refuse a ``--provenance`` folder that cannot take records, before any work."""
    p = Path(folder)
    if p.exists() and not p.is_dir():
        raise AmscError(f"{p}: not a folder; --provenance needs a folder for the records")
    check_can_create(p / "record.json")


@dataclass
class RecordBatch:
    """Records to write into one folder: all of them or none.

    A record whose name is taken is refused (the same run, recorded before),
    unless ``allow_duplicate``: then it is written beside it as ``NAME-2.json``,
    ``NAME-3.json``, ... An existing record is never replaced.
    """

    folder: Path
    records: list[dict[str, Any]]
    allow_duplicate: bool = False
    written: list[Path] = field(default_factory=list)

    def write(self) -> Callable[[], None]:
        """Write every record; on failure remove those written. Returns how to undo it all."""
        made = make_folders(self.folder)
        try:
            for record in self.records:
                self.written.append(self._write_one(record))
        except BaseException:
            self._undo(made)
            raise
        return lambda: self._undo(made)

    def _write_one(self, record: Mapping[str, Any]) -> Path:
        path = self.folder / record_name(record["row"])
        if os.path.lexists(path):
            if not self.allow_duplicate:
                key = ", ".join(record["row"][c] for c in KEY_COLUMNS)
                raise AmscError(f"{path}: a record of this run ({key}) already exists; not "
                                "replacing it (pass --allow-duplicate to keep both)")
            path = _free_name(path)
        create_file(path, encode(record))
        return path

    def _undo(self, made: list[Path]) -> None:
        for p in self.written:
            with contextlib.suppress(OSError):
                os.unlink(p)
        self.written.clear()
        remove_folders(made)


def _free_name(path: Path) -> Path:
    stem = path.name[:-len(SUFFIX)]
    n = 2
    while os.path.lexists(candidate := path.with_name(f"{stem}-{n}{SUFFIX}")):
        n += 1
    return candidate


def write_record_file(path: Path, record: Mapping[str, Any]) -> None:
    """One record at a fixed name (the hook's ``amsc.json``), replacing an earlier one whole."""
    create_file(path, encode(record), replace=True)


# ------------------------------------------------------------------ reading


def load_record(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a record back; an :class:`AmscError` names what makes a file no record."""
    p = Path(path)
    if p.is_dir():
        raise AmscError(f"{p}: is a directory, not a provenance record")
    try:
        with open(p, "rb") as f:
            data = f.read(_MAX_RECORD_BYTES + 1)
    except FileNotFoundError:
        raise AmscError(f"{p}: no such file") from None
    except OSError as e:
        raise AmscError(f"{p}: cannot read: {e.strerror or e}") from None
    try:
        if len(data) > _MAX_RECORD_BYTES:
            raise ValueError(f"larger than {_MAX_RECORD_BYTES >> 20} MiB")
        rec = json.loads(data.decode("utf-8"))
        _check_shape(rec)
    except (ValueError, RecursionError) as e:
        why = "not JSON" if isinstance(e, json.JSONDecodeError) else str(e) or "not JSON"
        raise AmscError(f"{p}: not an {TOOL} provenance record ({why})") from None
    return rec


def _check_shape(rec: Any) -> None:
    if not isinstance(rec, dict):
        raise ValueError("not a JSON object")
    schema = rec.get("schema")
    if type(schema) is not int or schema < 1:
        raise ValueError("no schema version")
    row = rec.get("row")
    if not isinstance(row, dict) or any(not isinstance(row.get(c), str) for c in HEADER):
        raise ValueError("no row of the results schema")
    if not isinstance(rec.get("options"), dict) or not isinstance(rec.get("run_dir"), str):
        raise ValueError("no options or run_dir")
    files = rec.get("files")
    if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
        raise ValueError("no files list")


def iter_records(folder: str | os.PathLike[str]) -> Iterator[tuple[Path, dict[str, Any] | None,
                                                                   str | None]]:
    """``(path, record, None)`` or ``(path, None, why not)`` for each ``*.json`` in ``folder``.

    Hidden files (an interrupted write's temporary file) are not records.
    """
    p = Path(folder)
    if not p.is_dir():
        what = "not a folder" if p.exists() else "no such folder"
        raise AmscError(f"{p}: {what}; --provenance needs the folder of the records")
    try:
        names = sorted(e.name for e in os.scandir(p)
                       if e.name.endswith(SUFFIX) and not e.name.startswith("."))
    except OSError as e:
        raise AmscError(f"{p}: cannot list: {e.strerror or e}") from None
    for name in names:
        try:
            yield p / name, load_record(p / name), None
        except AmscError as e:
            yield p / name, None, e.format_message()


def options_from_record(rec: Mapping[str, Any], where: str) -> ExportOptions:
    """The :class:`ExportOptions` a record was made with.

    An option this version does not know is refused when it was set: re-running
    without it could give another row and call it reproduced.
    """
    known = {f.name for f in fields(ExportOptions)}
    recorded = rec["options"]
    unknown = [k for k, v in recorded.items() if k not in known and v not in (None, False, "")]
    if unknown:
        by = (rec.get("tool") or {}).get("version", "?")
        what = "option" if len(unknown) == 1 else "options"
        raise AmscError(f"{where}: made with {what} {', '.join(sorted(unknown))} that "
                        f"{TOOL} {__version__} does not know; reproduce it with {TOOL} {by} "
                        "or later")
    try:
        return ExportOptions(**{k: v for k, v in recorded.items() if k in known})
    except (AmscError, TypeError) as e:
        raise AmscError(f"{where}: its options cannot be used: {e}") from None
