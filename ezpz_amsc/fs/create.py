"""Files and folders this tool creates: whole, as touch and mkdir -p would, or not at all.

Results files are shared: the people of one project append from their own
jobs, in a setgid, group-writable folder, with ``umask 002``. So everything is
created the way ``touch`` and ``mkdir -p`` create it: mode 0666 for files and
0777 for folders, masked by the umask, the group chosen by the folder (setgid).
Nothing here ever changes the mode, owner or group of a file that exists.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterable
from pathlib import Path

from ezpz_amsc.errors import AmscError, reason
from ezpz_amsc.fs.access import permission_error, read_only_folder

# The test seams for crashes and races at any instant of a write (:func:`crash_point`).
ENV_CRASH_AT = "EZPZ_AMSC_CRASH_AT"
ENV_PAUSE_AT = "EZPZ_AMSC_PAUSE_AT"
FILE_MODE = 0o666  # what touch asks for; the umask takes away the rest
FOLDER_MODE = 0o777  # what mkdir asks for
# Another writer may take back a folder it made (it failed, and the folder is
# empty) between our making it and our creating a file in it: start again, this often.
_MAX_TRIES = 100
_crashes: dict[str, int] = {}
_paused: set[str] = set()


def crash_point(name: str) -> None:
    """A named instant of a write, where a test can kill or pause this process.

    The test seam for crashes and races at any instant (docs/results-files.md,
    "Crash windows"), driven from outside, so that real processes are tested:

    - ``EZPZ_AMSC_CRASH_AT=NAME`` (or ``NAME:N``, the N-th time this process
      passes ``NAME``): the process sends itself ``SIGKILL`` there, as a job
      killed by its scheduler would be; no cleanup runs.
    - ``EZPZ_AMSC_PAUSE_AT=NAME:FOLDER``: the first time the process passes
      ``NAME``, it creates ``FOLDER/NAME.reached`` and opens the FIFO
      ``FOLDER/NAME.go`` (which the test made) for reading, which blocks until the
      test opens it for writing: another program can act meanwhile.

    Unset (always, outside tests), it costs two look-ups in the environment.
    """
    want = os.environ.get(ENV_CRASH_AT)
    if want:
        point, _, nth = want.partition(":")
        if point == name:
            _crashes[name] = _crashes.get(name, 0) + 1
            if _crashes[name] == (int(nth) if nth.isdigit() else 1):
                os.kill(os.getpid(), signal.SIGKILL)
    pause = os.environ.get(ENV_PAUSE_AT)
    if pause:
        point, _, folder = pause.partition(":")
        if point == name and name not in _paused:
            _paused.add(name)
            Path(folder, f"{name}.reached").touch()
            with open(Path(folder, f"{name}.go"), "rb"):
                pass


def make_folders(folder: Path, target: Path | None = None) -> list[Path]:
    """``mkdir -p folder``; return the folders this call made.

    Only folders this very call created are returned (a concurrent writer may
    make the same ones), so that a caller who ends up writing nothing can take
    back exactly its own. ``target`` is what the folders are for, for messages.
    """
    target = target or folder
    made: list[Path] = []
    for _ in range(_MAX_TRIES):
        missing = []
        d = folder
        while not os.path.isdir(d) and d != d.parent:
            missing.append(d)
            d = d.parent
        if _make(reversed(missing), target, made):
            return list(dict.fromkeys(made))  # a folder made twice (taken back between) once
    raise AmscError(f"{folder}: its folders were removed {_MAX_TRIES} times while making "
                    "them; is another program removing them?")


def _make(folders: Iterable[Path], target: Path, made: list[Path]) -> bool:
    """Make ``folders``, each in the one before; False if one above vanished meanwhile."""
    for d in folders:
        try:
            os.mkdir(d, FOLDER_MODE)
        except FileExistsError:
            if not os.path.isdir(d):
                raise not_a_folder(target) from None
            continue  # made by a concurrent writer
        except FileNotFoundError:
            return False  # a failed writer took back the folder above: make it again
        except NotADirectoryError:
            raise not_a_folder(target) from None
        except PermissionError:
            raise permission_error(d.parent, "wx", f"cannot create folder {d.name} there") from None
        except OSError as e:
            raise AmscError(f"{d}: cannot create folder: {reason(e)}") from None
        made.append(d)
    return True


_EFFECTIVE_IDS = os.access in os.supports_effective_ids  # judge as open() will: euid, egid


def check_can_create(p: Path) -> None:
    """The nearest existing folder above a new file ``p`` must let us create in it."""
    below, folder = p, p.parent
    while not os.path.isdir(folder):
        if os.path.lexists(folder):
            raise not_a_folder(p)
        below, folder = folder, folder.parent
    if not os.access(folder, os.W_OK | os.X_OK, effective_ids=_EFFECTIVE_IDS):
        if read_only_folder(folder):
            raise AmscError(f"{folder}: cannot create {below.name} there: read-only file system")
        raise permission_error(folder, "wx", f"cannot create {below.name} there")


def remove_folders(made: list[Path]) -> None:
    """Take back folders :func:`make_folders` made, deepest first; any still in use stay."""
    for d in sorted(made, key=lambda d: len(d.parts), reverse=True):
        with contextlib.suppress(OSError):
            d.rmdir()


def not_a_folder(target: Path) -> AmscError:
    """``target`` cannot be created because something on its way is not a folder."""
    on_the_way = [*reversed(target.parents), target]
    blocker = next((q for q in on_the_way if q.exists() and not q.is_dir()), target.parent)
    return AmscError(f"{blocker}: exists and is not a folder; cannot create {target} there")


def create_file(path: str | os.PathLike[str], data: bytes, *, replace: bool = False,
                parents: bool = True, what: str = "") -> None:
    """Write a new file whole, as ``touch`` would create it (0666 masked by the umask).

    Missing folders are made as ``mkdir -p`` would (unless not ``parents``:
    then a missing folder is an error). The bytes go to a hidden
    temporary file in the same folder, are fsynced, then take the file's name
    in one step, so no reader ever sees half a file. An existing file is
    replaced only with ``replace``; otherwise it is an error and left alone.
    On any failure nothing is left behind: no temporary file, no new folder.
    ``what`` names the file in an error from the file system ("cannot write plot: ...").
    """
    p = Path(path)
    made: list[Path] = []
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        fd = _open_new(tmp, p, made, parents)
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.replace(tmp, p)
        else:
            os.link(tmp, p)  # refuses an existing name, unlike a rename
            crash_point("file-linked")
            os.unlink(tmp)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if not p.exists():
            remove_folders(made)
        if isinstance(e, OSError):
            raise _create_error(p, e, what) from None
        raise


def _open_new(tmp: Path, p: Path, made: list[Path], parents: bool) -> int:
    """``tmp`` created for writing, its folders made first (and again, if a failed writer
    took them back meanwhile)."""
    for _ in range(_MAX_TRIES):
        if parents:
            made.extend(make_folders(p.parent, p))
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
        except FileNotFoundError:
            if not parents:
                raise
    raise AmscError(f"{p.parent}: removed {_MAX_TRIES} times while creating {p.name} in it; "
                    "is another program removing it?")


def _create_error(p: Path, e: OSError, what: str = "") -> AmscError:
    if isinstance(e, FileExistsError):
        return AmscError(f"{p}: already exists; not replacing it")
    if isinstance(e, IsADirectoryError) or p.is_dir():
        return AmscError(f"{p}: is a directory; cannot write a file there")
    if isinstance(e, PermissionError):
        return permission_error(p.parent, "wx", f"cannot create {p.name} there")
    return AmscError(f"{p}: cannot write{' ' + what if what else ''}: {reason(e)}")


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is out (a write may take only part)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
