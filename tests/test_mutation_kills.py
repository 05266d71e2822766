"""Values that no other test pinned down, found by mutation testing (tools/mutate.py).

Each test here kills mutants that survived the rest of the suite: a changed
cell, a changed accept/refuse decision, a changed note, or a traceback. They
assert values, so a one-token change in the code they cover fails them.
"""

from __future__ import annotations

import math

import pytest

from ezpz_amsc.row import HEADER, build_row, dashboard_problems, fmt

# --- row.py: the cell formatter ---------------------------------------------------------------


@pytest.mark.parametrize("value,decimals,cell", [
    (0.0, 3, "0.000"),  # a median of exactly zero: the zero branch
    (0.0, 6, "0.000000"),
    (-0.0, 3, "0.000"),
    (-0.0004, 3, "-0.000400"),  # measured but below the rounding: 3 significant digits
    (0.0004, 3, "0.000400"),
    (1.234e-25, 3, "1.23e-25"),  # more than 20 decimals: exponent form
    (-1.5, 1, "-1.5"),
    (10.0, 3, "10.000"),  # zeros around a non-zero digit are kept
    (0.05, 1, "0.1"),
    (1234.5678, 3, "1234.568"),
])
def test_fmt_rounds_and_writes_zero_one_way(value, decimals, cell):
    assert fmt(value, decimals) == cell


@pytest.mark.parametrize("value", [None, math.nan, math.inf, -math.inf])
def test_fmt_leaves_an_unmeasured_value_empty_as_a_string(value):
    assert fmt(value, 3) == ""


def test_build_row_refuses_a_column_outside_the_schema():
    with pytest.raises(KeyError) as e:
        build_row({"tps": 1, "mfu_pct": 2, "nodes": 1})
    assert e.value.args == ("not in the schema: ['mfu_pct', 'tps']",)


def test_build_row_orders_and_stringifies_every_column():
    row = build_row({"nodes": 2, "config": "c", "mfu": None})
    assert list(row) == list(HEADER)
    assert row["nodes"] == "2" and row["config"] == "c"
    assert all(row[c] == "" for c in HEADER if c not in ("nodes", "config"))


# --- row.py: the dashboard's own reading ------------------------------------------------------

GOOD = ["2026-11-29T22:18:43Z", "localhost", "c", "1", "2", "pass", "4.034", "3930.349",
        "1965.174", "", "0.014", "7.989204", "30", ""]


def test_a_short_row_lacks_its_last_required_cells_and_nothing_else():
    # Read as the dashboard reads a line with too few cells: the missing ones are
    # empty, not an error, and only the required ones are problems.
    assert dashboard_problems(GOOD[:4]) == ["gpus is empty", "status is empty",
                                            "wall_time_sec is empty"]
    assert dashboard_problems(GOOD[:7]) == []
    assert dashboard_problems([]) == [f"{c} is empty" for c in HEADER[:7]]


def test_a_row_as_a_mapping_may_lack_optional_columns():
    row = dict(zip(HEADER[:7], GOOD[:7], strict=True))
    assert dashboard_problems(row) == []
    assert dashboard_problems({k: v for k, v in row.items() if k != "nodes"}) == [
        "nodes is empty"]


@pytest.mark.parametrize("column,cell,problem", [
    ("nodes", "0", "nodes '0' is below 1"),
    ("gpus", "-3", "gpus '-3' is below 1"),
    ("nodes", "1", None),  # 1 is the smallest count there is
    ("tflops", "inf", "tflops 'inf' is not finite"),
    ("mfu", "nan", "mfu 'nan' is not finite"),
    ("final_loss", "-0.5", None),
])
def test_dashboard_problems_counts_and_numbers(column, cell, problem):
    row = dict(zip(HEADER, GOOD, strict=True)) | {column: cell}
    assert dashboard_problems(row) == ([problem] if problem else [])


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
    from ezpz_amsc.files import make_folders

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

    from ezpz_amsc.files import make_folders

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
    from ezpz_amsc.files import make_folders

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
    from ezpz_amsc.files import create_file

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
    from ezpz_amsc.files import create_file

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
    from ezpz_amsc.files import create_file, describe

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

    from ezpz_amsc.files import describe, permission_error

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
    from ezpz_amsc.files import permission_error

    p = tmp_path / "x"
    p.write_text("")
    p.chmod(0o644)
    assert str(permission_error(p, "r")).startswith(f"{p}: not readable by you")


def test_permission_error_on_what_cannot_even_be_seen(tmp_path):
    from ezpz_amsc.files import permission_error

    gone = tmp_path / "gone"
    assert str(permission_error(gone, "rw")) == f"{gone}: permission denied"
    assert str(permission_error(gone, "wx", "cannot create x there")) == (
        f"{gone}: cannot create x there: permission denied")


def test_owner_and_group_without_a_name_are_shown_by_number():
    import os

    from ezpz_amsc.files import describe

    n = _no_passwd_id()
    st = os.stat_result((0o100640, 0, 0, 1, n, n, 0, 0, 0, 0))
    assert describe(st) == f"owner {n}, group {n}, mode 0640"


def test_a_file_of_my_group_but_not_mine_is_judged_by_its_group_bits(tmp_path, monkeypatch):
    import os

    from ezpz_amsc.files import describe, permission_error

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
