"""What the command line prints besides rows: notes, batch errors, JSON, and whether a
stream is a terminal.

The one place where a note becomes a ``note: ...`` line, a failure of one of several
inputs an ``error: ...`` line, and data a JSON text: every command prints through here,
with options spelled as flags (:func:`ezpz_amsc.text.as_flag`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TextIO

import click

from ezpz_amsc.text import Text, about, as_flag, spelled


def say(text: Text) -> str:
    """``text`` as the command line shows it: its options as flags."""
    return spelled(text, as_flag)


def notes(lines: Iterable[Text], quiet: bool = False) -> None:
    """Each note as a ``note: ...`` line on stderr; none with ``quiet``."""
    if quiet:
        return
    for line in lines:
        click.echo(f"note: {say(line)}", err=True)


def batch_notes(notes_by_run: Sequence[tuple[str, Sequence[Text]]], given: int) -> list[Text]:
    """The notes of several runs, each said once, in the order first said.

    A note of one run is ``RUN: note``; a note several runs share is said once
    and names them: ``note (runs A, B)``, or ``note (all N runs)`` when every
    one of the ``given`` run directories has it.
    """
    runs_of: dict[Text, list[str]] = {}
    for run_dir, notes in notes_by_run:
        for note in dict.fromkeys(notes):
            runs_of.setdefault(note, []).append(run_dir)
    lines: list[Text] = []
    for note, runs in runs_of.items():
        if len(runs) == 1:
            lines.append(f"{runs[0]}: " + note)
        elif len(runs) == given:
            lines.append(note + f" (all {given} runs)")
        else:
            lines.append(note + f" (runs {', '.join(runs)})")
    return lines


def errors(failed: Iterable[tuple[str, Any]]) -> None:
    """One ``error: NAME: ...`` line per failed input of a batch (``(name, AmscError)``)."""
    for name, err in failed:
        click.echo(f"error: {say(about(name, err.message))}", err=True)


def json_text(data: Mapping[str, Any] | list[Any], *, indent: int | None = None) -> str:
    """``data`` as JSON: UTF-8 text as it is, one line unless ``indent``.

    ``allow_nan=False``: every number a command prints is finite or null, so a NaN here
    is a bug, refused rather than printed as a token no JSON reader takes.
    """
    import json  # only for a command asked for JSON

    return json.dumps(data, indent=indent, allow_nan=False, ensure_ascii=False)


def use_colour(stream: TextIO, environ: Mapping[str, str] | None = None) -> bool:
    """Colour only on a terminal, and never when ``NO_COLOR`` is set (no-color.org)."""
    env = os.environ if environ is None else environ
    if env.get("NO_COLOR", ""):
        return False
    return is_terminal(stream)


def is_terminal(stream: TextIO | None = None) -> bool:
    """Whether ``stream`` (stderr by default) is a terminal (a closed or odd one is not)."""
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):
        return False
