"""Export at the end of training: the ``ezpz.finalize`` hook and :func:`install`.

The hook runs inside a training job, after ``History.finalize()`` has written
the run directory. Its one promise: the job never dies because of it. Every
failure becomes one warning line on the ``ezpz_amsc`` logger and is
swallowed. The export's notes are warnings too: a job that configured no
logging still shows them (Python prints warnings to stderr by default), so a
row that was derived or questionable is marked in the job log.

``KeyboardInterrupt`` and ``SystemExit`` are let through on purpose: nothing
here raises them (the export is called as a function, not through click's
standalone main), so when they show up they come from outside — Ctrl-C, or a
scheduler's SIGTERM turned into ``sys.exit`` by the job — and swallowing them
would keep a job alive that was told to stop.

Environment (read when the hook runs, so a job script can ``export`` them; their
names, defaults and parsing live in :mod:`ezpz_amsc.options`):

- ``EZPZ_AMSC_CONFIG``: the config label. Unset or empty: the ``ezpz.finalize``
  entry point does nothing (nobody configured it); after :func:`install` (a
  row was asked for) one warning says why there is no row and what to set.
- ``EZPZ_AMSC_APPEND``: results CSV to append to (same rules as ``--append``:
  ``~`` expanded, set but empty refused); unset → ``<run dir>/amsc.csv``
  holding the header and this run's row, and ``<run dir>/amsc.json``, its
  provenance record.
- ``EZPZ_AMSC_PROVENANCE``: with ``EZPZ_AMSC_APPEND``, the folder that gets
  the row's provenance record (same rules as ``--provenance``).
- ``EZPZ_AMSC_STATUS``: ``pass`` (default) or ``fail``.
- ``EZPZ_AMSC_WALL_TIME_SEC``: the scheduler's wall time, seconds.
- ``EZPZ_AMSC_LOCK_TIMEOUT``: seconds to wait for the results file's lock
  (default: ``--lock-timeout``'s); past it the row is not written.
- ``EZPZ_AMSC_HASH_BUDGET``: bytes of metrics files the provenance record
  hashes (1 GiB by default, :data:`~ezpz_amsc.options.HASH_BUDGET_BYTES`;
  ``512M``, ``2G``; ``0``: none). A file past it is listed unhashed, and a
  note says so: the row never waits for a hash it cannot afford.

Where the lines go: the ``ezpz_amsc`` logger propagates to the root logger.
ezpz configures that one when ``ezpz.history`` is imported (its terminal handler
writes to stdout), so in a training job the lines show where ezpz's own do;
without any logging set up, Python prints the warnings on stderr. The one line
that says where the row went is INFO where an INFO line is shown, else WARNING,
so that it is never lost.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
from pathlib import Path
from typing import Any

from ezpz_amsc.errors import AmscError
from ezpz_amsc.options import (
    ENV_APPEND,
    ENV_CONFIG,
    ENV_OF,
    ENV_PROVENANCE,
    ExportOptions,
    PublishOptions,
    expand_home,
    hash_budget_from_env,
    lock_timeout_from_env,
)
from ezpz_amsc.text import Opt, about, as_flag, spelled

log = logging.getLogger("ezpz_amsc")

RANK_ENV = ("RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK")
_DONE_ATTR = "_ezpz_amsc_exported"  # on the History object: run dirs already exported
_WRAPPED_ATTR = "_ezpz_amsc_wrapped"


class _Skip(Exception):
    """A reason not to export, worded for the warning line."""


_NO_CONFIG = (f"{ENV_CONFIG} is {{how}} in this process, so the row has no config label; "
              f"export {ENV_CONFIG}=LABEL in the job script (and check that the launcher "
              "passes it on to the ranks), or export by hand: ezpz-amsc RUN_DIR --config LABEL")


def spelling(option: Opt) -> str:
    """How the hook names an option: by the variable that sets it in a job
    (``EZPZ_AMSC_WALL_TIME_SEC=SECONDS``), else by its flag, which only an export by hand
    can pass."""
    variable = ENV_OF.get(option.name)
    if variable is None:
        return as_flag(option)
    return f"{variable}={option.value}" if option.value else variable


def _rank(history: Any) -> int:
    """This process's global rank: the history object's, else the launcher's, else 0."""
    for attr in ("rank", "_rank"):
        val = getattr(history, attr, None)
        if isinstance(val, int) and not isinstance(val, bool):
            return val
    for name in RANK_ENV:
        raw = os.environ.get(name, "").strip()
        if raw:
            try:
                return int(raw)
            except ValueError:
                raise _Skip(f"{name}={raw!r} is not a rank") from None
    return 0


def run_dir_of(history: Any, outdir: str | os.PathLike[str] | None) -> Path:
    """The directory ``finalize`` wrote (docs/ezpz-integration.md).

    ``outdir`` when the caller passed one. Otherwise finalize picked a stamped
    folder and left two pointers into it: ``_jsonl_path`` (the metrics file it
    moved there) and ``_report_dir`` (that folder, or a ``dataset_fname``
    subfolder of it). The one that contains the other is the run directory.
    """
    if outdir is not None and str(outdir) != "":
        return Path(outdir)
    jsonl = getattr(history, "_jsonl_path", None)
    report = getattr(history, "_report_dir", None)
    found = [Path(p) for p in ((Path(jsonl).parent if jsonl else None), report) if p]
    if not found:
        raise _Skip("finalize was given no outdir and the history object has neither "
                    "_jsonl_path nor _report_dir")
    a, b = found[0], found[-1]
    if b == a or b.is_relative_to(a):
        return a
    if a.is_relative_to(b):
        return b
    return Path(report) if report else a  # unrelated: run_info.json is next to the report


def _export(history: Any, run_dir: Path, config: str) -> None:
    from ezpz_amsc.flow.finalize import export_finished_run
    from ezpz_amsc.flow.publish import publish

    key = str(run_dir.resolve())
    done = getattr(history, _DONE_ATTR, None)
    if isinstance(done, set) and key in done:
        log.info("ezpz-amsc: %s already exported by this history; not writing it twice", run_dir)
        return
    opts = ExportOptions.from_env()
    if opts is None:  # the variable was unset while the hook ran
        return
    target, records = _env_path(ENV_APPEND), _env_path(ENV_PROVENANCE)
    # A bad value of either is refused before the export.
    lock_timeout, budget_bytes = lock_timeout_from_env(), hash_budget_from_env()
    result, opts = export_finished_run(run_dir, opts, budget_bytes)
    notes = list(result.notes)
    if target:
        publish([result], opts, PublishOptions(append=target, provenance=records,
                                               lock_timeout=lock_timeout))
        where = f"appended the {config!r} row for {run_dir} to {target}"
        if records:
            where += f", its provenance record to {records}"
    else:
        done = publish([result], opts, PublishOptions(run_folder=str(run_dir)))
        where = (f"wrote the {config!r} row for {run_dir} to {done.row_file}, its provenance "
                 f"record to {done.records[0]}")
        if records:  # a records folder goes with a shared results file, not with amsc.csv
            notes.append(f"{ENV_PROVENANCE} is used only with {ENV_APPEND}; the record is "
                         f"{done.records[0]}")
    # Only once the row is out, as on the command line: a failure logs its one line alone.
    for note in notes:
        log.warning("ezpz-amsc: note: %s", spelled(note, spelling))
    # A frozen or slotted history refuses the attribute: only the double-export guard is lost.
    with contextlib.suppress(Exception):
        setattr(history, _DONE_ATTR, (done if isinstance(done, set) else set()) | {key})
    # INFO where INFO is shown (ezpz's logging), else WARNING: the line is never lost.
    shown = log.isEnabledFor(logging.INFO) and log.hasHandlers()
    log.log(logging.INFO if shown else logging.WARNING, "ezpz-amsc: %s", where)


def _env_path(name: str) -> str | None:
    """A path variable: None when unset; set but empty is refused, as ``--append ''`` is."""
    raw = os.environ.get(name)
    if raw is None:
        return None
    if not raw.strip():
        raise _Skip(f"{name} is set but empty (is the variable that should hold it unset?); "
                    "set it to a path, or unset it")
    try:
        return expand_home(raw.strip())
    except ValueError as e:
        raise _Skip(f"{name}={raw!r}: {e}") from None


def finalize_hook(history: Any, outdir: str | os.PathLike[str] | None, *,
                  asked: bool = False) -> None:
    """The ``ezpz.finalize`` entry point: export the finished run, never raise.

    ``outdir`` is the directory finalize wrote, or None to read it off the
    history object. Exports only when ``EZPZ_AMSC_CONFIG`` is set, and only
    on rank 0. Without it, the entry point stays silent (an ambient hook
    nobody configured); ``asked`` (the :func:`install` wrapper) logs why there
    is no row.
    """
    config = os.environ.get(ENV_CONFIG, "")
    if not config and not asked:
        return
    path: Any = outdir
    try:
        if _rank(history) != 0:
            return
        if not config:
            with contextlib.suppress(_Skip):
                path = run_dir_of(history, outdir)
            raise _Skip(_NO_CONFIG.format(how="empty" if ENV_CONFIG in os.environ else "not set"))
        path = run_dir = run_dir_of(history, outdir)
        _export(history, run_dir, config)
    except Exception as e:  # see the module docstring for what is let through and why
        if isinstance(e, _Skip):
            msg = str(e)
        elif isinstance(e, AmscError):  # already says what to do
            msg = e.render(spelling)
            if any(o.name not in ENV_OF for o in e.options()):  # only a by-hand export has it
                msg += " (when exporting by hand: ezpz-amsc RUN_DIR --config LABEL ...)"
        else:
            msg = _text_of(e)
        msg = " ".join(line.strip() for line in msg.splitlines())  # one line
        # The directory once: not again when the message starts with it (or a file in it).
        named = path is None or about(path, msg) == msg
        log.warning("ezpz-amsc: no row written%s: %s", "" if named else f" for {path}", msg)


def _text_of(e: Exception) -> str:
    """``Type: message`` of an unexpected exception; its type alone if its ``__str__`` fails."""
    try:
        text = str(e)
    except Exception:  # a broken __str__ must not escape into the training job
        text = ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def install() -> bool:
    """Run :func:`finalize_hook` after every ``ezpz.history.History.finalize()``.

    For ezpz releases that do not call ``ezpz.finalize`` hooks themselves.
    Returns True when the real ezpz History is (now) wrapped; False, touching
    nothing but one warning line that says why, when ezpz is not installed, is the
    unrelated PyPI namesake, or its history module cannot be imported.
    Calling it again is harmless: the method is wrapped once.
    """
    from ezpz_amsc._ezpz import find_history

    cls, why = find_history()
    if cls is None:
        why = " ".join(line.strip() for line in why.splitlines())  # one line
        log.warning("ezpz-amsc: install() wrapped nothing, so no row will be written at the "
                    "end of training: %s", why)
        return False
    wrap_finalize(cls)
    return True


def wrap_finalize(cls: type) -> None:
    """Wrap ``cls.finalize`` once, keeping its signature and return value."""
    original = cls.finalize  # type: ignore[attr-defined]
    if getattr(original, _WRAPPED_ATTR, False):
        return
    try:
        sig: inspect.Signature | None = inspect.signature(original)
    except (TypeError, ValueError):
        sig = None

    @functools.wraps(original)
    def finalize(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        outdir = None
        if sig is not None:
            with contextlib.suppress(TypeError):  # the original accepted these arguments
                outdir = sig.bind(self, *args, **kwargs).arguments.get("outdir")
        finalize_hook(self, outdir, asked=True)
        return result

    setattr(finalize, _WRAPPED_ATTR, True)
    cls.finalize = finalize  # type: ignore[attr-defined]
