"""tools/mutate.py, the mutation-testing command: which mutants it makes, and their ids.

The command itself is too slow for the suite (docs/testing.md); what is tested
here is what decides its result: every operator produces the mutant it claims,
the mutated text is that one change and still compiles, code that runs at
import time is told apart from function bodies, a mutant's name survives edits
elsewhere in the file; and the equivalents file: its format, its errors, what a
stale entry's failure says and how --refresh-equivalents brings one up to date.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
from helpers import REPO

_spec = importlib.util.spec_from_file_location("mutate_tool", REPO / "tools" / "mutate.py")
mutate = importlib.util.module_from_spec(_spec)
sys.modules["mutate_tool"] = mutate  # dataclasses look their module up by name
_spec.loader.exec_module(mutate)

SAMPLE = b'''"""A module docstring is not mutated."""
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    LIMIT_T = 3

LIMIT = 16 << 20  # pragma: no mutate
SCALE = 2
__all__ = ["f"]


def f(a: int, b: float = 0.5, *, strict: bool = True) -> float | None:
    """Not mutated either."""
    if a < 2 and not strict:
        return None
    x = a * b / SCALE - 1
    y = (a + 1) // 2 if a is not None else a % 3
    return x if a in (1, 2) else f"n={a} is {'odd'}"
'''


def _mutants(source: bytes = SAMPLE) -> list:
    return mutate.mutants_of("ezpz_amsc/sample.py", source)


def _applied(m) -> str:
    return m.apply(SAMPLE).decode()


def _line(m) -> str:
    return _applied(m).splitlines()[m.line - 1].strip()


def test_every_operator_group_makes_its_mutants():
    got = {(m.line, m.desc) for m in _mutants()}
    expected = {
        (14, "`<` -> `<=`"), (14, "`2` -> `3`"), (14, "`2` -> `1`"), (14, "`and` -> `or`"),
        (14, "drop `not`"), (16, "`*` -> `/`"), (16, "`/` -> `*`"), (16, "`-` -> `+`"),
        (16, "`1` -> `2`"), (16, "`1` -> `0`"), (17, "`+` -> `-`"), (17, "`//` -> `/`"),
        (17, "`is not` -> `is`"), (17, "`%` -> `*`"), (17, "`3` -> `4`"), (17, "`3` -> `2`"),
        (18, "`in` -> `not in`"), (18, "`return ...` -> `return None`"),
        (8, "`2` -> `3`"), (8, "`2` -> `1`"),  # SCALE, at import time
        (12, "`True` -> `False`"), (12, "`0.5` -> `1.5`"),  # defaults, at def time
    }
    assert expected <= got, sorted(expected - got)
    kinds = {m.kind for m in _mutants()}
    assert kinds == {"compare", "arith", "const", "bool", "not", "return", "string"}


def test_each_mutant_changes_exactly_the_text_it_names():
    by = {(m.line, m.desc): m for m in _mutants()}
    assert _line(by[(14, "`<` -> `<=`")]) == "if a <= 2 and not strict:"
    assert _line(by[(14, "`and` -> `or`")]) == "if a < 2 or not strict:"
    assert _line(by[(14, "drop `not`")]) == "if a < 2 and (strict):"
    assert _line(by[(16, "`/` -> `*`")]) == "x = a * b * SCALE - 1"
    assert _line(by[(17, "`is not` -> `is`")]) == (
        "y = (a + 1) // 2 if a is None else a % 3")
    assert _line(by[(17, "`//` -> `/`")]) == "y = (a + 1) / 2 if a is not None else a % 3"
    assert _line(by[(18, "`return ...` -> `return None`")]) == "return None"
    for m in _mutants():
        mutated = m.apply(SAMPLE)
        compile(mutated, "sample.py", "exec")
        assert mutated != SAMPLE
        # one splice: everything before and after the replaced span is untouched
        assert mutated[:m.start] == SAMPLE[:m.start]
        assert mutated[m.start + len(m.replacement.encode()):] == SAMPLE[m.end:]


def test_strings_get_markers_inside_their_quotes_fstrings_included():
    strings = [m for m in _mutants() if m.kind == "string"]
    texts = {_line(m) for m in strings}
    assert 'return x if a in (1, 2) else f"XXn={a} is {\'odd\'}XX"' in texts
    assert "return x if a in (1, 2) else f\"n={a} is {'XXoddXX'}\"" in texts
    assert all("XX" in _line(m) for m in strings)


def test_docstrings_annotations_type_checking_all_and_pragma_are_left_alone():
    lines = {m.line for m in _mutants()}
    assert not lines & {1, 3, 4, 5, 7, 9, 13}
    assert not [m for m in _mutants() if m.line == 12 and "float" in m.desc]


def test_function_bodies_select_by_their_lines_import_time_code_by_name():
    by = {(m.line, m.desc): m for m in _mutants()}
    body = by[(16, "`-` -> `+`")]
    assert (body.lines, body.qualname, body.def_time) == ((16, 16), "f", False)
    header = by[(14, "`<` -> `<=`")]
    assert header.lines == (14, 14)  # the if's test, not its body
    scale = by[(8, "`2` -> `3`")]
    assert (scale.def_time, scale.defines, scale.qualname) == (True, ("SCALE",), "<module>")
    default = by[(12, "`True` -> `False`")]
    assert default.def_time and default.defines == ("f",)


def test_the_selector_uses_coverage_for_bodies_and_the_users_of_a_name_at_import():
    info = mutate.TestInfo
    tests = {"t::fast": info(0.1, {"ezpz_amsc/sample.py": [16]}),
             "t::slow": info(2.0, {"ezpz_amsc/sample.py": [14, 16, 18]}),
             "t::other": info(0.01, {"ezpz_amsc/sample.py": [14]})}
    sel = mutate.Selector(tests, {"ezpz_amsc/sample.py": SAMPLE})
    by = {(m.line, m.desc): m for m in _mutants()}
    assert sel.select(by[(16, "`-` -> `+`")]) == ["t::fast", "t::slow"]  # fastest first
    # SCALE is used on line 16: the tests that run that line
    assert sel.select(by[(8, "`2` -> `3`")]) == ["t::fast", "t::slow"]
    sel.killed_by(by[(16, "`*` -> `/`")], "t::slow")
    assert sel.select(by[(16, "`-` -> `+`")]) == ["t::slow", "t::fast"]  # a killer here first
    assert sel.select(by[(18, "`in` -> `not in`")]) == ["t::slow"]


def test_import_time_code_also_runs_its_modules_own_test_file():
    # tests/test_sample.py::t_reads reads SCALE in the test itself: no package line
    # of its coverage uses the name, so only the mirror rule selects it
    info = mutate.TestInfo
    tests = {"t::fast": info(0.1, {"ezpz_amsc/sample.py": [16]}),
             "tests/test_sample.py::t_reads": info(0.5, {}),
             "tests/run/test_sample.py::t_elsewhere": info(0.01, {})}
    sel = mutate.Selector(tests, {"ezpz_amsc/sample.py": SAMPLE})
    by = {(m.line, m.desc): m for m in _mutants()}
    assert sel.select(by[(8, "`2` -> `3`")]) == ["t::fast", "tests/test_sample.py::t_reads"]
    assert sel.select(by[(16, "`-` -> `+`")]) == ["t::fast"]  # a body: its lines only
    assert mutate.mirror_test_file("ezpz_amsc/run/reduce.py") == "tests/run/test_reduce.py"
    assert mutate.mirror_test_file("ezpz_amsc/options.py") == "tests/test_options.py"


def test_ids_are_stable_under_edits_elsewhere_and_unique():
    before = {(m.desc, _line(m)): m.id for m in _mutants()}
    edited = SAMPLE.replace(b"SCALE = 2\n", b"SCALE = 2\nOTHER = 7\n\n\n")
    after = {(m.desc, m.apply(edited).decode().splitlines()[m.line - 1].strip()): m.id
             for m in _mutants(edited)}
    assert all(after[k] == v for k, v in before.items())
    ids = [m.id for m in _mutants()]
    assert len(ids) == len(set(ids))


def test_a_mutant_is_named_by_its_function_code_mutation_and_occurrence():
    by = {(m.line, m.desc): m for m in _mutants()}
    assert by[(14, "`<` -> `<=`")].key == (
        "sample", "f", "if a < 2 and not strict:", "`<` -> `<=`", 1)
    # a comment is no part of the code: editing it renames nothing
    commented = SAMPLE.replace(b"    if a < 2 and not strict:\n",
                               b"    if a < 2 and not strict:  # a note # with | and --\n")
    assert [x.key for x in _mutants(commented)] == [x.key for x in _mutants()]
    # the same mutation more than once on a line: told apart by occurrence, in source order
    src = b"def g(a, b):\n    return (a and b) and (b and a)  # three ands\n"
    ands = [x for x in mutate.mutants_of("ezpz_amsc/g.py", src) if x.desc == "`and` -> `or`"]
    assert [(x.code, x.occurrence) for x in ands] == [
        ("return (a and b) and (b and a)", 1), ("return (a and b) and (b and a)", 2),
        ("return (a and b) and (b and a)", 3)]
    assert [x.apply(src).decode().splitlines()[1].split("#")[0].strip() for x in ands] == [
        "return (a or b) and (b and a)", "return (a and b) or (b and a)",
        "return (a and b) and (b or a)"]


# A module whose lines hold what a one-line format would trip on: |, --, backticks,
# quotes, a # inside a string, a colon and a field name.
TRICKY = b"""def h(s):
    if s == "a | b -- c `d`" and s != 'why: #1':
        return s.split("--", 1)[0]
    return s
"""


def _sources(source: bytes = TRICKY) -> dict[str, bytes]:
    return {"ezpz_amsc/tricky.py": source}


def test_an_entry_is_parsed_back_to_its_mutant_whatever_its_code_holds():
    mutants = mutate.mutants_of("ezpz_amsc/tricky.py", TRICKY)
    assert any("`" in m.code and "|" in m.code and "--" in m.code for m in mutants)
    text = "\n".join(mutate.entry_text(m, f"reason {i} -- with `ticks` | and: colons")
                     for i, m in enumerate(mutants))
    eq = mutate.parse_equivalents(text, "eq.txt")
    assert [e.key for e in eq.entries] == [m.key for m in mutants]
    assert all(eq.entry(m).why == f"reason {i} -- with `ticks` | and: colons"
               for i, m in enumerate(mutants))
    assert mutate.stale_entries(eq, _sources()) == []


def test_an_entry_reads_its_fields_comments_and_a_why_over_several_lines():
    text = ("# a comment\n\nmodule:   ezpz_amsc/tricky.py\nfunction: h\n"
            "code:     return s.split(\"--\", 1)[0]\n# a comment inside\n"
            "mutation: `1` -> `2`\nwhy:      the first part\n          goes on here\n"
            "\tand here\n\n\n")
    (e,) = mutate.parse_equivalents(text, "eq.txt").entries
    assert (e.module, e.function, e.code, e.mutation, e.occurrence) == (
        "tricky", "h", 'return s.split("--", 1)[0]', "`1` -> `2`", 1)
    assert e.why == "the first part goes on here and here"
    assert (e.line, e.lines["code"], e.lines["why"]) == (3, 5, 8)


_GOOD = ("module:   run/reduce\nfunction: trend\ncode:     if n <= width:\n"
         "mutation: `<=` -> `<`\nwhy:      the same points\n")


@pytest.mark.parametrize("text, message", [
    ("0123abcd  ezpz_amsc/row.py:3 f: `<` -> `<=` -- both give 0\n",
     "eq.txt:1: expected 'FIELD: VALUE', one of module, function, code, mutation, "
     "occurrence, why (see the top of the file)"),
    ("# c\n" + _GOOD.replace("why:", "reason:"),
     "eq.txt:6: no field reason: (the fields are module, function, code, mutation, "
     "occurrence, why)"),
    ("\n" + _GOOD.replace("code:     if n <= width:\n", ""),
     "eq.txt:2: the entry lacks code: (see the top of the file)"),
    (_GOOD.replace("why:      the same points\n", "") + "\n" + _GOOD,
     "eq.txt:1: the entry lacks why: (see the top of the file)"),
    (_GOOD + _GOOD, "eq.txt:6: module: given twice in one entry (also at line 1); "
     "a blank line ends an entry"),
    (_GOOD.replace("if n <= width:", ""), "eq.txt:3: code: is empty"),
    (_GOOD.replace("why:      the same points", "why:"), "eq.txt:5: why: is empty"),
    (_GOOD + "occurrence: 0\n",
     "eq.txt:6: occurrence: must be a whole number from 1 up, not '0'"),
    (_GOOD + "occurrence: two\n",
     "eq.txt:6: occurrence: must be a whole number from 1 up, not 'two'"),
    (_GOOD.replace("code:", "  code:"),
     "eq.txt:3: an indented line goes on with the why: above it, and only with a why:"),
    (_GOOD + "\n# again\n" + _GOOD.replace("run/reduce", "ezpz_amsc/run/reduce.py"),
     "eq.txt:8: the same mutant as the entry at line 1"),
    (_GOOD + "\n" + _GOOD + "occurrence: 1\n",
     "eq.txt:7: the same mutant as the entry at line 1"),
])
def test_a_malformed_equivalents_file_is_refused_naming_the_line(text, message):
    with pytest.raises(SystemExit) as err:
        mutate.parse_equivalents(text, "eq.txt")
    assert str(err.value) == f"error: {message}"


def _entry_for(source: bytes, line: int, desc: str, why: str = "it changes nothing") -> str:
    (m,) = [m for m in mutate.mutants_of("ezpz_amsc/tricky.py", source)
            if m.line == line and m.desc == desc]
    return mutate.entry_text(m, why)


def test_an_edit_elsewhere_in_the_module_keeps_an_entry():
    eq = mutate.parse_equivalents(_entry_for(TRICKY, 3, "`1` -> `2`"), "eq.txt")
    edited = (b"LIMIT = 3\n\n\n" + TRICKY.replace(b"    return s\n", b"    return s or None\n")
              .replace(b'"--", 1)[0]', b'"--", 1)[0]  # a comment now'))
    assert mutate.stale_entries(eq, _sources(edited)) == []


def test_a_stale_entry_names_itself_and_what_its_line_is_now():
    text = "# header\n\n" + _entry_for(TRICKY, 3, "`1` -> `2`")
    eq = mutate.parse_equivalents(text, "tools/mutation-equivalents.txt")
    edited = b"\n\n" + TRICKY.replace(b'split("--", 1)', b'split("--", maxsplit=1)')
    (stale,) = mutate.stale_entries(eq, _sources(edited))
    assert mutate.stale_message(stale, eq) == "\n".join([
        "tools/mutation-equivalents.txt:3: this entry names no mutant of tricky any more:",
        "    module:   tricky",
        "    function: h",
        '    code:     return s.split("--", 1)[0]',
        "    mutation: `1` -> `2`",
        "  that mutation in h, or on that code, is now at:",
        '    ezpz_amsc/tricky.py:5  h: return s.split("--", maxsplit=1)[0]',
        "  if the mutant at line 5 is still equivalent, refresh the entry:",
        "    python tools/mutate.py --refresh-equivalents tricky",
        "  (it runs that mutant and, if no test kills it, rewrites the entry's",
        "  function:, code: and occurrence: to match it); else remove the entry."])


def test_a_stale_entry_with_no_close_candidate_or_no_module_says_what_to_do():
    eq = mutate.parse_equivalents(_entry_for(TRICKY, 3, "`1` -> `2`"), "eq.txt")
    gone = TRICKY.replace(b'return s.split("--", 1)[0]', b"return s")
    (stale,) = mutate.stale_entries(eq, _sources(gone))
    assert mutate.stale_message(stale, eq).splitlines()[-3:] == [
        "  tricky has that mutation neither in h nor on that code now:",
        "  the code changed or went. Find the mutant with "
        "`python tools/mutate.py --list tricky`",
        "  and edit the entry, or remove it."]
    # two lines alike: the tool does not guess which one the entry meant
    twice = TRICKY.replace(b'return s.split("--", 1)[0]',
                           b'return s.split("-", 1)[0] + s.split("-", 1)[0]')
    (stale,) = mutate.stale_entries(eq, _sources(twice))
    message = mutate.stale_message(stale, eq)
    assert stale.successor(eq) is None and len(stale.candidates) == 2
    assert "(occurrence 2)" in message and "--refresh-equivalents" not in message
    assert message.splitlines()[-3:] == [
        "  edit the entry's function:, code: (and occurrence:) to the one it became,",
        "  then run it: python tools/mutate.py --only ID tricky",
        "  (`python tools/mutate.py --list tricky` shows the ids); or remove the entry."]
    (stale,) = mutate.stale_entries(eq, {})
    assert mutate.stale_message(stale, eq).splitlines()[-3:] == [
        "  there is no ezpz_amsc/tricky.py: the code moved or went. "
        "Set module: (and function:)",
        "  to where it is now (docs/layout.md) and check the mutant survives there,",
        "  or remove the entry."]


def _fake_run(status: str, calls: list):
    def run(mutants):
        calls.append([m.key for m in mutants])
        return [mutate.Outcome(m, status, killer="tests/x.py::t" if status == "killed" else None)
                for m in mutants]
    return run


def test_refresh_rewrites_a_stale_entry_to_its_successor_once_it_survives(tmp_path):
    path = tmp_path / "eq.txt"
    first = _entry_for(TRICKY, 3, "`1` -> `2`", "why, over\n          two lines")
    second = _entry_for(TRICKY, 2, "`and` -> `or`", "the other")
    path.write_text(f"# header\n\n{first}\n# kept\n{second}")
    edited = TRICKY.replace(b'split("--", 1)', b'split("--", maxsplit=1)')
    calls: list = []
    text, status = mutate.refresh_equivalents(path, _sources(edited), None,
                                              _fake_run("survived", calls))
    assert status == 0
    assert calls == [[("tricky", "h", 'return s.split("--", maxsplit=1)[0]', "`1` -> `2`", 1)]]
    assert path.read_text() == (
        "# header\n\nmodule:   tricky\nfunction: h\n"
        'code:     return s.split("--", maxsplit=1)[0]\nmutation: `1` -> `2`\n'
        "why:      why, over\n          two lines\n\n# kept\n" + second)
    assert text == ('eq.txt:3 (tricky, h): refreshed to ezpz_amsc/tricky.py:3  h: '
                    'return s.split("--", maxsplit=1)[0]\n')
    assert mutate.stale_entries(mutate.read_equivalents(path), _sources(edited)) == []
    again = mutate.refresh_equivalents(path, _sources(edited), None, _fake_run("survived", []))
    assert again == ("every entry names a current mutant: nothing to refresh\n", 0)
    # a renamed function: each entry finds its line by its code
    renamed = edited.replace(b"def h(s):", b"def renamed(s):")
    text, status = mutate.refresh_equivalents(path, _sources(renamed), None,
                                              _fake_run("survived", []))
    assert status == 0 and len(text.splitlines()) == 2
    assert mutate.stale_entries(mutate.read_equivalents(path), _sources(renamed)) == []
    assert path.read_text().count("function: renamed\n") == 2


def test_refresh_leaves_an_entry_whose_successor_a_test_kills(tmp_path):
    path = tmp_path / "eq.txt"
    path.write_text(_entry_for(TRICKY, 3, "`1` -> `2`"))
    before = path.read_text()
    edited = TRICKY.replace(b'split("--", 1)', b'split("--", maxsplit=1)')
    text, status = mutate.refresh_equivalents(path, _sources(edited), ["tricky"],
                                              _fake_run("killed", []))
    assert status == 1 and path.read_text() == before
    assert text == ("eq.txt:1 (tricky, h): its mutant at ezpz_amsc/tricky.py:3 is killed by "
                    "tests/x.py::t: it is not equivalent any more; remove the entry\n")
    # only the modules asked for are looked at
    assert mutate.refresh_equivalents(path, _sources(edited), ["other"],
                                      _fake_run("killed", []))[1] == 0


def test_refresh_follows_a_renamed_function_occurrence_by_occurrence(tmp_path):
    src = b"def g(a, b):\n    return (a and b) and b\n"
    ands = [m for m in mutate.mutants_of("ezpz_amsc/tricky.py", src)
            if m.desc == "`and` -> `or`"]
    path = tmp_path / "eq.txt"
    path.write_text("\n".join(mutate.entry_text(m, f"why {m.occurrence}") for m in ands))
    renamed = src.replace(b"def g(", b"def k(")
    text, status = mutate.refresh_equivalents(path, _sources(renamed), None,
                                              _fake_run("survived", []))
    assert status == 0, text
    eq = mutate.read_equivalents(path)
    assert [(e.function, e.occurrence, e.why) for e in eq.entries] == [
        ("k", 1, "why 1"), ("k", 2, "why 2")]


def test_rewrite_adds_and_drops_the_occurrence_line():
    src = b"def g(a, b):\n    return (a and b) and b\n"
    ands = [m for m in mutate.mutants_of("ezpz_amsc/g.py", src) if m.desc == "`and` -> `or`"]
    text = "\n".join(mutate.entry_text(m, "why") for m in ands)
    first, second = mutate.parse_equivalents(text, "eq.txt").entries
    assert "occurrence: 2" in text and "occurrence" not in first.lines
    swapped = mutate.rewrite_entries(text, [(first, ands[1]), (second, ands[0])])
    assert swapped == "\n".join([mutate.entry_text(ands[1], "why"),
                                 mutate.entry_text(ands[0], "why")])


def test_the_report_names_listed_mutants_a_test_kills_or_that_time_out_and_stale_entries():
    by = {(m.line, m.desc): m for m in mutate.mutants_of("ezpz_amsc/tricky.py", TRICKY)}
    kept, killed, slow = by[(3, "`1` -> `2`")], by[(2, "`and` -> `or`")], by[(3, "`1` -> `0`")]
    text = "\n".join(mutate.entry_text(m, "why") for m in (kept, killed, slow))
    stale = mutate.entry_text(kept, "why").replace('code:     return s.split("--", 1)[0]',
                                                   "code:     return s")  # names no mutant
    eq = mutate.parse_equivalents(f"{text}\n{stale}", "eq.txt")
    outcomes = [mutate.Outcome(kept, "survived"),
                mutate.Outcome(killed, "killed", killer="tests/t.py::t"),
                mutate.Outcome(slow, "timeout")]
    lines = mutate.report(outcomes, eq, _sources(), "HEADER").splitlines()
    assert lines[lines.index("listed as equivalent but killed (remove these entries from "
                             "the file):") + 1] == (
        f"  eq.txt:7  {killed.id}  ezpz_amsc/tricky.py:2  h: `and` -> `or`, "
        "killed by tests/t.py::t")
    assert lines[lines.index("listed as equivalent but timed out (a loop the mutant made, or "
                             "a loaded machine: run them again with --only)") + 1] == (
        f"  eq.txt:13  {slow.id}  ezpz_amsc/tricky.py:3  h: `1` -> `0`")
    at = lines.index("stale entries (naming no mutant of these modules): 1")
    assert lines[at + 1] == "eq.txt:19: this entry names no mutant of tricky any more:"
    (row,) = [ln.split() for ln in lines if ln.startswith("ezpz_amsc/tricky.py")]
    assert row == ["ezpz_amsc/tricky.py", "3", "1", "1", "0", "0", "1", "100.0%"]


def test_the_shipped_equivalents_file_names_current_mutants():
    eq = mutate.read_equivalents(mutate.EQUIVALENTS)
    assert len(eq.entries) > 100
    stale = mutate.stale_entries(eq, mutate.package_sources())
    if stale:
        pytest.fail("\n\n".join(mutate.stale_message(s, eq) for s in stale), pytrace=False)


def test_score_counts_equivalents_out_and_timeouts_as_kills():
    row = {"mutants": 10, "killed": 6, "timeout": 1, "survived": 2, "no-tests": 0,
           "equivalent": 1, "error": 0}
    assert mutate.score_pct(row) == pytest.approx(700 / 9)
    assert mutate.score_pct({**row, "mutants": 1, "equivalent": 1, "killed": 0,
                             "timeout": 0}) is None


def test_stage_one_is_the_tests_of_the_first_two_files_in_order():
    tests = ["a.py::t1", "b.py::t1", "c.py::t1", "a.py::t2", "d.py::t1", "b.py::t2"]
    assert mutate._stages(tests) == [["a.py::t1", "b.py::t1", "a.py::t2", "b.py::t2"],
                                     ["c.py::t1", "d.py::t1"]]
    assert mutate._stages(["a.py::t1", "a.py::t2"]) == [["a.py::t1", "a.py::t2"]]


def test_a_class_decorator_selects_the_tests_that_run_its_methods():
    # @dataclass(frozen=True) -> False runs at import, which no test's coverage sees
    src = (b"from dataclasses import dataclass\n\n\n@dataclass(frozen=True)\nclass Opts:\n"
           b"    n: int = 1\n\n    def __post_init__(self) -> None:\n        self.check()\n\n"
           b"    def check(self) -> None:\n        pass\n\n\ndef build() -> Opts:\n"
           b"    return Opts()\n")
    deco = [m for m in mutate.mutants_of("ezpz_amsc/opts.py", src) if m.line == 4]
    assert deco and all(m.def_time and "Opts" in m.defines for m in deco)
    assert {m.qualname for m in deco} == {"Opts"}  # named by the class it decorates
    tests = {"t::builds": mutate.TestInfo(0.1, {"ezpz_amsc/opts.py": [9]}),
             "t::names_it": mutate.TestInfo(0.1, {"ezpz_amsc/opts.py": [16]}),
             "t::elsewhere": mutate.TestInfo(0.1, {"ezpz_amsc/other.py": [1]})}
    sel = mutate.Selector(tests, {"ezpz_amsc/opts.py": src})
    assert sel.select(deco[0]) == ["t::builds", "t::names_it"]
