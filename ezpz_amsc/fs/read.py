"""Reading files: regular files only, and never more than a cap's worth of one in memory.

Everything this tool reads whole or streams (provenance files, ``run_info.json``,
records, metrics files, results files) is opened here first, because a path can
name something that is no file: a FIFO blocks the reader forever, ``/dev/zero``
never ends, and ``/proc/kmsg`` blocks until the kernel logs. A path is looked
at before it is opened (opening some devices has effects), opened with
``O_NONBLOCK`` (so that a FIFO swapped in meanwhile cannot block the open), and
checked again with ``fstat`` on the open descriptor (what was opened is what is
read). Anything but a regular file outside ``/proc`` and ``/sys`` is refused
with :class:`NotRegularFile`, an ``OSError`` whose ``strerror`` says what it is.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO

# Pseudo-files whose stat says "regular file, 0 bytes" while a read blocks or never
# ends: compared by device with these mount points.
_PSEUDO_MOUNTS = ("/proc", "/sys")


class NotRegularFile(OSError):
    """The path names no regular file: ``strerror`` is ``not a regular file (a FIFO)``."""


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a device"), (stat.S_ISBLK, "a device"),
          (stat.S_ISSOCK, "a socket"))


def _kind(st: os.stat_result) -> str | None:
    """What the stat result describes when it is no regular file; None for a regular file.

    (A folder is the caller's to name; ``stat`` follows symlinks, so nothing else is left.)
    """
    kind = next((name for test, name in _KINDS if test(st.st_mode)), None)
    if kind is None and st.st_dev in _pseudo_devices():
        return "a /proc or /sys file"
    return kind


_PSEUDO_DEVICES: set[int] | None = None


def _pseudo_devices() -> set[int]:
    global _PSEUDO_DEVICES
    if _PSEUDO_DEVICES is None:
        found = set()
        for mount in _PSEUDO_MOUNTS:
            try:
                found.add(os.stat(mount).st_dev)
            except OSError:
                continue
        _PSEUDO_DEVICES = found
    return _PSEUDO_DEVICES


def refuse_non_regular(st: os.stat_result, path: str | os.PathLike[str]) -> None:
    """Raise what :func:`open_regular` raises when ``st`` is no regular file outside
    ``/proc`` and ``/sys``: for a path that is opened some other way (for appending)."""
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
    kind = _kind(st)
    if kind is not None:
        raise NotRegularFile(errno.EINVAL, f"not a regular file ({kind})", os.fspath(path))


def open_regular(path: str | os.PathLike[str], dir_fd: int | None = None) -> BinaryIO:
    """``path`` open for reading in binary, if it is a regular file; else ``OSError``.

    Raises :class:`NotRegularFile` for a FIFO, socket, device or ``/proc`` file,
    ``IsADirectoryError`` for a folder, and what ``open`` raises otherwise. The
    file is read through a buffer; ``O_NONBLOCK`` changes nothing for a regular file.
    With ``dir_fd``, ``path`` is a name in that folder, never followed if it is a
    symbolic link (``OSError`` with ``ELOOP``): for folders others can write in.
    """
    follow = dir_fd is None
    st = os.stat(path, dir_fd=dir_fd, follow_symlinks=follow)
    if stat.S_ISLNK(st.st_mode):
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), os.fspath(path))
    refuse_non_regular(st, path)
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY
    fd = os.open(path, flags if follow else flags | os.O_NOFOLLOW, dir_fd=dir_fd)
    try:
        refuse_non_regular(os.fstat(fd), path)  # swapped for something else since the stat
        return open(fd, "rb")  # noqa: SIM115 (the caller closes it)
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: str | os.PathLike[str], cap: int, dir_fd: int | None = None) -> bytes:
    """The file's bytes, at most ``cap + 1`` of them: more than ``cap`` means it is too large.

    Only a regular file is read (:func:`open_regular`, ``dir_fd`` as there); raises
    ``OSError`` as ``open`` and ``read`` do.
    """
    with open_regular(path, dir_fd) as f:
        # read(n) allocates n up front: size the read by the file, not the cap.
        size = os.fstat(f.fileno()).st_size
        return f.read(min(size, cap) + 1)
