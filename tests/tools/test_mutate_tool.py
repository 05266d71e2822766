"""tools/mutate.py, the mutation-testing command: which mutants it makes, and their ids.

The command itself is too slow for the suite (docs/testing.md); what is tested
here is what decides its result: every operator produces the mutant it claims,
the mutated text is that one change and still compiles, code that runs at
import time is told apart from function bodies, and an id survives edits
elsewhere in the file.
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


def test_ids_are_stable_under_edits_elsewhere_and_unique():
    before = {(m.desc, _line(m)): m.id for m in _mutants()}
    edited = SAMPLE.replace(b"SCALE = 2\n", b"SCALE = 2\nOTHER = 7\n\n\n")
    after = {(m.desc, m.apply(edited).decode().splitlines()[m.line - 1].strip()): m.id
             for m in _mutants(edited)}
    assert all(after[k] == v for k, v in before.items())
    ids = [m.id for m in _mutants()]
    assert len(ids) == len(set(ids))


def test_equivalents_file_needs_an_id_and_a_reason(tmp_path):
    f = tmp_path / "eq.txt"
    f.write_text("# comment\n\n0123abcd  ezpz_amsc/row.py:3 f: `<` -> `<=` -- both give 0\n")
    eq = mutate.read_equivalents(f)
    assert eq.reasons == {"0123abcd": "both give 0"}
    f.write_text("0123abcd  ezpz_amsc/row.py:3 f: `<` -> `<=`\n")
    with pytest.raises(SystemExit, match="eq.txt:1: expected 'ID  where: mutation -- reason'"):
        mutate.read_equivalents(f)
    f.write_text("0123abcd x -- a\n0123abcd y -- b\n")
    with pytest.raises(SystemExit, match="eq.txt:2: 0123abcd is listed twice"):
        mutate.read_equivalents(f)


@pytest.mark.slow
def test_the_shipped_equivalents_file_names_current_mutants():
    eq = mutate.read_equivalents(mutate.EQUIVALENTS)
    listed = [ln.split()[1].split(":")[0] for ln in mutate.EQUIVALENTS.read_text().splitlines()
              if ln.strip() and not ln.startswith("#")]
    paths = {mutate.module_path(p) for p in listed}
    assert None not in paths, listed
    ids = {m.id for p in paths for m in mutate.mutants_of(p, (REPO / p).read_bytes())}
    assert set(eq.reasons) <= ids, sorted(set(eq.reasons) - ids)


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
    tests = {"t::builds": mutate.TestInfo(0.1, {"ezpz_amsc/opts.py": [9]}),
             "t::names_it": mutate.TestInfo(0.1, {"ezpz_amsc/opts.py": [16]}),
             "t::elsewhere": mutate.TestInfo(0.1, {"ezpz_amsc/other.py": [1]})}
    sel = mutate.Selector(tests, {"ezpz_amsc/opts.py": src})
    assert sel.select(deco[0]) == ["t::builds", "t::names_it"]
