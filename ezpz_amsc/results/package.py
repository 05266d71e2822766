"""A results file as a Frictionless Data Package: ``datapackage.json`` beside it.

The layout proposed for AmSC results (docs/results-files.md)::

    results/
      runs.csv            the rows
      datapackage.json    what they are: the Table Schema of runs.csv, its records
      records/            one provenance record per row

so that ``frictionless validate datapackage.json`` (or pandas, R, Julia, a
catalogue) reads the rows without this tool. :func:`describe` writes or
updates it, and nothing else ever does. An update replaces only what this
tool owns: the results file's resource (its path, format and schema) and the
provenance records listed as its sources. Everything else stays: a title,
licenses, contributors, other resources, sources a person added.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ezpz_amsc.errors import AmscError
from ezpz_amsc.fs.create import create_file
from ezpz_amsc.fs.read import read_capped
from ezpz_amsc.records.folder import iter_records
from ezpz_amsc.results.fields import table_schema
from ezpz_amsc.results.schema import HEADER, cells_of
from ezpz_amsc.results.validate import check_results_file
from ezpz_amsc.text import plural

PACKAGE_FILE = "datapackage.json"
RECORDS_FOLDER = "records"  # beside the results file: found without --provenance
MAX_PACKAGE_BYTES = 64 << 20  # a package listing 100,000 records is ~20 MB
# What the results file's resource says of itself; any other key of it is a person's.
RESOURCE = {"profile": "tabular-data-resource", "format": "csv", "mediatype": "text/csv",
            "encoding": "utf-8"}
_NAME_UNSAFE = re.compile(r"[^a-z0-9._-]+")


@dataclass
class Description:
    """What :func:`describe` did: the package, and what it lists."""

    path: Path  # datapackage.json
    resource: str  # the results file's name in it
    rows: int
    records: Path | None  # the folder whose records are listed, if any
    sources: int  # records listed
    written: bool  # False: the file already said exactly this
    notes: list[str] = field(default_factory=list)


def package_path(results: str | os.PathLike[str]) -> Path:
    """Where the data package of a results file is: ``datapackage.json`` beside it."""
    return Path(results).parent / PACKAGE_FILE


def describe(results: str | os.PathLike[str],
             provenance: str | os.PathLike[str] | None = None) -> Description:
    """Write or update ``datapackage.json`` beside ``results``; refuse a file ``check`` refuses.

    ``provenance`` is the folder of the rows' records; without it, ``records/``
    beside the results file is used when it is a folder. Records whose row is
    a line of the file are listed as the resource's sources.
    """
    csv_path = Path(results)
    if csv_path.is_dir():
        raise AmscError(f"{csv_path}: is a directory; describe needs a results CSV")
    rows: list[dict[str, str]] = []
    count, problems = check_results_file(
        csv_path, lambda _line, cells, _offset: rows.append(dict(zip(HEADER, cells, strict=True))))
    if problems:
        raise AmscError(f"{csv_path}: {plural(len(problems), 'problem')} in "
                        f"{plural(count, 'row')}; 'ezpz-amsc check {csv_path}' lists them: "
                        f"a data package must not describe a file check refuses")
    target = package_path(csv_path)
    old_bytes, package = load_package(target)
    folder = records_folder(csv_path, provenance)
    notes: list[str] = []
    sources = [] if folder is None else record_sources(rows, folder, target.parent, notes)
    resource = update_resource(package, csv_path.name, sources,
                               None if folder is None else _rel(folder, target.parent))
    data = encode(package)
    written = data != old_bytes
    if written:
        create_file(target, data, replace=True, what="datapackage.json")
    return Description(target, resource, count, folder, len(sources), written, notes)


# ------------------------------------------------------------------ reading the package


def load_package(path: Path) -> tuple[bytes | None, dict[str, Any]]:
    """(the file's bytes, its JSON object); ``(None, {})`` when there is no file yet."""
    try:
        data = read_capped(path, MAX_PACKAGE_BYTES)
    except FileNotFoundError:
        return None, {}
    except IsADirectoryError:
        raise AmscError(f"{path}: is a directory, not a data package") from None
    except OSError as e:
        raise AmscError(f"{path}: cannot read: {e.strerror or e}") from None
    if len(data) > MAX_PACKAGE_BYTES:
        raise AmscError(f"{path}: over {MAX_PACKAGE_BYTES >> 20} MiB; not a data package "
                        "this tool wrote")
    try:
        package = json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except (UnicodeDecodeError, ValueError) as e:
        raise AmscError(f"{path}: not valid JSON ({e}); fix it or move it away") from None
    if not isinstance(package, dict) or not isinstance(package.get("resources", []), list):
        raise AmscError(f"{path}: not a data package (a JSON object whose resources are a "
                        "list); fix it or move it away")
    return data, package


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def find_resource(package: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    """The resource whose path is the results file ``name`` (beside the package)."""
    return next((r for r in package.get("resources", [])
                 if isinstance(r, dict) and r.get("path") == name), None)


# ------------------------------------------------------------------ the records


def records_folder(results: Path, given: str | os.PathLike[str] | None) -> Path | None:
    """The records folder: the one given, else ``records/`` beside the results file if any.

    A data package names its files by relative paths below its own folder, so
    the records must be inside the results file's folder.
    """
    if given is None:
        found = results.parent / RECORDS_FOLDER
        return found if found.is_dir() else None
    folder = Path(given)
    if not folder.is_dir():
        what = "not a folder" if folder.exists() else "no such folder"
        raise AmscError(f"{folder}: {what}; --provenance needs the folder of the records")
    home = results.parent
    if _rel(folder, home) is None:
        raise AmscError(f"{folder}: not a folder below {home.absolute()}, where {results.name} "
                        f"and its {PACKAGE_FILE} are: a data package lists files by their path "
                        "below its own folder")
    return folder


def _rel(path: Path, home: Path) -> str | None:
    """``path`` relative to ``home``, POSIX-style; None when it is not below ``home``."""
    rel = os.path.relpath(path.resolve(), home.resolve())
    if rel == os.curdir or rel == os.pardir or rel.startswith(os.pardir + os.sep):
        return None
    return Path(rel).as_posix()


def record_sources(rows: list[dict[str, str]], folder: Path, home: Path,
                   notes: list[str]) -> list[dict[str, str]]:
    """The sources entry of each record whose row is a line of the file, in line order.

    What is not listed is noted: files that are not records, records without
    their row in the file, rows without a record.
    """
    line_of = {tuple(cells_of(row)): i for i, row in enumerate(rows)}
    found: dict[int, Path] = {}
    unpaired = 0
    for path, record, why in iter_records(folder):
        if record is None:
            notes.append(f"not listed: {why}")
            continue
        i = line_of.get(tuple(cells_of(record["row"])))
        if i is None or i in found:
            unpaired += 1
        else:
            found[i] = path
    if unpaired:
        notes.append(f"{plural(unpaired, 'record')} in {folder} not listed: no line of the "
                     "results file holds its row")
    missing = len(rows) - len(found)
    if missing:
        notes.append(f"{plural(missing, 'row')} without a record in {folder}")
    sources = []
    for i in sorted(found):
        row = rows[i]
        sources.append({"title": f"provenance record: {row['config']} on {row['system']}, "
                                 f"{_count(row['nodes'], 'node')}, {_count(row['gpus'], 'gpu')}, "
                                 f"{row['timestamp']}",
                        "path": f"{_rel(found[i].parent, home)}/{found[i].name}"})
    return sources


def _count(cell: str, what: str) -> str:
    return f"{cell} {what}" + ("" if cell == "1" else "s")


# ------------------------------------------------------------------ writing the package


def update_resource(package: dict[str, Any], name: str, sources: list[dict[str, str]],
                    records: str | None) -> str:
    """Put the results file's resource into ``package``; return its name.

    Keys of the resource this tool owns are set, others kept; sources under
    the ``records`` folder are replaced by ``sources``, others kept.
    """
    if not package:
        package["profile"] = "tabular-data-package"
    resources = package.setdefault("resources", [])
    resource = find_resource(package, name)
    if resource is None:
        resource = {"name": _free_name(name, resources), "path": name}
        resources.append(resource)
    resource.update(RESOURCE)
    resource["schema"] = table_schema()
    if records is not None:
        kept = [s for s in resource.get("sources", []) if not _a_record(s, records)]
        if kept or sources:
            resource["sources"] = kept + sources
        else:
            resource.pop("sources", None)
    return str(resource.get("name", name))


def _a_record(source: Any, records: str) -> bool:
    """Whether a source is a file of the records folder (this tool's), not a person's."""
    return (isinstance(source, dict) and isinstance(source.get("path"), str)
            and source["path"].startswith(records + "/"))


def _free_name(file_name: str, resources: list[Any]) -> str:
    """A resource name (lower case, ``a-z0-9._-``) for a file, unused in ``resources``."""
    stem = Path(file_name).stem.lower()
    base = _NAME_UNSAFE.sub("-", stem).strip("-._") or "results"
    taken = {r.get("name") for r in resources if isinstance(r, dict)}
    name, n = base, 2
    while name in taken:
        name, n = f"{base}-{n}", n + 1
    return name


def encode(package: Mapping[str, Any]) -> bytes:
    """The package as its file holds it: indented JSON, UTF-8, one final newline."""
    return (json.dumps(package, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


# ------------------------------------------------------------------ check's note


def package_notes(results: str | os.PathLike[str]) -> list[str]:
    """What ``check`` says of a ``datapackage.json`` beside the file that is out of date.

    Nothing when there is none, or when it does not list this file.
    """
    target = package_path(results)
    if not os.path.lexists(target):
        return []
    try:
        _, package = load_package(target)
    except AmscError as e:
        return [e.format_message()]
    resource = find_resource(package, Path(results).name)
    if resource is None:
        return []
    differ = schema_differences(resource.get("schema"), table_schema())
    if not differ:
        return []
    return [f"{target}: its schema of {Path(results).name} differs from this tool's "
            f"({'; '.join(differ)}); to update it: ezpz-amsc describe {results}"]


def schema_differences(given: Any, current: Mapping[str, Any]) -> list[str]:
    """How a package's schema differs from ``current``, in a few words; empty when equal."""
    if not isinstance(given, dict):
        return ["no inline schema"]
    fields = {f.get("name"): f for f in given.get("fields", []) if isinstance(f, dict)}
    names = [f["name"] for f in current["fields"]]
    out = []
    missing = [n for n in names if n not in fields]
    extra = [str(n) for n in fields if n not in names]
    changed = [n for n in names if n in fields and fields[n] != _field(current, n)]
    if missing:
        out.append(f"{plural(len(missing), 'field')} missing: {', '.join(missing)}")
    if extra:
        out.append(f"{plural(len(extra), 'field')} not in the row: {', '.join(extra)}")
    if changed:
        out.append(f"{plural(len(changed), 'field')} changed: {', '.join(changed)}")
    if not out and list(fields) != names:
        out.append("fields in another order")
    for key in current:
        if key != "fields" and given.get(key) != current[key]:
            out.append(f"{key} differs")
    return out


def _field(schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    return next(f for f in schema["fields"] if f["name"] == name)
