"""Provenance records: one JSON file beside every published row.

A record holds what ``reproduce`` needs and what the row used, by allowlist: the
row's exact cells, the tool's version, the options, where the run was, each file
the row came from (its path inside the run, size and sha256), and the values the
row used (system, nodes, gpus, ranks per node) with the file and field each came
from. Nothing else from the run is copied: of the launch command and of
``run_info.json``'s sections (the environment dump among them) only a sha256 is
kept. So no secret can reach a record, whatever its form. docs/provenance.md
describes the layout.

Compatibility: ``schema`` is a version number. Version 1 records (which copied
``run_info.json``'s sections, redacted) are still read: the fields a reader uses
(``row``, ``options``, ``run_dir``, ``files``) kept their names and meaning.
"""

from __future__ import annotations

import errno
import getpass
import hashlib
import json
import math
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ezpz_amsc.errors import AmscError, reason
from ezpz_amsc.fs.read import open_regular, read_capped
from ezpz_amsc.options import ExportOptions
from ezpz_amsc.results.schema import (
    HEADER,
    MAX_COUNT,
    MAX_LINE_BYTES,
    MAX_PROVENANCE_BYTES,
    TIMESTAMP_FORMAT,
)
from ezpz_amsc.run.layout import rel_to
from ezpz_amsc.version import TOOL, __version__

if TYPE_CHECKING:
    from ezpz_amsc.run.steps import Digest, FilesRead


class Exported(Protocol):
    """An exported row, as a record needs it (the export's result)."""

    read: FilesRead | None  # the files, hashed while the export read them

    def to_data(self) -> dict[str, Any]: ...

SCHEMA = 2
RUN_INFO_SECTIONS = ("Python", "Torch", "Distributed", "Environment Variables")
LAUNCH_KEY = "EZPZ_RUN_COMMAND"
MAX_RECORD_BYTES = 64 << 20
_CHUNK_BYTES = 1 << 20
# A file the record does not open: its real path leaves the run directory.
OUTSIDE = "a symbolic link out of the run directory; not followed"


def digest_file(path: Path) -> dict[str, Any]:
    """``{"size", "sha256"}`` of a small provenance file, read in chunks."""
    h, size = hashlib.sha256(), 0
    try:
        with open_regular(path) as f:
            while chunk := f.read(_CHUNK_BYTES):
                h.update(chunk)
                size += len(chunk)
    except OSError as e:
        raise AmscError(f"{path}: cannot read it for the provenance record: "
                        f"{reason(e)}") from None
    return {"size": size, "sha256": h.hexdigest()}


def canonical_sha256(value: Any) -> str:
    """The sha256 of a JSON value in one canonical form: keys sorted, no spaces, UTF-8."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def _outside(root: Path, path: Path) -> bool:
    """Whether ``path``'s real path leaves the run directory's (a symbolic link out of it)."""
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return os.path.commonpath([real_root, real]) != real_root


def _role(path: Path) -> str:
    # Never a run_info.json: placement uses one at most, and _sources adds it first.
    return "config" if path.name == "config.json" else "report"


@dataclass
class _Sources:
    """The files a row came from, and the sha256 of what the record does not copy."""

    root: Path
    files: dict[str, dict[str, Any]] = field(default_factory=dict)  # relative path -> entry
    hashed: dict[str, str] = field(default_factory=dict)  # section or key -> sha256

    def add(self, path: Path, role: str, digest: Mapping[str, Any]) -> None:
        rel = rel_to(self.root, path)
        self.files.setdefault(rel, {"path": rel, "role": role, **digest})

    def add_provenance(self, path: Path, role: str) -> None:
        """A provenance file, hashed unless it is a link out of the run directory."""
        if _outside(self.root, path):
            self.add(path, role, {"size": 0, "sha256": None, "not_hashed": OUTSIDE})
        else:
            self.add(path, role, digest_file(path))


def _sources(read: FilesRead) -> _Sources:
    src = _Sources(read.root)
    for p in read.metrics:
        d = read.digests.get(p)  # taken while the export read it
        src.add(p, "metrics", _metrics_entry(d, read.digests.budget_bytes) if d
                else digest_file(p))
    # The run_info.json whose sections are hashed: the one placement used, else the nearest.
    run_info = next((p for p in read.provenance if p.name == "run_info.json"),
                    read.run_info[0] if read.run_info else None)
    if run_info is not None:
        if _outside(read.root, run_info):
            src.add_provenance(run_info, "run_info")
        else:
            src.hashed, digest = _hash_run_info(run_info)
            src.add(run_info, "run_info", digest)
    for p in read.provenance:
        if rel_to(read.root, p) not in src.files:
            src.add_provenance(p, _role(p))
    return src


def _metrics_entry(d: Digest, budget_bytes: int | None) -> dict[str, Any]:
    """A metrics file's size and sha256; ``sha256`` null and ``not_hashed`` saying why
    for a file the hash budget left unhashed (``reproduce`` cannot compare it)."""
    if d.sha256 is not None:
        return {"size": d.size, "sha256": d.sha256}
    return {"size": d.size, "sha256": None,
            "not_hashed": f"over the hash budget of {budget_bytes} bytes"}


def _hash_run_info(path: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """The sha256 of each of a run_info.json's sections and of its launch command (never
    their content), and the file's digest."""
    try:
        data = read_capped(path, MAX_PROVENANCE_BYTES)
    except OSError:
        data = b""
    if not data or len(data) > MAX_PROVENANCE_BYTES:  # too big for the export too: hash only
        return {}, digest_file(path)
    digest = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    try:
        doc = json.loads(data.decode("utf-8-sig"), parse_constant=str)
    except (ValueError, RecursionError):
        return {}, digest
    if not isinstance(doc, dict):
        return {}, digest
    hashed = {}
    for name in RUN_INFO_SECTIONS:
        if name in doc:
            hashed[name] = canonical_sha256(doc[name])
    launch = next((s[LAUNCH_KEY] for name in ("Distributed", "Environment Variables")
                   if isinstance(s := doc.get(name), dict) and LAUNCH_KEY in s), None)
    if launch is not None:
        hashed[LAUNCH_KEY] = canonical_sha256(launch)
    return hashed, digest


def host_name() -> str:
    """This machine's name, as ``socket.gethostname()`` gives it on POSIX (the kernel's
    node name), without importing ``socket``: a few milliseconds on every record."""
    return os.uname().nodename


def _user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return None


def build_record(result: Exported, opts: ExportOptions,
                 results_file: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The provenance record of one exported row (``export_run(..., hash_files=True)``).

    An allowlist: the row (from ``result.to_data()``, as ``--format json`` prints
    it), the options, the files and the values the row used (from ``result.read``),
    and sha256s of what is not copied. Nothing else of the run is in a record.
    """
    if result.read is None:
        raise ValueError("a record needs export_run(..., hash_files=True)")
    data = result.to_data()
    src = _sources(result.read)
    return {
        "schema": SCHEMA,
        "tool": {"name": TOOL, "version": __version__},
        "row": data["row"],
        "options": asdict(opts),
        "run_dir": os.path.abspath(src.root),
        "exported": {
            "at": time.strftime(TIMESTAMP_FORMAT, time.gmtime()),
            "host": host_name(),
            "user": _user(),
            "results_file": os.path.abspath(results_file) if results_file else None,
        },
        "files": list(src.files.values()),
        "values": result.read.values,
        "sha256_of": src.hashed,
    }


def encode(record: Mapping[str, Any]) -> bytes:
    """The record as a file's bytes: indented UTF-8 JSON, strict (no NaN)."""
    try:
        text = json.dumps(record, indent=2, ensure_ascii=False, allow_nan=False)
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a \\ud800 escape: keep it escaped
        return (json.dumps(record, indent=2, allow_nan=False) + "\n").encode("ascii")


# ------------------------------------------------------------------ naming and writing


def load_record(path: str | os.PathLike[str], dir_fd: int | None = None,
                shown: str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """Read a record back; an :class:`AmscError` names what makes a file no record.

    With ``dir_fd``, ``path`` is a name in that folder, never followed if it is a
    symbolic link; ``shown`` is how messages name the file (default ``path``).
    """
    shown = path if shown is None else shown
    try:
        data = read_capped(path, MAX_RECORD_BYTES, dir_fd)
    except OSError as e:
        if isinstance(e, PermissionError) and dir_fd is None and not os.path.lexists(path):
            raise  # below a folder you may not search: the CLI's edge says so
        if e.errno == errno.ELOOP:
            raise AmscError(f"{shown}: a symbolic link, not a provenance record; "
                            "not following it") from None
        if e.errno == errno.ENOENT:
            raise AmscError(f"{shown}: no such file") from None
        if e.errno == errno.EISDIR:
            raise AmscError(f"{shown}: is a directory, not a provenance record") from None
        raise AmscError(f"{shown}: cannot read: {reason(e)}") from None
    return parse_record(data, shown)


def parse_record(data: bytes, shown: str | os.PathLike[str]) -> dict[str, Any]:
    """A record from its file's bytes (at most ``MAX_RECORD_BYTES + 1`` of them); an
    :class:`AmscError` naming ``shown`` and the field that makes it none."""
    try:
        if len(data) > MAX_RECORD_BYTES:
            raise ValueError(f"larger than {MAX_RECORD_BYTES >> 20} MiB")
        rec: dict[str, Any] = json.loads(data.decode("utf-8"))
        _check_shape(rec)
    except (ValueError, RecursionError) as e:
        why = "not JSON" if isinstance(e, json.JSONDecodeError) else str(e) or "not JSON"
        raise AmscError(f"{shown}: not an {TOOL} provenance record ({why})") from None
    return rec


def _check_shape(rec: Any) -> None:
    """Refuse (``ValueError``) a record whose fields do not have the types this version uses.

    Every field a reader of records touches is checked before any is used, so a
    crafted or damaged record is one line naming the field, never a traceback.
    Unknown fields are allowed: later versions only add fields.
    """
    if not isinstance(rec, dict):
        raise ValueError("not a JSON object")
    schema = rec.get("schema")
    if type(schema) is not int or schema < 1:
        raise ValueError("no schema version")
    if schema > MAX_SCHEMA:
        raise ValueError(f"schema is above {MAX_SCHEMA}")
    row = rec.get("row")
    if not isinstance(row, dict) or any(not isinstance(row.get(c), str) for c in HEADER):
        raise ValueError("no row of the results schema")
    if not isinstance(rec.get("options"), dict) or not isinstance(rec.get("run_dir"), str):
        raise ValueError("no options or run_dir")
    files = rec.get("files")
    if not isinstance(files, list) or not all(isinstance(f, dict) for f in files):
        raise ValueError("no files list")
    _check_fields(rec)


# Optional parts of a record, by path: the types a value may have (absent is fine).
_OPTIONAL: dict[str, tuple[type, ...]] = {
    "tool": (dict,), "tool.name": (str,), "tool.version": (str,),
    "exported": (dict,), "exported.at": (str,), "exported.host": (str, type(None)),
    "exported.user": (str, type(None)), "exported.results_file": (str, type(None)),
}
# sha256 is null for a file the hook's hash budget left unhashed; not_hashed says why.
_FILE_FIELDS: dict[str, tuple[type, ...]] = {"path": (str,), "role": (str,), "size": (int,),
                                             "sha256": (str, type(None))}
_FILE_OPTIONAL: dict[str, tuple[type, ...]] = {"not_hashed": (str,)}
# Every number a reader uses, with the range it must be in (a crafted 10**30 is refused by
# name, not met as an OverflowError deep in a re-export).
MAX_SCHEMA = 1000
MAX_FILE_BYTES = (1 << 63) - 1
MAX_WARMUP = 1 << 31
_OPTION_RANGES: dict[str, tuple[int, int]] = {
    "nodes": (1, MAX_COUNT), "gpus": (1, MAX_COUNT), "warmup": (0, MAX_WARMUP),
    "max_line_bytes": (1, MAX_LINE_BYTES)}


def _check_fields(rec: dict[str, Any]) -> None:
    for where, types in _OPTIONAL.items():
        head, _, leaf = where.partition(".")
        parent = rec.get(head) if leaf else rec
        value = parent.get(leaf or head) if isinstance(parent, dict) else None
        if value is not None and not _is(value, types):
            raise ValueError(f"{where} is not {_kind(types)}")
    run_dir = rec["run_dir"]
    if "\0" in run_dir or not os.path.isabs(run_dir) or _is_root(run_dir):
        raise ValueError(f"run_dir {run_dir[:80]!r} is not a run directory's absolute path")
    for i, entry in enumerate(rec["files"]):
        for name, types in _FILE_FIELDS.items():
            if name not in entry or not _is(entry[name], types):
                raise ValueError(f"files[{i}].{name} is not {_kind(types)}")
        for name, types in _FILE_OPTIONAL.items():
            if name in entry and not _is(entry[name], types):
                raise ValueError(f"files[{i}].{name} is not {_kind(types)}")
        if not 0 <= entry["size"] <= MAX_FILE_BYTES:
            raise ValueError(f"files[{i}].size is not from 0 to {MAX_FILE_BYTES}")
    options = rec["options"]
    for f in fields(ExportOptions):
        value = options.get(f.name)
        if f.name in options and not _is(value, _option_types(f.type)):
            raise ValueError(f"options.{f.name} is not {_kind(_option_types(f.type))}")
    for name, (low, high) in _OPTION_RANGES.items():
        value = options.get(name)
        if isinstance(value, int) and not low <= value <= high:
            raise ValueError(f"options.{name} is not from {low} to {high}")
    wall = options.get("wall_time_sec")
    if isinstance(wall, float) and not math.isfinite(wall):
        raise ValueError("options.wall_time_sec is not a finite number")


def _is_root(run_dir: str) -> bool:
    """Whether ``run_dir`` names the file system's root, however written (``/.``,
    ``/var/..``, ``//``), or through a symbolic link to it: the re-export would walk it all."""
    for form in (os.path.normpath(run_dir), os.path.realpath(run_dir)):
        if os.path.dirname(form) == form:
            return True
    return False


_TYPES = {"str": (str,), "int": (int,), "float": (int, float), "None": (type(None),)}


def _option_types(annotation: Any) -> tuple[type, ...]:
    """``"float | None"`` (an :class:`ExportOptions` field's type) → ``(int, float, NoneType)``."""
    return tuple(t for part in str(annotation).split("|") for t in _TYPES[part.strip()])


def _is(value: Any, types: tuple[type, ...]) -> bool:
    return isinstance(value, types) and not (isinstance(value, bool) and bool not in types)


def _kind(types: tuple[type, ...]) -> str:
    names = {str: "a string", int: "a whole number", float: "a number", dict: "an object",
             type(None): "null"}
    shown = [names[t] for t in types if not (t is int and float in types)]
    return " or ".join(shown)


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
