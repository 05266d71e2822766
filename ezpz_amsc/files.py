"""Files and folders this tool creates, and who may write them.

Results files are shared: the people of one project append from their own
jobs, in a setgid, group-writable folder, with ``umask 002``. So everything is
created the way ``touch`` and ``mkdir -p`` create it: mode 0666 for files and
0777 for folders, masked by the umask, the group chosen by the folder (setgid).
Nothing here ever changes the mode, owner or group of a file that exists.
"""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import stat
from pathlib import Path

from .errors import AmscError

FILE_MODE = 0o666  # what touch asks for; the umask takes away the rest
FOLDER_MODE = 0o777  # what mkdir asks for
_SHIFT = {"owner": 6, "group": 3, "others": 0}
_BIT = {"r": 4, "w": 2, "x": 1}
_WORD = {"r": "readable", "w": "writable", "x": "searchable"}


def make_folders(folder: Path, target: Path | None = None) -> list[Path]:
    """``mkdir -p folder``; return the folders this call made.

    Only folders this very call created are returned (a concurrent writer may
    make the same ones), so that a caller who ends up writing nothing can take
    back exactly its own. ``target`` is what the folders are for, for messages.
    """
    target = target or folder
    missing = []
    d = folder
    while not os.path.isdir(d) and d != d.parent:
        missing.append(d)
        d = d.parent
    made: list[Path] = []
    for d in reversed(missing):
        try:
            os.mkdir(d, FOLDER_MODE)
        except FileExistsError:
            if not os.path.isdir(d):
                raise not_a_folder(target) from None
            continue  # made by a concurrent writer
        except NotADirectoryError:
            raise not_a_folder(target) from None
        except PermissionError:
            raise permission_error(d.parent, "wx", f"cannot create folder {d.name} there") from None
        except OSError as e:
            raise AmscError(f"{d}: cannot create folder: {e.strerror or e}") from None
        made.append(d)
    return made


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


def create_file(path: str | os.PathLike[str], data: bytes, *, replace: bool = False) -> None:
    """Write a new file whole, as ``touch`` would create it (0666 masked by the umask).

    Missing folders are made as ``mkdir -p`` would. The bytes go to a hidden
    temporary file in the same folder, are fsynced, then take the file's name
    in one step, so no reader ever sees half a file. An existing file is
    replaced only with ``replace``; otherwise it is an error and left alone.
    On any failure nothing is left behind: no temporary file, no new folder.
    """
    p = Path(path)
    made = make_folders(p.parent, p)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
        try:
            write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        if replace:
            os.replace(tmp, p)
        else:
            os.link(tmp, p)  # refuses an existing name, unlike a rename
            os.unlink(tmp)
    except BaseException as e:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if not p.exists():
            remove_folders(made)
        if isinstance(e, OSError):
            raise _create_error(p, e) from None
        raise


def _create_error(p: Path, e: OSError) -> AmscError:
    if isinstance(e, FileExistsError):
        return AmscError(f"{p}: already exists; not replacing it")
    if isinstance(e, IsADirectoryError) or p.is_dir():
        return AmscError(f"{p}: is a directory; cannot write a file there")
    if isinstance(e, PermissionError):
        return permission_error(p.parent, "wx", f"cannot create {p.name} there")
    return AmscError(f"{p}: cannot write: {e.strerror or e}")


def write_all(fd: int, data: bytes) -> None:
    """``os.write`` until every byte is out (a write may take only part)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def permission_error(path: Path, need: str, doing: str = "") -> AmscError:
    """The one line for a refused access to ``path``: who owns it, its mode, the fix.

    ``need`` is the access the operation needs ("rw" to append to a file, "wx"
    to create in a folder); ``doing`` is what was attempted, when it is not
    plain from ``path`` alone.
    """
    lead = f"{path}: {doing}: " if doing else f"{path}: "
    try:
        st = os.stat(path)
    except OSError:  # not even its owner and mode can be seen
        return AmscError(f"{lead}permission denied")
    mode = stat.S_IMODE(st.st_mode)
    who = _class_of(st)
    lacking = [c for c in need if not mode >> _SHIFT[who] & _BIT[c]]
    words = " and ".join(_WORD[c] for c in lacking or ("w" if "w" in need else need[0]))
    msg = f"{lead}not {words} by you ({_user_name(os.geteuid())}): {describe(st)}"
    if not lacking:
        return AmscError(f"{msg}; its mode allows it, so an ACL or the file server "
                         "(root squash, read-only export) refuses")
    bits = "".join(lacking)
    if who == "owner":
        return AmscError(f"{msg}; to fix: chmod u+{bits} {path}")
    if who == "group":
        return AmscError(f"{msg}; its owner can share it: chmod g+{bits} {path}")
    return AmscError(f"{msg}; you are neither its owner nor in its group")


def describe(st: os.stat_result) -> str:
    """``owner alice, group proj, mode 0664`` for a stat result."""
    return (f"owner {_user_name(st.st_uid)}, group {group_name(st.st_gid)}, "
            f"mode {stat.S_IMODE(st.st_mode):04o}")


def group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except (KeyError, OverflowError):
        return str(gid)


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except (KeyError, OverflowError):
        return str(uid)


def _class_of(st: os.stat_result) -> str:
    """Which permission bits apply to this process: the owner's, the group's or the others'."""
    if st.st_uid == os.geteuid():
        return "owner"
    if st.st_gid == os.getegid() or st.st_gid in os.getgroups():
        return "group"
    return "others"
