"""Files and folders this tool creates, and who may write them (fs/create.py,
fs/access.py): modes under a umask, owners kept, and a results file shared by two
users of one group.

The second-user tests need root (to become ``nobody`` and an unnamed uid in a
subprocess, through ``os.setuid``); CI runs as root. Everything else runs as
any user.
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers import (
    REPO,
    RUNS,
    mode_of,
    names_in,
    parse_csv,
    run_cli,
    umask_of,
)

from ezpz_amsc import hook
from ezpz_amsc.errors import AmscError
from ezpz_amsc.fs.access import group_has_others, planted_symlink
from ezpz_amsc.fs.create import create_file, make_folders
from ezpz_amsc.results.append import append_rows
from ezpz_amsc.results.schema import HEADER

A = RUNS / "fsdp_tp-2rank"
B = RUNS / "fsdp_tp-1rank-launch"


IS_ROOT = os.geteuid() == 0


needs_root = pytest.mark.skipif(
    not IS_ROOT, reason="not running as root: acting as a second user (os.setuid to nobody) "
                        "and giving folders another group need root; CI runs as root")


NOBODY = 65534


OTHER_UID = 40123  # a second non-root user with no passwd entry: shown by number

ROW = ["2026-08-11T17:11:17Z", "Aurora", "c", "1", "12", "pass", "1.000", "", "", "", "", "",
       "10", ""]


@pytest.fixture(params=[0o002, 0o022], ids=["umask002", "umask022"])
def umask(request):
    with umask_of(request.param) as mask:
        yield mask


# ------------------------------------------------------ modes of what the tool creates


def test_new_results_file_and_folders_follow_the_umask(tmp_path, umask):
    out = tmp_path / "results" / "perlmutter" / "runs.csv"
    assert run_cli(A, "--config", "a", "--append", out).exit_code == 0
    assert mode_of(out) == 0o666 & ~umask
    assert mode_of(out.parent) == mode_of(out.parent.parent) == 0o777 & ~umask
    assert names_in(out.parent) == ["runs.csv"]


def test_new_file_and_folder_from_create_file_follow_the_umask(tmp_path, umask):
    # create_file is what every other file the tool writes goes through
    # (the hook's amsc.csv now, provenance records later).
    record = tmp_path / "provenance" / "2026" / "run.json"
    create_file(record, b'{"a": 1}\n')
    assert record.read_bytes() == b'{"a": 1}\n'
    assert mode_of(record) == 0o666 & ~umask
    assert mode_of(record.parent) == mode_of(record.parent.parent) == 0o777 & ~umask
    assert names_in(record.parent) == ["run.json"]  # no temporary file left


def test_hook_row_file_follows_the_umask(fixture_run, monkeypatch, umask):
    run = fixture_run(B.name)
    monkeypatch.setenv("EZPZ_AMSC_CONFIG", "c")
    monkeypatch.delenv("EZPZ_AMSC_APPEND", raising=False)
    for name in ("RANK", "PMI_RANK", "OMPI_COMM_WORLD_RANK"):
        monkeypatch.delenv(name, raising=False)
    hook.finalize_hook(object(), run)
    assert mode_of(run / "amsc.csv") == 0o666 & ~umask
    assert len(parse_csv((run / "amsc.csv").read_text())) == 1


def test_create_file_replaces_only_when_asked(tmp_path):
    p = tmp_path / "run.json"
    create_file(p, b"one\n")
    with pytest.raises(AmscError, match=f"^{p}: already exists; not replacing it$"):
        create_file(p, b"two\n")
    assert p.read_bytes() == b"one\n"
    create_file(p, b"three\n", replace=True)
    assert p.read_bytes() == b"three\n"
    assert names_in(tmp_path) == ["run.json"]


def test_create_file_that_fails_leaves_no_file_and_no_folder(tmp_path, monkeypatch):
    real_write = os.write

    def full(fd, data):
        real_write(fd, data[:1])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(AmscError, match="run.json: cannot write: No space left on device$"):
        create_file(tmp_path / "new" / "deeper" / "run.json", b"{}\n")
    assert names_in(tmp_path) == []


def test_make_folders_returns_only_what_it_made(tmp_path):
    (tmp_path / "a").mkdir()
    deep = tmp_path / "a" / "b" / "c"
    assert make_folders(deep) == [deep.parent, deep]
    assert make_folders(deep) == []


def test_make_folders_makes_again_a_folder_a_failed_writer_took_back(tmp_path, monkeypatch):
    """Regression: another writer's rmdir of a folder it made (empty, its append failed)
    between our mkdir of it and of the folder below failed a valid append."""
    real, calls = os.mkdir, []

    def mkdir(path, mode=0o777):
        calls.append(Path(path))
        if Path(path) == tmp_path / "a" / "b" and calls.count(Path(path)) == 1:
            os.rmdir(tmp_path / "a")  # the failed writer takes back "a" just now
        real(path, mode)

    monkeypatch.setattr(os, "mkdir", mkdir)
    deep = tmp_path / "a" / "b"
    assert make_folders(deep) == [tmp_path / "a", deep]
    assert deep.is_dir()
    assert calls == [tmp_path / "a", deep, tmp_path / "a", deep]


def test_create_file_makes_again_the_folder_taken_back_before_it_could_create(tmp_path,
                                                                             monkeypatch):
    real, opened = os.open, []

    def open_(path, flags, *a, **kw):
        if str(path).endswith(".tmp") and not opened:
            opened.append(path)
            os.rmdir(tmp_path / "new")  # taken back between the mkdir and the create
        return real(path, flags, *a, **kw)

    monkeypatch.setattr(os, "open", open_)
    create_file(tmp_path / "new" / "run.json", b"{}\n")
    assert (tmp_path / "new" / "run.json").read_bytes() == b"{}\n"
    assert names_in(tmp_path / "new") == ["run.json"]


def test_folders_made_again_for_ever_are_given_up(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "mkdir", lambda path, mode=0o777: (_ for _ in ()).throw(
        FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))))
    with pytest.raises(AmscError) as e:
        make_folders(tmp_path / "a" / "b")
    assert str(e.value) == (f"{tmp_path / 'a' / 'b'}: its folders were removed 100 times while "
                            "making them; is another program removing them?")


def test_a_folder_taken_back_for_ever_under_create_file_is_given_up(tmp_path, monkeypatch):
    real = os.open

    def vanished(path, flags, *a, **kw):
        if str(path).endswith(".tmp"):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT))
        return real(path, flags, *a, **kw)

    monkeypatch.setattr(os, "open", vanished)
    with pytest.raises(AmscError) as e:
        create_file(tmp_path / "new" / "run.json", b"{}\n")
    assert str(e.value) == (f"{tmp_path / 'new'}: removed 100 times while creating run.json in "
                            "it; is another program removing it?")


def test_create_file_without_parents_needs_the_folder(tmp_path):
    with pytest.raises(AmscError) as e:
        create_file(tmp_path / "missing" / "run.json", b"{}\n", parents=False)
    assert str(e.value) == (f"{tmp_path / 'missing' / 'run.json'}: cannot write: No such file "
                            "or directory")
    assert names_in(tmp_path) == []


def test_a_folder_that_cannot_be_looked_at_is_not_read_only(tmp_path):
    from ezpz_amsc.fs.access import read_only_folder

    assert read_only_folder(tmp_path) is False
    assert read_only_folder(tmp_path / "missing") is False


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o664, 0o660])
def test_append_keeps_mode_owner_and_group(tmp_path, mode):
    out = tmp_path / "runs.csv"
    out.write_text(",".join(HEADER) + "\n")
    os.chmod(out, mode)
    if IS_ROOT:
        os.chown(out, OTHER_UID, NOBODY)
    before = os.stat(out)
    with umask_of(0o077):  # a writer's umask has no say over a file that exists
        assert run_cli(A, "--config", "a", "--append", out).exit_code == 0
    after = os.stat(out)
    assert (after.st_mode, after.st_uid, after.st_gid) == (before.st_mode, before.st_uid,
                                                          before.st_gid)
    assert after.st_ino == before.st_ino  # appended in place, not replaced
    assert [r["config"] for r in parse_csv(out.read_text())] == ["a"]


# -------------------------------------------------------------- two users of one group


@pytest.fixture
def team_folder():
    """A setgid folder owned by root and nobody's group, reachable by nobody.

    pytest's own tmp_path sits in a folder only root may enter.
    """
    top = Path(tempfile.mkdtemp(prefix="ezpz-amsc-team-"))
    top.chmod(0o755)
    folder = top / "results"
    folder.mkdir()
    os.chown(folder, 0, NOBODY)
    folder.chmod(0o2775)
    yield folder
    shutil.rmtree(top)


# The child imports everything the export needs while it can still read the
# interpreter's files (they may sit in root's home), warms the lazy imports
# with one export to nowhere, then becomes the second user and runs the CLI.
AS_USER = r"""
import codecs, contextlib, difflib, io, os, sys  # noqa: F401 (difflib: the error hint)
from ezpz_amsc.cli.group import main
from ezpz_amsc.results import validate as check
from ezpz_amsc.flow import export
from ezpz_amsc.fs import create as files
from ezpz_amsc.results import append as sink  # noqa: F401
codecs.lookup("utf-8-sig")
uid, gid, umask, run_dir = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3], 8), sys.argv[4]
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()), \
        contextlib.suppress(SystemExit):
    main([run_dir, "--config", "warm-up"])
os.setgroups([gid])
os.setgid(gid)
os.setuid(uid)
os.umask(umask)
assert os.geteuid() == uid and os.getuid() == uid
main([run_dir, *sys.argv[5:]])
"""


def as_user(uid: int, umask: int, run_dir: Path, *args: object, gid: int = NOBODY):
    # The second user reads a copy of the run in a folder anyone may enter: the checkout
    # itself may sit below a folder only root can search (a fresh clone in mktemp -d).
    top = Path(tempfile.mkdtemp(prefix="ezpz-amsc-run-"))
    try:
        top.chmod(0o755)
        run = shutil.copytree(run_dir, top / run_dir.name)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        return subprocess.run([sys.executable, "-c", AS_USER, str(uid), str(gid), f"{umask:o}",
                               str(run), *map(str, args)],
                              env=env, capture_output=True, text=True, timeout=120)
    finally:
        shutil.rmtree(top)


@pytest.mark.slow
@needs_root
@pytest.mark.parametrize("first", ["root", "uid-40123"])
def test_a_teammate_appends_to_a_file_another_user_created(team_folder, first):
    out = team_folder / "runs.csv"
    if first == "root":
        with umask_of(0o002):
            assert run_cli(A, "--config", "a", "--append", out).exit_code == 0
    else:
        r = as_user(OTHER_UID, 0o002, A, "--config", "a", "--append", out)
        assert r.returncode == 0, r.stderr
    st = os.stat(out)
    assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (
        0 if first == "root" else OTHER_UID, NOBODY, 0o664)

    r = as_user(NOBODY, 0o002, B, "--config", "b", "--append", out)
    assert r.returncode == 0, r.stderr
    assert r.stdout == ""
    assert [x["config"] for x in parse_csv(out.read_text())] == ["a", "b"]
    assert out.read_text().count("timestamp,system") == 1
    after = os.stat(out)
    assert (after.st_uid, after.st_gid, after.st_mode) == (st.st_uid, st.st_gid, st.st_mode)
    assert names_in(team_folder) == ["runs.csv"]


@pytest.mark.slow
@needs_root
def test_a_teammate_creates_a_folder_the_others_can_use(team_folder):
    out = team_folder / "perlmutter" / "runs.csv"
    r = as_user(OTHER_UID, 0o002, A, "--config", "a", "--append", out)
    assert r.returncode == 0, r.stderr
    sub = os.stat(out.parent)
    assert (sub.st_uid, sub.st_gid, stat.S_IMODE(sub.st_mode)) == (OTHER_UID, NOBODY, 0o2775)
    r = as_user(NOBODY, 0o002, B, "--config", "b", "--append", out.parent / "other.csv")
    assert r.returncode == 0, r.stderr
    assert names_in(out.parent) == ["other.csv", "runs.csv"]


@pytest.mark.slow
@needs_root
def test_a_teammate_needs_no_write_permission_on_the_folder_to_append(team_folder):
    # A results folder only its owner may write (a git checkout, say), holding a
    # group-writable file: appending takes nothing but the file (no lock file).
    out = team_folder / "runs.csv"
    with umask_of(0o002):
        assert run_cli(A, "--config", "a", "--append", out).exit_code == 0
    team_folder.chmod(0o755)
    r = as_user(NOBODY, 0o002, B, "--config", "b", "--append", out)
    assert r.returncode == 0, r.stderr
    assert [x["config"] for x in parse_csv(out.read_text())] == ["a", "b"]
    assert names_in(team_folder) == ["runs.csv"]


@pytest.mark.slow
@needs_root
def test_a_user_who_cannot_write_the_file_is_told_why(team_folder):
    out = team_folder / "runs.csv"
    with umask_of(0o022):  # the first user forgot umask 002
        assert run_cli(A, "--config", "a", "--append", out).exit_code == 0
    before = out.read_bytes()
    r = as_user(NOBODY, 0o002, B, "--config", "b", "--append", out)
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.splitlines() == [
        f"error: {out}: not writable by you (nobody): owner root, group nogroup, mode 0644; "
        f"its owner can share it: chmod g+w {out}"]
    assert out.read_bytes() == before
    assert names_in(team_folder) == ["runs.csv"]


@pytest.mark.slow
@needs_root
@pytest.mark.parametrize("case,file_mode,owner,group,expected", [
    ("owner", 0o444, NOBODY, NOBODY, "not writable by you (nobody): owner nobody, group "
                                     "nogroup, mode 0444; to fix: chmod u+w {out}"),
    ("others", 0o664, 0, 0, "not writable by you (nobody): owner root, group root, mode 0664; "
                            "you are neither its owner nor in its group"),
    ("unreadable", 0o620, 0, NOBODY, "not readable by you (nobody): owner root, group "
                                     "nogroup, mode 0620; its owner can share it: "
                                     "chmod g+r {out}"),
])
def test_refusal_names_owner_group_mode_and_the_fix(team_folder, case, file_mode, owner, group,
                                                    expected):
    out = team_folder / "runs.csv"
    out.write_text(",".join(HEADER) + "\n")
    os.chown(out, owner, group)
    out.chmod(file_mode)
    r = as_user(NOBODY, 0o002, B, "--config", "b", "--append", out)
    assert r.stderr.splitlines() == [f"error: {out}: " + expected.format(out=out)]
    assert r.returncode == 1
    assert out.read_text() == ",".join(HEADER) + "\n"


@pytest.mark.slow
@needs_root
def test_a_user_who_cannot_create_in_the_folder_is_told_why(team_folder):
    team_folder.chmod(0o755)  # group may not write
    out = team_folder / "runs.csv"
    r = as_user(NOBODY, 0o002, B, "--config", "b", "--append", out)
    assert r.returncode == 1
    assert r.stderr.splitlines() == [
        f"error: {team_folder}: cannot create runs.csv there: not writable by you (nobody): "
        f"owner root, group nogroup, mode 0755; its owner can share it: chmod g+w {team_folder}"]
    assert names_in(team_folder) == []


@needs_root
def test_the_append_itself_gives_the_same_reasons_as_the_pre_check(team_folder):
    """The CLI checks the target before exporting; the hook goes straight to append_rows."""
    code = (
        "import os, sys\n"
        "from ezpz_amsc.results import append as sink\n"
        "from ezpz_amsc.errors import AmscError\n"
        "os.setgroups([65534]); os.setgid(65534); os.setuid(65534)\n"
        "for target in sys.argv[1:]:\n"
        "    try:\n"
        "        sink.append_rows(target, [['2026-08-11T17:11:17Z', 'x', 'c', '1', '1', 'pass',"
        " '1.000'] + [''] * 7])\n"
        "    except AmscError as e:\n"
        "        print(e.format_message())\n"
    )
    shut = team_folder.parent / "closed"
    shut.mkdir()
    os.chown(shut, 0, NOBODY)
    shut.chmod(0o755)
    out = team_folder / "runs.csv"
    out.write_text(",".join(HEADER) + "\n")
    out.chmod(0o644)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-c", code, str(out), str(shut / "deep" / "runs.csv")],
                       env=env, capture_output=True, text=True, timeout=60)
    assert r.stdout.splitlines() == [
        f"{out}: not writable by you (nobody): owner root, group nogroup, mode 0644; "
        f"its owner can share it: chmod g+w {out}",
        f"{shut}: cannot create folder deep there: not writable by you (nobody): owner root, "
        f"group nogroup, mode 0755; its owner can share it: chmod g+w {shut}",
    ], r.stderr
    assert names_in(shut) == []


# --- files.py: folders, files, and who may write them -----------------------------------------

def _no_passwd_id() -> int:
    """A uid and gid no user or group has: shown by number."""
    import grp
    import pwd

    for n in range(3_999_999_999, 3_999_999_900, -1):
        try:
            pwd.getpwuid(n)
            continue
        except KeyError:
            pass
        try:
            grp.getgrgid(n)
        except KeyError:
            return n
    pytest.skip("no free uid")


def test_a_file_in_the_way_of_a_folder_is_named(tmp_path):
    from ezpz_amsc.errors import AmscError
    from ezpz_amsc.fs.create import make_folders

    (tmp_path / "f").write_text("")
    for target in (None, tmp_path / "f" / "sub" / "runs.csv"):
        with pytest.raises(AmscError) as e:
            make_folders(tmp_path / "f" / "sub", target)
        shown = target or tmp_path / "f" / "sub"
        assert str(e.value) == (f"{tmp_path / 'f'}: exists and is not a folder; "
                                f"cannot create {shown} there")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f"]


def test_a_folder_a_concurrent_writer_made_is_not_ours(tmp_path, monkeypatch):
    import os

    from ezpz_amsc.fs.create import make_folders

    real = os.mkdir

    def racing(path, mode=0o777):
        if os.fspath(path) == os.fspath(tmp_path / "a"):
            real(path, mode)  # the other writer wins ...
            raise FileExistsError(17, "File exists", os.fspath(path))  # ... and we are told
        real(path, mode)

    monkeypatch.setattr(os, "mkdir", racing)
    assert make_folders(tmp_path / "a" / "b") == [tmp_path / "a" / "b"]
    assert (tmp_path / "a" / "b").is_dir()


def test_a_folder_that_cannot_be_made_says_why(tmp_path, monkeypatch):
    import errno
    import os

    from ezpz_amsc.errors import AmscError
    from ezpz_amsc.fs.create import make_folders

    def read_only(path, mode=0o777):
        raise OSError(errno.EROFS, "Read-only file system", os.fspath(path))

    monkeypatch.setattr(os, "mkdir", read_only)
    with pytest.raises(AmscError) as e:
        make_folders(tmp_path / "a")
    assert str(e.value) == f"{tmp_path / 'a'}: cannot create folder: Read-only file system"


def test_the_temporary_file_is_hidden_and_a_stale_one_is_never_written_into(tmp_path,
                                                                           monkeypatch):
    import os

    from ezpz_amsc.errors import AmscError
    from ezpz_amsc.fs.create import create_file

    seen = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (seen.append(sorted(os.listdir(tmp_path))),
                                                 real_fsync(fd)))
    create_file(tmp_path / "runs.csv", b"new\n")
    assert seen == [[f".runs.csv.{os.getpid()}.tmp"]]  # only a hidden name while writing
    assert (tmp_path / "runs.csv").read_bytes() == b"new\n"
    # A temporary file left by a crashed writer with this pid: not opened, not linked.
    stale = tmp_path / f".other.csv.{os.getpid()}.tmp"
    stale.write_bytes(b"a much longer stale content\n")
    with pytest.raises(AmscError):
        create_file(tmp_path / "other.csv", b"new\n")
    assert not (tmp_path / "other.csv").exists()


def test_creating_over_a_folder_names_the_folder_whatever_failed(tmp_path, monkeypatch):
    import errno
    import os

    from ezpz_amsc.errors import AmscError
    from ezpz_amsc.fs.create import create_file

    (tmp_path / "d").mkdir()

    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "open", refused)
    with pytest.raises(AmscError) as e:
        create_file(tmp_path / "d", b"x", replace=True)
    assert str(e.value) == f"{tmp_path / 'd'}: is a directory; cannot write a file there"


def test_creating_in_a_folder_that_refuses_names_the_folder_and_its_mode(tmp_path, monkeypatch):
    import errno
    import os

    from ezpz_amsc.errors import AmscError
    from ezpz_amsc.fs.access import describe
    from ezpz_amsc.fs.create import create_file

    tmp_path.chmod(0o755)

    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(os, "open", refused)
    with pytest.raises(AmscError) as e:
        create_file(tmp_path / "runs.csv", b"x")
    me = _me()
    assert str(e.value) == (
        f"{tmp_path}: cannot create runs.csv there: not writable by you ({me}): "
        f"{describe(os.stat(tmp_path))}; its mode allows it, so an ACL or the file server "
        "(root squash, read-only export) refuses")


def _me() -> str:
    import os
    import pwd

    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


@pytest.mark.parametrize("mode,need,words,fix", [
    (0o300, "rw", "readable", "u+r"),  # write and search, no read
    (0o600, "wx", "searchable", "u+x"),
    (0o400, "wx", "writable and searchable", "u+wx"),
])
def test_permission_error_names_what_the_owner_lacks(tmp_path, mode, need, words, fix):
    import os

    from ezpz_amsc.fs.access import describe, permission_error

    p = tmp_path / "x"
    p.mkdir() if "x" in need else p.write_text("")
    p.chmod(mode)
    try:
        msg = str(permission_error(p, need))
        assert msg == (f"{p}: not {words} by you ({_me()}): {describe(os.stat(p))}; "
                       f"to fix: chmod {fix} {p}")
    finally:
        p.chmod(0o700)


def test_permission_error_for_a_need_without_write_names_its_first_letter(tmp_path):
    from ezpz_amsc.fs.access import permission_error

    p = tmp_path / "x"
    p.write_text("")
    p.chmod(0o644)
    assert str(permission_error(p, "r")).startswith(f"{p}: not readable by you")


def test_permission_error_on_what_cannot_even_be_seen(tmp_path):
    from ezpz_amsc.fs.access import permission_error

    gone = tmp_path / "gone"
    assert str(permission_error(gone, "rw")) == f"{gone}: permission denied"
    assert str(permission_error(gone, "wx", "cannot create x there")) == (
        f"{gone}: cannot create x there: permission denied")


def test_owner_and_group_without_a_name_are_shown_by_number():
    import os

    from ezpz_amsc.fs.access import describe

    n = _no_passwd_id()
    st = os.stat_result((0o100640, 0, 0, 1, n, n, 0, 0, 0, 0))
    assert describe(st) == f"owner {n}, group {n}, mode 0640"


def test_a_file_of_my_group_but_not_mine_is_judged_by_its_group_bits(tmp_path, monkeypatch):
    import os

    from ezpz_amsc.fs.access import describe, permission_error

    p = tmp_path / "runs.csv"
    p.write_text("")
    p.chmod(0o640)
    n = _no_passwd_id()
    st = os.stat(p)
    monkeypatch.setattr(os, "geteuid", lambda: n)  # someone else, of the file's group ...
    monkeypatch.setattr(os, "getegid", lambda: st.st_gid)
    monkeypatch.setattr(os, "getgroups", lambda: [])  # ... as their primary group only
    assert str(permission_error(p, "rw")) == (
        f"{p}: not writable by you ({n}): {describe(st)}; its owner can share it: "
        f"chmod g+w {p}")


@pytest.mark.slow
@needs_root
def test_a_run_below_a_folder_you_may_not_search_is_one_error_line(tmp_path, team_folder):
    hidden = tmp_path / "private"
    hidden.mkdir(mode=0o700)
    run = shutil.copytree(A, hidden / "run")
    out = team_folder / "runs.csv"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    r = subprocess.run([sys.executable, "-c", AS_USER, str(NOBODY), str(NOBODY), "2", str(run),
                        "--config", "b", "--append", str(out)],
                       env=env, capture_output=True, text=True, timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (
        1, "", f"error: {run}: Permission denied (check its permissions and those of the folders "
           "above it)\n")
    assert names_in(team_folder) == []


# ------------------------------------------------------- who else may be in a group


def _group(monkeypatch, name: str, members: list[str]) -> None:
    monkeypatch.setattr("ezpz_amsc.fs.access.grp.getgrgid",
                        lambda gid: grp.struct_group((name, "x", gid, members)))


@pytest.mark.parametrize("name, members, shared", [
    ("OWNER", [], False),              # the owner's personal group
    ("OWNER", ["OWNER"], False),       # listing only the owner
    ("OWNER", ["OWNER", "bob"], True),  # someone else in it
    ("proj", [], True),                # named otherwise: members may not be listed by name
    ("proj", ["bob"], True),
])
def test_a_group_has_others_unless_it_is_the_owners_own(monkeypatch, name, members, shared):
    owner = pwd.getpwuid(os.geteuid()).pw_name
    _group(monkeypatch, name.replace("OWNER", owner), [m.replace("OWNER", owner) for m in members])
    assert group_has_others(4242, os.geteuid()) is shared


def test_a_group_that_cannot_be_looked_up_counts_as_shared(monkeypatch):
    def unknown(gid):
        raise KeyError(gid)

    monkeypatch.setattr("ezpz_amsc.fs.access.grp.getgrgid", unknown)
    assert group_has_others(4242, os.geteuid()) is True


@pytest.mark.parametrize("gid", [4_242_424, 2**70])  # no such group; no such id at all
def test_a_group_id_with_no_group_counts_as_shared(gid):
    assert group_has_others(gid, os.geteuid()) is True


# ------------------------------------------------- a symlink another user planted (access.py)


def _link(folder: Path, target: Path, owner: int, mode: int) -> Path:
    folder.mkdir(exist_ok=True)
    folder.chmod(mode)
    link = folder / "runs.csv"
    link.symlink_to(target)
    os.lchown(link, owner, -1)
    return link


@needs_root
@pytest.mark.parametrize("mode", [0o1777, 0o2775, 0o777], ids=["sticky", "group", "world"])
def test_a_symlink_another_user_planted_in_a_shared_folder_is_refused(tmp_path, mode):
    target = tmp_path / "private.csv"
    target.write_text("mine\n")
    link = _link(tmp_path / "shared", target, NOBODY, mode)
    refusal = planted_symlink(link)
    assert refusal is not None
    folder = f"owner root, group root, mode {mode:04o}"
    assert str(refusal) == (
        f"{link}: a symlink owned by nobody (to {target}) in a folder others can write "
        f"({folder}); not following it: a link another user made could send your rows "
        "anywhere you may write. Append to the file itself, or have the link's owner remove it")
    with pytest.raises(AmscError) as e:  # the hook's way in: no pre-check before it
        append_rows(link, [ROW])
    assert str(e.value) == str(refusal)
    r = run_cli(A, "--config", "a", "--append", link)
    assert (r.exit_code, r.stdout) == (1, "")
    assert r.stderr == f"error: {refusal}\n"
    assert target.read_text() == "mine\n"


@needs_root
@pytest.mark.parametrize("length", [200, 201])  # whole; cut to 200 characters and "..."
def test_a_planted_links_target_is_shown_up_to_200_characters(tmp_path, length):
    target = "/" + "t" * (length - 1)  # need not exist: the link is refused unfollowed
    link = _link(tmp_path / "shared", Path(target), NOBODY, 0o1777)
    refusal = str(planted_symlink(link))
    assert f"(to {target if length == 200 else target[:200] + '...'}) in a folder" in refusal


@needs_root
@pytest.mark.parametrize("owner, mode, why", [
    (0, 0o1777, "your own link"),
    (NOBODY, 0o755, "a folder only its owner writes: the link is the owner's doing"),
    ("folder", 0o1777, "the folder's owner made it (the kernel's rule too)"),
])
def test_a_symlink_that_is_no_plant_is_followed(tmp_path, owner, mode, why):
    target = tmp_path / "results.csv"
    target.touch()  # an empty file is a new one: the header comes first
    folder = tmp_path / "shared"
    folder.mkdir()
    if owner == "folder":
        os.chown(folder, NOBODY, NOBODY)
        owner = NOBODY
    link = _link(folder, target, owner, mode)
    assert planted_symlink(link) is None, why
    assert append_rows(link, [ROW]).written == [0]
    assert parse_csv(target.read_text())[0]["config"] == "c"


def test_no_symlink_no_refusal(tmp_path):
    assert planted_symlink(tmp_path / "missing.csv") is None
    (tmp_path / "file.csv").write_text("x\n")
    assert planted_symlink(tmp_path / "file.csv") is None
    assert planted_symlink(tmp_path) is None


@needs_root
def test_a_teammates_link_never_sends_a_users_row_into_their_own_private_file(team_folder):
    """Two users: nobody keeps a private results file; a teammate (uid 40123) plants a link to
    it in the team folder. nobody's append through the link is refused, naming the teammate."""
    private = team_folder.parent / "private"
    private.mkdir(mode=0o700)
    os.chown(private, NOBODY, NOBODY)
    mine = private / "thesis.csv"
    mine.write_text(",".join(HEADER) + "\n")
    os.chown(mine, NOBODY, NOBODY)
    link = team_folder / "runs.csv"
    link.symlink_to(mine)
    os.lchown(link, OTHER_UID, NOBODY)
    r = as_user(NOBODY, 0o002, A, "--config", "a", "--append", link)
    assert (r.returncode, r.stdout) == (1, "")
    assert r.stderr == (
        f"error: {link}: a symlink owned by {OTHER_UID} (to {mine}) in a folder others can "
        "write (owner root, group nogroup, mode 2775); not following it: a link another user "
        "made could send your rows anywhere you may write. Append to the file itself, or have "
        "the link's owner remove it\n")
    assert mine.read_text() == ",".join(HEADER) + "\n"
