"""Who may read or write a file, in words: owner, group, mode, and the ``chmod`` that fixes it."""

from __future__ import annotations

import grp
import os
import pwd
import stat
from pathlib import Path

from ezpz_amsc.errors import AmscError
from ezpz_amsc.text import Text

_SHIFT = {"owner": 6, "group": 3, "others": 0}
_BIT = {"r": 4, "w": 2, "x": 1}
_WORD = {"r": "readable", "w": "writable", "x": "searchable"}


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


def read_only_folder(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` is on a file system mounted read-only (nothing can be created in it,
    whatever its mode says)."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def describe(st: os.stat_result) -> str:
    """``owner alice, group proj, mode 0664`` for a stat result."""
    return (f"owner {_user_name(st.st_uid)}, group {group_name(st.st_gid)}, "
            f"mode {stat.S_IMODE(st.st_mode):04o}")


def group_has_others(gid: int, owner_uid: int) -> bool:
    """Whether anyone but the owner may be in group ``gid``.

    False only for the owner's personal group: named like the owner and listing
    no other member (most Linux systems give each user one). A group that
    cannot be looked up, or lists no members by name (a directory service may
    not), counts as shared: better a note too many than a teammate locked out.
    """
    owner = _user_name(owner_uid)
    try:
        group = grp.getgrgid(gid)
    except (KeyError, OverflowError):
        return True
    return group.gr_name != owner or any(member != owner for member in group.gr_mem)


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


# What a results file's planted link could do, and what to do about it.
_FOR_ROWS = ("a link another user made could send your rows anywhere you may write. Append "
             "to the file itself, or have the link's owner remove it")


def planted_symlink(path: str | os.PathLike[str], why: Text = _FOR_ROWS) -> AmscError | None:
    """The refusal of a symlink at ``path`` that another user may have planted; else None.

    The kernel's ``protected_symlinks`` rule, applied to a path this tool writes to: a
    symlink in a folder others may write (sticky, group- or world-writable) is followed
    only when it belongs to this user or to the folder's owner. Otherwise a teammate's
    link would send this user's rows into a file of the teammate's choosing (one of this
    user's own, which the teammate could not write), with "appended" reported. ``why``
    ends the message: the harm and the remedy for what the path is.
    """
    p = os.fspath(path)
    try:
        link = os.lstat(p)
        if not stat.S_ISLNK(link.st_mode):
            return None
        folder = os.stat(os.path.dirname(p) or ".")
        target = os.readlink(p)
    except OSError:
        return None  # nothing there (or nothing to say): the open names the trouble
    shared = stat.S_IMODE(folder.st_mode) & (stat.S_ISVTX | stat.S_IWGRP | stat.S_IWOTH)
    if not shared or link.st_uid in (os.geteuid(), folder.st_uid):
        return None
    shown = target if len(target) <= 200 else f"{target[:200]}..."
    return AmscError(
        f"{p}: a symlink owned by {_user_name(link.st_uid)} (to {shown}) in a folder others "
        f"can write ({describe(folder)}); not following it: " + why)
