"""A results file as a Frictionless Data Package: ``datapackage.json`` beside it.

The layout proposed for AmSC results (docs/results-files.md)::

    results/
      runs.csv            the rows
      datapackage.json    what they are: the Table Schema of runs.csv, its records
      records/            one provenance record per row

so that ``frictionless validate datapackage.json`` (or pandas, R, Julia, a
catalogue) reads the rows without this tool. ``describe``
(:mod:`ezpz_amsc.flow.describe`) writes or updates it, and nothing else ever
does. An update replaces only what this tool owns: the results file's
resource (its path, format and schema) and the provenance records listed as
its sources. Everything else stays: a title, licenses, contributors, other
resources, sources a person added.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ezpz_amsc.errors import AmscError, reason
from ezpz_amsc.fs.read import read_capped
from ezpz_amsc.results.fields import table_schema
from ezpz_amsc.text import plural

PACKAGE_FILE = "datapackage.json"
RESULTS_FILE = "runs.csv"  # the layout's name of a results file (the benchmarks' own)
RECORDS_FOLDER = "records"  # beside the results file: found without --provenance
MAX_PACKAGE_BYTES = 64 << 20  # a package listing 100,000 records is ~20 MB
# What the results file's resource says of itself; any other key of it is a person's.
RESOURCE = {"profile": "tabular-data-resource", "format": "csv", "mediatype": "text/csv",
            "encoding": "utf-8"}
_NAME_UNSAFE = re.compile(r"[^a-z0-9._-]+")


def package_path(results: str | os.PathLike[str]) -> Path:
    """Where the data package of a results file is: ``datapackage.json`` beside it."""
    return Path(results).parent / PACKAGE_FILE


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
        raise AmscError(f"{path}: cannot read: {reason(e)}") from None
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
