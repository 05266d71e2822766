"""The records folder (records/folder.py): nothing below it is followed through a symbolic
link someone planted, nothing outside it is written or removed, and pending records need
no folder another writer can take away."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from helpers import HEADER, error_line, export_with_records, parse_csv, records_in, run_group

from ezpz_amsc.fs.access import describe
from ezpz_amsc.records import folder as folder_mod
from ezpz_amsc.text import spelled

pytestmark = pytest.mark.usefixtures("clean_hook_env")

RUN = "fsdp_tp-2rank"
SECOND_USER = "ezpz-amsc-test2"


def _victim(where: Path) -> dict[str, bytes]:
    """A folder of someone's files (``~/thesis/*.tex``), to check nothing there is touched."""
    where.mkdir(parents=True)
    files = {f"ch{i}.tex": f"chapter {i}\n".encode() for i in range(3)}
    for name, data in files.items():
        (where / name).write_bytes(data)
    (where / "notes").mkdir()
    return files


def _intact(where: Path, files: dict[str, bytes]) -> None:
    assert sorted(p.name for p in where.iterdir()) == sorted([*files, "notes"])
    for name, data in files.items():
        assert (where / name).read_bytes() == data


def _tag(results: Path) -> str:
    return folder_mod.results_tag(results)


@pytest.mark.parametrize("planted", [".pending-{tag}", ".done-{tag}", ".pending/{tag}",
                                     ".pending/{tag}.done", ".pending"])
def test_a_planted_link_in_the_records_folder_is_refused_never_followed(
        fixture_run, tmp_path, planted):
    """A link where pending records wait, or where the committed ones are cleared away,
    pointing at another folder: the append stops with one line naming the link, and
    not a file of that folder is removed."""
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    files = _victim(tmp_path / "home" / "thesis")
    link = folder / planted.format(tag=_tag(results))
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(tmp_path / "home" / "thesis")
    result = export_with_records([fixture_run(RUN)], results, folder)
    assert result.exit_code == 1
    shown = link
    assert error_line(result) == (
        f"error: {shown}: a symbolic link (to {tmp_path / 'home' / 'thesis'}), not something "
        "ezpz-amsc made; not following it (remove it)")
    _intact(tmp_path / "home" / "thesis", files)
    assert not results.exists() or parse_csv(results.read_text()) == []
    assert records_in(folder) == []
    # check names it too, and still follows nothing
    check = run_group("check", results, "--provenance", folder) if results.exists() else None
    if check is not None and "/" not in planted:
        assert f"{shown}: not a folder ezpz-amsc made" in check.stderr
    _intact(tmp_path / "home" / "thesis", files)


def test_a_planted_link_at_a_record_name_is_neither_followed_nor_replaced(fixture_run,
                                                                          tmp_path):
    """A link where a record will be named: the record is refused (the name is taken), and
    the file it points at is not written."""
    results, folder, run = tmp_path / "res.csv", tmp_path / "records", fixture_run(RUN)
    first = export_with_records([run], tmp_path / "other.csv", tmp_path / "r0")
    assert first.exit_code == 0
    (name,) = [p.name for p in records_in(tmp_path / "r0")]
    target = tmp_path / "victim.txt"
    target.write_text("mine\n")
    folder.mkdir()
    (folder / name).symlink_to(target)
    result = export_with_records([run], results, folder)
    assert result.exit_code == 1
    assert "a record of this run" in error_line(result)
    assert target.read_text() == "mine\n"
    assert [p.name for p in folder.iterdir()] == [name]  # nothing pending left either


def test_a_linked_record_is_reported_not_read(tmp_path):
    folder = tmp_path / "records"
    folder.mkdir()
    (tmp_path / "elsewhere.json").write_text("{}")
    (folder / "r.json").symlink_to(tmp_path / "elsewhere.json")
    assert list(folder_mod.iter_records(folder)) == [
        (folder / "r.json", None,
         f"{folder / 'r.json'}: a symbolic link, not a provenance record; not following it")]


def _killed(run: Path, results: Path, folder: Path, point: str) -> None:
    env = {**os.environ, "EZPZ_AMSC_CRASH_AT": point}
    p = subprocess.run([sys.executable, "-m", "ezpz_amsc", str(run), "--config", "agpt/x",
                        "--append", str(results), "--provenance", str(folder), "-q"],
                       env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == -9, p.stderr


def test_pending_records_wait_in_the_records_folder_itself(fixture_run, tmp_path):
    """Killed after the rows: the pending records are in DIR/.pending-<tag>, no deeper."""
    results, folder, run = tmp_path / "res.csv", tmp_path / "records", fixture_run(RUN)
    _killed(run, results, folder, "rows-written")
    (pending,) = list(folder.iterdir())
    assert pending.name == f".pending-{_tag(results)}"
    assert [p.name.partition("-")[0] for p in pending.iterdir()] == [
        str(len(",".join(HEADER)) + 1)]
    again = export_with_records([run], results, folder, "--skip-existing")
    assert again.exit_code == 0, again.stderr
    assert [p.name for p in folder.iterdir()] == [p.name for p in records_in(folder)]
    assert len(records_in(folder)) == 1


def test_an_older_versions_pending_records_are_finished(fixture_run, tmp_path):
    """DIR/.pending/<tag>/OFFSET-NAME.json, as an older version left it: finished, and the
    old folders removed."""
    run = fixture_run(RUN)
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    assert export_with_records([run], results, folder).exit_code == 0
    (rec,) = records_in(folder)
    old = folder / ".pending" / _tag(results)
    old.mkdir(parents=True)
    offset = len(",".join(HEADER)) + 1
    rec.rename(old / f"{offset}-{rec.name}")
    assert run_group("check", results, "--provenance", folder).exit_code == 1
    again = export_with_records([run], results, folder, "--skip-existing")
    assert again.exit_code == 0, again.stderr
    assert [p.name for p in folder.iterdir()] == [rec.name]
    assert run_group("check", results, "--provenance", folder).exit_code == 0


@pytest.mark.slow
def test_concurrent_writers_never_lose_the_pending_folder(tmp_path):
    """Writers of one results file, one records folder: each takes the lock, makes the
    pending folder, and removes it before releasing the lock, so no writer removes it
    under the next (the bug: 'cannot write: No such file or directory')."""
    run = tmp_path / "run"
    shutil.copytree(Path(__file__).parents[2] / "examples" / "runs" / RUN, run)
    results, folder = tmp_path / "res.csv", tmp_path / "records"
    cmd = [sys.executable, "-m", "ezpz_amsc", str(run), "--append", str(results),
           "--provenance", str(folder), "-q", "--config"]
    with ThreadPoolExecutor(16) as pool:
        done = list(pool.map(lambda i: subprocess.run([*cmd, f"c{i}"], capture_output=True,
                                                      text=True), range(16)))
    assert [(p.returncode, p.stderr) for p in done] == [(0, "")] * 16
    assert len(parse_csv(results.read_text())) == 16 == len(records_in(folder))
    assert sorted(p.name for p in folder.iterdir()) == [p.name for p in records_in(folder)]
    assert run_group("check", results, "--provenance", folder, "-q").exit_code == 0


# --------------------------------------------------------------------- two users


@pytest.fixture
def second_user():
    """A second user (made for the test when running as root), and a shared folder both
    may write in: group-writable, not sticky, as a project's shared results folder is."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create a second user (the link must be another user's)")
    made = False
    try:
        user = pwd.getpwnam(SECOND_USER)
    except KeyError:
        if shutil.which("useradd") is None:
            pytest.skip("no useradd here to create a second user")
        subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/bin/false",
                        SECOND_USER], check=True, capture_output=True)
        user, made = pwd.getpwnam(SECOND_USER), True
    shared = Path(tempfile.mkdtemp())
    shared.chmod(0o777)
    try:
        yield user, shared
    finally:
        shutil.rmtree(shared, ignore_errors=True)
        if made:
            subprocess.run(["userdel", SECOND_USER], capture_output=True)


def _link_as(user: pwd.struct_passwd, target: Path, link: Path) -> None:
    """``ln -s target link`` as ``user`` (a child process that takes the user's ids)."""
    pid = os.fork()
    if pid == 0:  # the child: never back into pytest
        code = 1
        try:
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)
            os.symlink(target, link)
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize("planted", [".pending-{tag}", ".done-{tag}"])
def test_another_users_planted_link_deletes_none_of_my_files(fixture_run, tmp_path, second_user,
                                                            planted):
    """The issue's case: in a shared records folder, another user's link at the pending or
    done folder, pointing at my thesis; my next append removes nothing of it."""
    user, shared = second_user
    results, folder = shared / "runs.csv", shared / "records"
    folder.mkdir()
    folder.chmod(0o777)
    files = _victim(tmp_path / "home" / "thesis")
    link = folder / planted.format(tag=_tag(results))
    _link_as(user, tmp_path / "home" / "thesis", link)
    assert link.lstat().st_uid == user.pw_uid
    result = export_with_records([fixture_run(RUN)], results, folder)
    assert result.exit_code == 1
    assert "a symbolic link" in error_line(result) and str(link) in error_line(result)
    _intact(tmp_path / "home" / "thesis", files)
    with contextlib.suppress(FileNotFoundError):
        assert parse_csv(results.read_text()) == []
    assert json.dumps(sorted(p.name for p in folder.iterdir())) == json.dumps([link.name])


# ------------------------------------------------------------------ in process, by value


def test_leftovers_names_each_thing_a_killed_append_left_and_follows_no_link(tmp_path):
    folder = tmp_path / "records"
    (folder / ".pending-aa").mkdir(parents=True)
    (folder / ".pending-aa" / "12-r.json").write_text("{}")
    (folder / ".done-bb").mkdir()
    (folder / ".done-bb" / "7-s.json").write_text("{}")
    (folder / ".pending" / "cc").mkdir(parents=True)
    (folder / ".pending" / "cc" / "3-t.json").write_text("{}")
    (folder / ".r.json.99.tmp").write_text("{")
    (folder / "kept.json").write_text("{}")
    (tmp_path / "thesis").mkdir()
    (tmp_path / "thesis" / "ch1.tex").write_text("x")
    (folder / ".pending-dd").symlink_to(tmp_path / "thesis")
    (folder / ".done-ee").write_text("a file")
    shown = f"--provenance {folder}"
    assert [spelled(line) for line in folder_mod.leftovers(folder)] == [
        f"{folder / '.r.json.99.tmp'}: a temporary file of a record write that was killed; "
        "remove it",
        *(f"{folder / p}: left by an interrupted append; the next append to its results file "
          f"with {shown} finishes or removes it"
          for p in (".done-bb/7-s.json", ".pending/cc/3-t.json", ".pending-aa/12-r.json")),
        *(f"{folder / p}: not a folder ezpz-amsc made (a symbolic link or a file); an append "
          f"with {shown} refuses to follow it; remove it" for p in (".done-ee", ".pending-dd")),
    ]
    assert folder_mod.leftovers(tmp_path / "none") == []


class _Runs:
    """A results file's rows by offset, as RunsInFile.row_at gives them."""

    def __init__(self, rows: dict[int, list[str]]) -> None:
        self.rows, self.asked = rows, []

    def row_at(self, offset: int) -> list[str] | None:
        self.asked.append(offset)
        return self.rows.get(offset)


def test_a_pending_record_is_in_the_file_only_at_the_offset_its_name_gives():
    runs = _Runs({10: ["a"], 20: ["b"]})
    assert folder_mod._in_file(runs, ["a"], "10-x.json") is True
    assert folder_mod._in_file(runs, ["a"], "20-x.json") is False
    assert folder_mod._in_file(runs, ["a"], "x-10.json") is False
    assert folder_mod._in_file(runs, ["a"], "1" * 20 + "-x.json") is False  # never read there
    assert folder_mod._in_file(runs, ["a"], "1" * 19 + "-x.json") is False
    assert runs.asked == [10, 20, int("1" * 19)]


def test_a_record_takes_its_name_or_the_next_free_one(tmp_path):
    root = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        (tmp_path / "p").write_text("mine")
        pending = folder_mod._Waiting(root, "p", "r.json")
        assert folder_mod._link(pending, root) == "r.json"
        assert folder_mod._link(pending, root) == "r.json"  # given before a crash: the same
        (tmp_path / "q").write_text("another")
        other = folder_mod._Waiting(root, "q", "r.json")
        assert folder_mod._link(other, root) == "r-2.json"
        (tmp_path / "r-3.json").symlink_to(tmp_path / "elsewhere")
        (tmp_path / "s").write_text("third")
        assert folder_mod._link(folder_mod._Waiting(root, "s", "r.json"), root) == "r-4.json"
        assert (tmp_path / "r-2.json").read_text() == "another"
        assert not (tmp_path / "elsewhere").exists()
    finally:
        os.close(root)


def test_clearing_a_folder_removes_links_in_it_as_links(tmp_path):
    files = _victim(tmp_path / "thesis")
    done = tmp_path / "records" / ".done-x"
    done.mkdir(parents=True)
    (done / "a.json").write_text("{}")
    (done / "to-thesis").symlink_to(tmp_path / "thesis")
    (done / "ch0.tex").symlink_to(tmp_path / "thesis" / "ch0.tex")
    root = os.open(tmp_path / "records", os.O_RDONLY | os.O_DIRECTORY)
    try:
        folder_mod._clear(root, ".done-x", done)
        folder_mod._clear(root, ".done-x", done)  # gone: nothing to do
    finally:
        os.close(root)
    assert list((tmp_path / "records").iterdir()) == []
    _intact(tmp_path / "thesis", files)


def test_a_records_folder_that_is_another_users_link_is_refused(fixture_run, tmp_path,
                                                                second_user):
    """``shared/records`` planted by another user as a link to my folder: not followed (my
    own link, or root's, is followed as given)."""
    user, shared = second_user
    mine = tmp_path / "mine"
    mine.mkdir()
    link = shared / "records"
    _link_as(user, mine, link)
    result = export_with_records([fixture_run(RUN)], shared / "runs.csv", link)
    folder = describe(os.stat(shared))
    assert error_line(result) == (
        f"error: {link}: a symlink owned by {user.pw_name} (to {mine}) in a folder others can "
        f"write ({folder}); not following it: a link another user made could send your "
        "records anywhere you may write; give --provenance the folder itself")
    assert list(mine.iterdir()) == [] and not (shared / "runs.csv").exists()
    own = shared / "own"
    own.symlink_to(mine)
    assert export_with_records([fixture_run("minimal-1rank")], shared / "runs.csv",
                               own).exit_code == 0
    assert len(records_in(mine)) == 1


# --- a name swapped for a link between two steps: the link is named, never its target ---

def _thesis(tmp_path: Path) -> Path:
    victim = tmp_path / "thesis.tex"
    victim.write_text("years of work\n")
    return victim


def test_a_temporary_record_swapped_for_a_link_before_it_is_named_names_the_link(
        tmp_path, monkeypatch):
    """A teammate who can write in the shared folder replaces the temporary file with a
    link after it was written and before it takes its name: the name is given to the
    link itself, and the file it points to gets no second name in the records folder."""
    victim, pend = _thesis(tmp_path), tmp_path / "pending"
    pend.mkdir()
    real_fsync = os.fsync

    def fsync_then_swap(fd):
        real_fsync(fd)
        (tmp_name,) = [n for n in os.listdir(pend) if n.endswith(".tmp")]
        os.unlink(pend / tmp_name)
        os.symlink(victim, pend / tmp_name)

    monkeypatch.setattr(os, "fsync", fsync_then_swap)
    dir_fd = os.open(pend, os.O_RDONLY | os.O_DIRECTORY)
    try:
        folder_mod._write_new(dir_fd, "7-run.json", b"{}")
    finally:
        os.close(dir_fd)
    assert (pend / "7-run.json").is_symlink()
    assert os.stat(victim).st_nlink == 1
    assert sorted(os.listdir(pend)) == ["7-run.json"]


@pytest.mark.parametrize("planted", ["pending is a link", "final is a link to it",
                                     "final is the link's target"])
def test_naming_a_pending_record_never_follows_a_link(tmp_path, planted):
    """_link gives the pending record its final name in the records folder. A link in
    either place is named or compared as the link it is: a planted name is never taken
    for the record's own (which would leave the record nameless once the pending one
    is cleared), and a planted target never gets the record's name."""
    victim, root, pend = _thesis(tmp_path), tmp_path / "records", tmp_path / "records/.p"
    pend.mkdir(parents=True)
    final = "2026-run.json"
    if planted == "pending is a link":
        os.symlink(victim, pend / "9-x")
    else:
        (pend / "9-x").write_text("{}")
    if planted == "final is a link to it":
        os.symlink(pend / "9-x", root / final)
    elif planted == "final is the link's target":
        os.symlink(victim, pend / "9-x.tmp")
        os.replace(pend / "9-x.tmp", pend / "9-x")
        os.link(victim, root / final)
    root_fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    pend_fd = os.open(pend, os.O_RDONLY | os.O_DIRECTORY)
    try:
        named = folder_mod._link(folder_mod._Waiting(pend_fd, "9-x", final), root_fd)
    finally:
        os.close(pend_fd)
        os.close(root_fd)
    if planted == "pending is a link":
        assert named == final
        assert (root / final).is_symlink()  # the link itself, not thesis.tex, has the name
        assert os.stat(victim).st_nlink == 1
    else:
        assert named == "2026-run-2.json"  # the planted name is not the record's
        assert os.lstat(root / named).st_ino == os.lstat(pend / "9-x").st_ino


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_an_append_with_records_leaves_no_folder_open(fixture_run, tmp_path):
    """The end-of-training hook appends from inside a long training process: every folder
    the records are written through is closed again, when it works and when it fails."""
    results, records, run = tmp_path / "runs.csv", tmp_path / "records", fixture_run(RUN)
    before = _open_fds()
    assert export_with_records([run], results, records).exit_code == 0
    assert _open_fds() == before
    (records / f"{folder_mod.PENDING}{_tag(results)}").write_text("")  # a file, no folder
    failed = export_with_records([run], results, records, "--allow-duplicate")
    assert failed.exit_code == 1
    assert "not a folder" in error_line(failed)
    assert _open_fds() == before


def test_a_temporary_name_taken_before_the_record_is_written_is_never_written_through(
        tmp_path):
    """The temporary file's name is known in advance (name and pid): a teammate's hard
    link to one of my files planted there is not opened and written over."""
    victim, pend = _thesis(tmp_path), tmp_path / "pending"
    pend.mkdir()
    os.link(victim, pend / f".7-run.json.{os.getpid()}.tmp")
    dir_fd = os.open(pend, os.O_RDONLY | os.O_DIRECTORY)
    try:
        with pytest.raises(FileExistsError):
            folder_mod._write_new(dir_fd, "7-run.json", b"{}")
    finally:
        os.close(dir_fd)
    assert victim.read_text() == "years of work\n"
    assert not (pend / "7-run.json").exists()


def test_a_name_gone_before_it_is_described_says_so(tmp_path):
    """What is at a refused name is looked at once more, to name it; gone by then: retry."""
    dir_fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        refusal = folder_mod._refused(tmp_path / ".pending-x", dir_fd, ".pending-x")
    finally:
        os.close(dir_fd)
    assert str(refusal) == f"{tmp_path / '.pending-x'}: changed while it was read; retry"
