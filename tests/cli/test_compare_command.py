"""ezpz-amsc compare: the command line, its outputs and its exit status (0, 1, 2, 3).

What a verdict rests on is tested in tests/compare/; here, what a CI job sees."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from helpers import error_line, run_group

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "compare"))
from synthetic_studies import Study  # noqa: E402


def steady(tmp_path: Path, factor: dict[int, float] | None = None,
           base_extra=(), new_extra=()) -> tuple[Path, Path]:
    """12 points of 3 repeats; the new study the same runs (times ``factor`` per node count)."""
    factor = factor or {}
    base, new = Study(), Study("2026-09-02T00:00:00Z")
    for nodes in range(1, 13):
        rates = [10_000 - 100 * nodes + x for x in (0, 100, -100)]
        base.repeats("aurora", nodes, rates)
        new.repeats("aurora", nodes, [r * factor.get(nodes, 1.0) for r in rates])
    for args, kw in base_extra:
        base.add(*args, **kw)
    for args, kw in new_extra:
        new.add(*args, **kw)
    return base.write(tmp_path / "base.csv"), new.write(tmp_path / "new.csv")


def compare(*args: object):
    return run_group("compare", *args)


def test_nothing_changed_is_exit_0_and_says_what_it_could_resolve(tmp_path):
    base, new = steady(tmp_path)
    r = compare(base, new)
    assert (r.exit_code, r.stderr) == (0, "")
    first = r.stdout.splitlines()[0]
    assert first.startswith("compare: 0 slower, 0 broke, 12 same; sigma aurora 2.0%; alpha 0.05 "
                            "(Holm), 12 judged points; base 2026-08-11, new 2026-09-02")
    assert "nothing slower found between the studies: 12 same (each rules out a change of X% " \
           "or more, X 3.9%)" in " ".join(r.stdout.split())


def test_a_slower_point_is_exit_1(tmp_path):
    base, new = steady(tmp_path, {5: 0.85})
    r = compare(base, new)
    assert (r.exit_code, r.stderr) == (1, "")
    assert r.stdout.startswith("compare: 1 slower, 0 broke, 11 same;")


def test_a_broken_point_is_exit_1(tmp_path):
    base, new = steady(tmp_path, new_extra=[(("aurora", 20, None), {"status": "fail"})],
                       base_extra=[(("aurora", 20, 9_000), {})])
    r = compare(base, new, "--format", "json")
    data = json.loads(r.stdout)
    assert (r.exit_code, data["exit_code"], data["exit_reason"]) == (1, 1, "1 broke point")


def test_an_improvement_is_exit_0(tmp_path):
    base, new = steady(tmp_path, {n: 1.2 for n in range(1, 13)})
    r = compare(base, new)
    assert r.exit_code == 0 and r.stdout.startswith("compare: 0 slower, 0 broke, 12 faster;")


def test_different_systems_are_exit_3_with_an_error_line_and_the_output(tmp_path):
    base = Study().repeats("aurora", 1, [10_000]).write(tmp_path / "a.csv")
    new = Study().repeats("polaris", 1, [20_000]).write(tmp_path / "p.csv")
    r = compare(base, new)
    assert r.exit_code == 3
    assert r.stdout.startswith("compare: 0 slower, 0 broke, 1 new, 1 gone; sigma -;")
    assert r.stderr == (
        "error: nothing comparable: base is on aurora, new on polaris; different systems are "
        "not compared (--across-systems shows them side by side, as a difference)\n")
    r = compare(base, new, "--across-systems")
    assert (r.exit_code, r.stderr) == (0, "")
    assert r.stdout.startswith("compare: 0 slower, 0 broke, 1 different;")


def test_require_all_fails_on_a_gone_point_with_3(tmp_path):
    base, new = steady(tmp_path, base_extra=[(("aurora", 64, 9_000), {})])
    assert compare(base, new).exit_code == 0
    r = compare(base, new, "--require-all")
    assert r.exit_code == 3
    assert r.stdout.startswith("compare: 0 slower, 0 broke, 12 same, 1 gone;")
    assert r.stderr == "error: 1 point gone from new (--require-all)\n"


def test_several_files_a_study(tmp_path):
    base, new = steady(tmp_path)
    extra = Study("2026-08-12T00:00:00Z").repeats("polaris", 1, [20_000, 20_100])
    extra_new = Study("2026-09-03T00:00:00Z").repeats("polaris", 1, [20_050, 20_000])
    r = compare("--base", base, "--base", extra.write(tmp_path / "b2.csv"),
                "--new", new, "--new", extra_new.write(tmp_path / "n2.csv"), "--format", "json")
    data = json.loads(r.stdout)
    assert r.exit_code == 0 and data["judged"] == 13
    assert data["base"]["files"] == [str(base), str(tmp_path / "b2.csv")]
    assert data["new"]["dates"]["last"] == "2026-09-03T00:00:01Z"


def test_noise_from_takes_sigma_from_the_a_a_files(tmp_path):
    base, new = steady(tmp_path)
    aa = Study("2026-07-01T00:00:00Z")
    for nodes in range(1, 13):
        aa.repeats("aurora", nodes, [10_000, 10_500])
    r = compare(base, new, "--noise-from", aa.write(tmp_path / "aa.csv"), "--format", "json")
    (noise,) = json.loads(r.stdout)["noise"]
    assert noise["source"] == "a/a" and noise["noise_files"]["repeated_points"] == 12


def test_rows_with_a_problem_are_notes_and_quiet_hides_them(tmp_path):
    base, new = steady(tmp_path)
    with open(new, "a") as f:
        f.write("2026-09-02T01:00:00Z,aurora,x,1,12,maybe,1.0,,,,,,,\n")
    r = compare(base, new)
    assert r.exit_code == 0
    assert r.stderr.startswith(f"note: {new}:38: ")
    assert compare(base, new, "-q").stderr == ""


def test_markdown_and_json_come_from_the_same_comparison(tmp_path):
    base, new = steady(tmp_path, {5: 0.85})
    md = compare(base, new, "--format", "markdown")
    data = json.loads(compare(base, new, "--format", "json").stdout)
    assert md.exit_code == 1
    assert md.stdout.splitlines()[0] == data["summary"]
    assert "<details><summary>All 12 points</summary>" in md.stdout


@pytest.mark.parametrize("args, code, fragment", [
    (["{base}"], 2, "error: two files are needed (BASE_CSV NEW_CSV), got 1; several files per "
                    "study go with --base CSV --base CSV --new CSV"),
    (["{base}", "{new}", "{base}"], 2, "got 3"),
    (["{base}", "{new}", "--base", "{base}"], 2,
     "error: give BASE_CSV NEW_CSV or --base/--new, not both"),
    (["--base", "{base}"], 2, "error: missing --new: the new study needs a file as much as the "
                              "base one"),
    (["--new", "{new}"], 2, "error: missing --base"),
    (["{base}", "{tmp}/nope.csv"], 2, "nope.csv: no such file"),
    (["{base}", "{tmp}"], 2, ": is a directory; compare needs results CSV files"),
    (["{base}", "{tmp}/empty.csv"], 2, "empty.csv: empty file, no header"),
    (["{base}", "{tmp}/other.csv"], 2, "other.csv: header lacks required columns"),
    (["{base}", "{new}", "--noise-from", "{tmp}/nope.csv"], 2, "nope.csv: no such file"),
    (["{base}", "{new}", "--min-effect", "0"], 2, "error: invalid value for '--min-effect'"),
    (["{base}", "{new}", "--min-effect", "100"], 2, "error: invalid value for '--min-effect'"),
    (["{base}", "{new}", "--alpha", "0.5"], 2, "error: invalid value for '--alpha'"),
    (["{base}", "{new}", "--format", "xml"], 2, "error: invalid value for '--format'"),
    (["{base}", ""], 2, "empty path"),
])
def test_errors_are_one_line_with_exit_2(tmp_path, args, code, fragment):
    base, new = steady(tmp_path)
    (tmp_path / "empty.csv").write_text("")
    (tmp_path / "other.csv").write_text("a,b\n1,2\n")
    argv = [a.format(base=base, new=new, tmp=tmp_path) for a in args]
    r = compare(*argv)
    assert (r.exit_code, r.stdout) == (code, "")
    assert fragment in error_line(r)


def test_bare_compare_shows_the_usage():
    r = compare()
    assert r.exit_code == 2
    assert r.stderr.splitlines() == [
        "Usage: ezpz-amsc compare BASE_CSV NEW_CSV [--format FORMAT] [OPTIONS]",
        "       ezpz-amsc compare --base CSV --base CSV ... --new CSV ... [OPTIONS]",
        "error: missing BASE_CSV NEW_CSV; try 'ezpz-amsc compare -h' for help"]


def test_help_lists_the_four_exit_codes():
    page = compare("--help").stdout
    codes = page.split("Exit codes:\n")[1]
    assert [ln.split()[0] for ln in codes.splitlines() if ln.strip()] == ["0", "1", "2", "3"]
    assert "docs/compare.md" in page


def test_a_path_you_may_not_reach_is_an_input_error_not_a_finding(tmp_path, monkeypatch):
    # exit 1 is a regression found: a path that cannot be looked at must be 2
    import errno
    import os

    base, new = steady(tmp_path)
    denied = tmp_path / "locked" / "target.csv"
    real_stat = os.stat

    def stat(path, *a, **kw):
        if isinstance(path, (str, os.PathLike)) and Path(path) == denied:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path))
        return real_stat(path, *a, **kw)

    monkeypatch.setattr(os, "stat", stat)
    r = compare(base, denied)
    assert (r.exit_code, r.stdout) == (2, "")
    assert error_line(r) == (f"error: {denied}: Permission denied (check its permissions and "
                             "those of the folders above it)")
