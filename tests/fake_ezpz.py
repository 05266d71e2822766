"""Packages named ``ezpz`` for one test: absent, the PyPI namesake's shape, or ezpz-like.

The real ezpz cannot be installed here (SPEC §1.5), so every test that needs an
``ezpz`` writes one into a temporary folder placed first on ``sys.path``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

# The layout of PyPI's ``ezpz`` 0.1.2 (2016, "Easy pan-zoom crop-resizing"): an
# empty ``__init__.py`` and a ``main.py`` that needs ImageMagick bindings.
NAMESAKE = {
    "ezpz/__init__.py": "",
    "ezpz/main.py": "from wand.image import Image  # noqa: F401\n",
}

# An ezpz exposing get_machine the way the real one does (``ezpz.get_machine``).
WITH_GET_MACHINE = {
    "ezpz/__init__.py": (
        "def get_machine(hostname=None):\n"
        "    return 'Fake-' + hostname\n"
    ),
}

# An ezpz whose ``history`` module holds a History like the real one (finalize + update).
WITH_HISTORY = {
    "ezpz/__init__.py": "",
    "ezpz/history.py": (
        "from standin_history import StandInHistory\n\n\n"
        "class History(StandInHistory):\n"
        "    pass\n"
    ),
}

LAYOUTS: dict[str, dict[str, str] | None] = {
    "absent": None, "namesake": NAMESAKE, "get_machine": WITH_GET_MACHINE,
    "history": WITH_HISTORY,
}


def forget_ezpz() -> None:
    for name in [n for n in sys.modules if n == "ezpz" or n.startswith("ezpz.")]:
        del sys.modules[name]


@pytest.fixture
def ezpz_pkg(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
             ) -> Iterator[Callable[[str | dict[str, str]], None]]:
    """``make(layout)`` installs an ``ezpz`` package for this test.

    ``layout`` is ``{path: source}``, or one of :data:`LAYOUTS` by name;
    ``"absent"`` hides any installed ezpz.
    """

    def make(layout: str | dict[str, str]) -> None:
        forget_ezpz()
        files = LAYOUTS[layout] if isinstance(layout, str) else layout
        if files is None:
            monkeypatch.setitem(sys.modules, "ezpz", None)  # import fails, find_spec → None
            return
        site = tmp_path / "fake-site"
        for rel, src in files.items():
            (site / rel).parent.mkdir(parents=True, exist_ok=True)
            (site / rel).write_text(src)
        monkeypatch.syspath_prepend(str(site))

    yield make
    forget_ezpz()
