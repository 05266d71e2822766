"""The one place that touches ezpz (docs/ezpz-integration.md).

Nothing here imports ezpz at module level, and nothing trusts the module name:
the PyPI project called ``ezpz`` is an unrelated 2016 package that also
installs a module named ``ezpz``. Every use checks for the attribute it needs
and falls back (or gives up) when it is not there.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
from typing import Any

# ezpz's get_machine() table, in its own order; the first matching prefix wins.
_MACHINE_PREFIXES: tuple[tuple[str, str], ...] = (
    ("frontier", "Frontier"),
    ("sophia", "Sophia"),
    ("theta", "ThetaGPU"),
    ("sunspot", "SunSpot"),  # ezpz's literal spelling
    ("x1", "SunSpot"),
    ("aurora", "Aurora"),
    ("x4", "Aurora"),
    ("login", "Perlmutter"),
    ("nid", "Perlmutter"),
)


def machine_from_hostname(hostname: str) -> str:
    """ezpz's hostname → facility mapping, for when the real ezpz is not installed.

    Prefixes are matched as ezpz matches them (case-sensitive); an unknown host
    name comes back unchanged, which is also what ezpz records as ``MACHINE``.
    """
    if hostname.startswith("x3"):
        return "Sirius" if "sirius" in hostname else "Polaris"
    for prefix, machine in _MACHINE_PREFIXES:
        if hostname.startswith(prefix):
            return machine
    return hostname


def _real_get_machine() -> Any | None:
    try:
        import ezpz  # may be the PyPI namesake (an empty package), or absent
    except Exception:  # a broken or Python-2-era namesake can raise anything on import
        return None
    try:
        fn = getattr(ezpz, "get_machine", None)
    except Exception:  # ezpz's lazy attributes import submodules on access
        return None
    return fn if callable(fn) else None


def get_machine(hostname: str) -> tuple[str, str]:
    """(facility name, which implementation answered) for ``hostname``.

    The real ezpz's ``get_machine`` is asked first, so a site ezpz learns about
    later is named the way ezpz names it; anything odd from it (an exception,
    a non-string, an empty answer) falls back to :func:`machine_from_hostname`.
    """
    fn = _real_get_machine()
    if fn is not None:
        try:
            got = fn(hostname)
        except Exception:
            got = None
        if isinstance(got, str) and got.strip():
            return got.strip(), "ezpz.get_machine"
    return machine_from_hostname(hostname), "a copy of ezpz.get_machine"


def find_history() -> tuple[type | None, str]:
    """The real ``ezpz.history.History`` and ``""``, or None and why it is not there —
    importing nothing when ezpz is absent.

    The spec lookups below read the file system only, so a missing ezpz or a
    namesake without a ``history`` submodule leaves ``sys.modules`` untouched.
    """
    try:
        spec = importlib.util.find_spec("ezpz")
    except Exception as e:
        return None, f"looking for ezpz failed ({type(e).__name__}: {e})"
    locations = spec.submodule_search_locations if spec is not None else None
    if spec is None:
        return None, "ezpz is not installed in this Python"
    try:
        found = bool(locations) and importlib.machinery.PathFinder.find_spec(
            "history", list(locations or ())) is not None
    except Exception as e:
        return None, f"looking for ezpz.history failed ({type(e).__name__}: {e})"
    if not found:
        return None, ("the installed ezpz has no history module (the unrelated PyPI package "
                      "of that name?)")
    try:
        history = importlib.import_module("ezpz.history")  # torch, xarray: seconds
    except Exception as e:
        return None, f"importing ezpz.history failed ({type(e).__name__}: {e})"
    cls = getattr(history, "History", None)
    if not isinstance(cls, type):
        return None, "ezpz.history has no History class"
    if not (callable(getattr(cls, "finalize", None)) and callable(getattr(cls, "update", None))):
        return None, "ezpz.history.History has no finalize and update methods: not ezpz's"
    return cls, ""
