#!/usr/bin/env python3
"""Mutation testing for ezpz-amsc: would a test notice if this code computed the wrong thing?

    python tools/mutate.py                      # every number-producing module, one core
    python tools/mutate.py --jobs 2 results/schema fs/create   # some modules, both cores
    python tools/mutate.py --list results/schema                # the mutants only, nothing run

Each mutant is one small deliberate bug (a flipped comparison, ``*`` for ``/``,
a constant off by one, ``and`` for ``or``, a dropped ``not``, ``True`` for
``False``, ``return x`` for ``return None``, a string literal changed), made in
the source text of one module of a private copy of the repository. The tests
that execute the mutated line (per-test line coverage, measured once and
cached in ``.mutate/``) then run against it, the ones that killed a neighbour
first and then the fastest, stopping at the first failure. A mutant no test
fails is a survivor. See docs/testing.md for how to read the report and what
to do about a survivor.

Why not mutmut: its test selection is per function, so a mutant in a central
function runs most of the suite, about 25 s a mutant here; cosmic-ray runs one
fixed test command per mutant. Selection per line is what makes a full run fit
in half an hour on two cores.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime as dt
import difflib
import hashlib
import importlib.util
import io
import json
import os
import queue
import re
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tokenize
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[1]
PACKAGE = "ezpz_amsc"
# The modules that compute, check or publish a number (a row cell, a report
# figure, an accept/refuse decision, a note). One not there yet is skipped.
DEFAULT_MODULES = ("run/reduce", "results/schema", "run/placement", "run/steps", "flow/export",
                   "run/columns", "options", "run/crosschecks", "report/data", "report/columns",
                   "report/text",
                   "fs/create", "fs/access", "fs/read", "results/append", "results/validate",
                   "flow/publish", "run/layout", "run/lines", "cli/explain", "text",
                   "records/record", "records/folder", "records/pairing",
                   "run/details", "run/identities", "run/devices", "results/fields",
                   "results/rows", "results/package", "results/seen",
                   "report/markdown", "cli/progress", "flow/reproduce", "flow/finalize",
                   "flow/check", "flow/describe", "cli/output", "hook")
EQUIVALENTS = REPO / "tools" / "mutation-equivalents.txt"
CACHE = REPO / ".mutate"
CACHE_VERSION = "1"
# Copied into each worker's private tree: everything the tests read, nothing generated.
_NOT_COPIED = shutil.ignore_patterns(".git", ".mutate", "mutants", ".hypothesis", "__pycache__",
                                     "*.egg-info", ".pytest_cache", ".ruff_cache", "build",
                                     "dist", ".venv")
# Imported once per worker before it forks a child per mutant, so a child
# starts in milliseconds; never ezpz_amsc itself (each child imports the mutant).
_PRELOAD = ("numpy", "click", "click.testing", "hypothesis", "hypothesis.strategies",
            "pytest", "orjson", "matplotlib", "matplotlib.figure", "coverage")
_SITECUSTOMIZE = '''\
# Written by tools/mutate.py into its private copy of the repository: measures
# line coverage in the CLI subprocesses a test starts, as part of that test.
import os

if os.environ.get("MUTATE_COV_DIR") and os.access(os.environ["MUTATE_COV_DIR"], os.W_OK):
    import atexit

    import coverage

    _cov = coverage.Coverage(
        data_file=os.path.join(os.environ["MUTATE_COV_DIR"], "sub"), data_suffix=True,
        source=[os.path.join(os.path.dirname(os.path.abspath(__file__)), "ezpz_amsc")],
        context=os.environ.get("MUTATE_COV_CONTEXT", ""), config_file=False)
    _cov.start()

    def _save():
        _cov.stop()
        _cov.save()

    atexit.register(_save)
'''


# --- the mutants ------------------------------------------------------------------------------

@dataclass
class Mutant:
    path: str  # relative to the repository, e.g. ezpz_amsc/results/schema.py
    line: int
    qualname: str  # the enclosing function or class, "<module>" at the top
    desc: str
    start: int  # byte offsets of the replaced text in the source
    end: int
    replacement: str
    # Lines whose coverage selects the tests: the statement (its header, for a
    # compound one) when the mutant runs in a function body; else the names
    # the statement defines, which select the functions that use them.
    lines: tuple[int, int] = (0, 0)
    defines: tuple[str, ...] = ()
    kind: str = ""  # the operator group: compare, arith, const, bool, not, return, string
    # What names the mutant in tools/mutation-equivalents.txt: the code of its
    # line (stripped, without a comment) and, when the function holds the same
    # mutation on the same code more than once, which of them (1, 2, ...).
    code: str = ""
    occurrence: int = 1
    id: str = ""

    @property
    def module(self) -> str:
        return module_name(self.path)

    @property
    def key(self) -> tuple[str, str, str, str, int]:
        return (self.module, self.qualname, self.code, self.desc, self.occurrence)

    def apply(self, source: bytes) -> bytes:
        return source[:self.start] + self.replacement.encode() + source[self.end:]

    @property
    def def_time(self) -> bool:
        return self.lines == (0, 0)


_COMPARE_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
                 ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Is: ast.IsNot, ast.IsNot: ast.Is,
                 ast.In: ast.NotIn, ast.NotIn: ast.In}
_ARITH_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
               ast.FloorDiv: ast.Div, ast.Mod: ast.Mult, ast.Pow: ast.Mult,
               ast.LShift: ast.RShift, ast.RShift: ast.LShift, ast.BitAnd: ast.BitOr,
               ast.BitOr: ast.BitAnd}
_SYMBOL = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==",
           ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
           ast.NotIn: "not in", ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/",
           ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**", ast.LShift: "<<", ast.RShift: ">>",
           ast.BitAnd: "&", ast.BitOr: "|", ast.And: "and", ast.Or: "or"}
_SYMBOL_RE = {ast.IsNot: r"is\s+not", ast.NotIn: r"not\s+in"}
_COMPOUND = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try,
             ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)
_STRING_PREFIX = re.compile(rb"[rRbBuUfF]*('''|\"\"\"|'|\")")


class _Collector:
    """Walks one module's AST and lists every mutant, as a splice of its source bytes."""

    def __init__(self, path: str, source: bytes) -> None:
        self.path, self.source = path, source
        self.tree = ast.parse(source)
        self.starts = [0]
        for ln in source.splitlines(keepends=True):
            self.starts.append(self.starts[-1] + len(ln))
        self.quiet = {i + 1 for i, ln in enumerate(source.splitlines())
                      if b"pragma: no mutate" in ln}
        self.mutants: list[Mutant] = []

    def offset(self, line: int, col: int) -> int:
        return self.starts[line - 1] + col  # ast columns are UTF-8 byte offsets

    def span(self, node: ast.AST) -> tuple[int, int]:
        return (self.offset(node.lineno, node.col_offset),
                self.offset(node.end_lineno, node.end_col_offset))

    # The walk keeps the statement, the qualified name and whether the code runs
    # when a function is called (body) or when the module is imported (def time).
    def run(self) -> list[Mutant]:
        self._body(self.tree.body, "<module>", None, ())
        return self.mutants

    def _body(self, stmts: list[ast.stmt], qual: str, func: str | None,
              defines: tuple[str, ...]) -> None:
        for i, s in enumerate(stmts):
            if i == 0 and _is_docstring(s):
                continue
            self._stmt(s, qual, func, defines)

    def _stmt(self, s: ast.stmt, qual: str, func: str | None, defines: tuple[str, ...]) -> None:
        if isinstance(s, (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal)):
            return
        if isinstance(s, ast.If) and _is_type_checking(s.test):
            return
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            self._definition(s, qual, func, defines)
            return
        if isinstance(s, (ast.Assign, ast.AnnAssign)) and func is None:
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            names = tuple(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
            names += tuple(t.attr for t in targets if isinstance(t, ast.Attribute))
            if "__all__" in names:
                return
            defines = defines + names
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            return  # a bare string: documentation
        if isinstance(s, ast.Return) and func is not None:
            self._return(s, qual)
        lines = _selection_lines(s) if func is not None else (0, 0)
        for name, value in ast.iter_fields(s):
            if name in ("body", "orelse", "finalbody", "handlers", "annotation"):
                continue
            for node in value if isinstance(value, list) else [value]:
                if isinstance(node, ast.AST):
                    self._expr(node, qual, lines, defines)
        for name in ("body", "orelse", "finalbody"):
            for x in getattr(s, name, None) or []:
                self._stmt(x, qual, func, defines)
        for h in getattr(s, "handlers", None) or []:
            hl = _selection_lines(h) if func is not None else (0, 0)
            if h.type is not None:
                self._expr(h.type, qual, hl, defines)
            for x in h.body:
                self._stmt(x, qual, func, defines)

    def _definition(self, s: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, qual: str,
                    func: str | None, defines: tuple[str, ...]) -> None:
        inner = s.name if qual == "<module>" else f"{qual}.{s.name}"
        # Decorators, defaults and bases run at def time: select by the name defined.
        # They are named by what they define (its decorator is the class's, not the
        # module's), though they run in the enclosing scope.
        first = min([s.lineno, *(d.lineno for d in s.decorator_list)])
        at_def = (0, 0) if func is None else (first, s.lineno)
        for d in s.decorator_list:
            self._expr(d, inner, at_def, (*defines, s.name))
        if isinstance(s, ast.ClassDef):
            for b in [*s.bases, *s.keywords]:
                self._expr(b, inner, at_def, (*defines, s.name))
            self._body(s.body, inner, func, (*defines, s.name) if func is None else defines)
            return
        for d in [*s.args.defaults, *(k for k in s.args.kw_defaults if k is not None)]:
            self._expr(d, inner, at_def, (*defines, s.name))
        self._body(s.body, inner, inner, ())

    def _return(self, s: ast.Return, qual: str) -> None:
        if s.value is None or (isinstance(s.value, ast.Constant) and s.value.value is None):
            return
        start, end = self.span(s)
        self._add(s.lineno, qual, "`return ...` -> `return None`", start, end, "return None",
                  (s.lineno, s.end_lineno), (), "return")

    def _expr(self, node: ast.AST, qual: str, lines: tuple[int, int],
              defines: tuple[str, ...]) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.stmt)):
            return
        for start, end, new, desc, kind in self._mutations(node):
            self._add(node.lineno, qual, desc, start, end, new, lines, defines, kind)
        if isinstance(node, ast.JoinedStr):
            children: Iterable[ast.AST] = [v.value for v in node.values
                                           if isinstance(v, ast.FormattedValue)]
        elif isinstance(node, ast.Lambda):
            children = [node.body]
        else:
            children = ast.iter_child_nodes(node)
        for child in children:
            self._expr(child, qual, lines, defines)

    def _add(self, line: int, qual: str, desc: str, start: int, end: int, new: str,
             lines: tuple[int, int], defines: tuple[str, ...], kind: str) -> None:
        if line in self.quiet:
            return
        self.mutants.append(Mutant(self.path, line, qual, desc, start, end, new, lines,
                                   defines, kind))

    def _mutations(self, node: ast.AST) -> Iterator[tuple[int, int, str, str, str]]:
        if isinstance(node, ast.Compare):
            left = node.left
            for op, right in zip(node.ops, node.comparators, strict=True):
                yield from self._swap(left, right, type(op), _COMPARE_SWAP, "compare")
                left = right
        elif isinstance(node, ast.BinOp):
            yield from self._swap(node.left, node.right, type(node.op), _ARITH_SWAP, "arith")
        elif isinstance(node, ast.BoolOp):
            other = ast.Or if isinstance(node.op, ast.And) else ast.And
            for left, right in zip(node.values, node.values[1:], strict=False):
                yield from self._swap(left, right, type(node.op), {type(node.op): other}, "bool")
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            start, end = self.span(node)
            o0, o1 = self.span(node.operand)
            yield start, end, f"({self.source[o0:o1].decode()})", "drop `not`", "not"
        elif isinstance(node, ast.Constant):
            yield from self._constant(node)
        elif isinstance(node, ast.JoinedStr):
            yield from self._string(node)

    def _swap(self, left: ast.AST, right: ast.AST, op: type, table: dict, kind: str
              ) -> Iterator[tuple[int, int, str, str, str]]:
        if op not in table:
            return
        lo, hi = self.span(left)[1], self.span(right)[0]
        gap = self.source[lo:hi].decode()
        pattern = _SYMBOL_RE.get(op, re.escape(_SYMBOL[op]))
        # The operator is the first token after the left operand, past closing
        # parentheses, white space, line continuations and comments.
        m = re.match(rf"(?:[\s)\\]|#[^\n]*)*({pattern})", gap)
        if m is None:
            return
        new = _SYMBOL[table[op]]
        yield (lo + m.start(1), lo + m.end(1), new,
               f"`{_SYMBOL[op]}` -> `{new}`", kind)

    def _constant(self, node: ast.Constant) -> Iterator[tuple[int, int, str, str, str]]:
        start, end = self.span(node)
        v = node.value
        if isinstance(v, bool):
            yield start, end, str(not v), f"`{v}` -> `{not v}`", "bool"
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            text = self.source[start:end].decode()
            for new in ([v + 1, v - 1] if v >= 1 else [v + 1]):
                yield start, end, repr(new), f"`{text}` -> `{new!r}`", "const"
        elif isinstance(v, (str, bytes)):
            yield from self._string(node)

    def _string(self, node: ast.AST) -> Iterator[tuple[int, int, str, str, str]]:
        start, end = self.span(node)
        text = self.source[start:end]
        m = _STRING_PREFIX.match(text)
        if m is None or not text.endswith(m.group(1)):
            return  # parenthesised implicit concatenation or the like: leave it
        quote = m.group(1)
        inner = text[m.end():len(text) - len(quote)]
        new = text[:m.end()] + b"XX" + inner + b"XX" + quote
        shown = inner.decode()
        shown = shown if len(shown) <= 30 else shown[:27] + "..."
        yield start, end, new.decode(), f"string {shown!r} -> 'XX...XX'", "string"


def _is_docstring(s: ast.stmt) -> bool:
    return (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)
            and isinstance(s.value.value, str))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def mutants_of(path: str, source: bytes, kinds: set[str] | None = None) -> list[Mutant]:
    """Every mutant of one module, named by what it is: the same code gives the same names."""
    collector = _Collector(path, source)
    found = [m for m in collector.run() if kinds is None or m.kind in kinds]
    # Syntax is checked on the top-level statement a mutant is in: the whole
    # file for each would take longer than the rest of the listing together.
    tops = [(collector.offset(min([t.lineno, *(d.lineno for d in
                                               getattr(t, "decorator_list", []))]), 0),
             collector.offset(t.end_lineno, t.end_col_offset)) for t in collector.tree.body]
    code = code_lines(source)
    seen: dict[tuple[str, str, str], int] = defaultdict(int)
    out = []
    for m in sorted(found, key=lambda m: (m.start, m.end, m.desc)):
        lo, hi = next(t for t in tops if t[0] <= m.start and m.end <= t[1])
        try:
            ast.parse(source[lo:m.start] + m.replacement.encode() + source[m.end:hi])
        except SyntaxError:
            continue
        # Named by the line's code, not its number: an edit elsewhere keeps the name.
        m.code = code[m.line - 1]
        seen[(m.qualname, m.code, m.desc)] += 1
        m.occurrence = seen[(m.qualname, m.code, m.desc)]
        m.id = hashlib.sha1("\0".join(map(str, m.key)).encode()).hexdigest()[:8]
        out.append(m)
    return out


def code_lines(source: bytes) -> list[str]:
    """Each line of ``source`` stripped and without its comment: a comment edit renames nothing."""
    lines = [ln.decode(errors="replace") for ln in source.splitlines()]
    with contextlib.suppress(tokenize.TokenError, SyntaxError):
        for tok in tokenize.tokenize(io.BytesIO(source).readline):
            if tok.type == tokenize.COMMENT and tok.start[0] <= len(lines):
                row, col = tok.start
                lines[row - 1] = lines[row - 1][:col]
    return [ln.strip() for ln in lines]


def module_path(name: str) -> str | None:
    """``run/reduce``, ``run.reduce``, ``run/reduce.py`` or ``ezpz_amsc/run/reduce.py`` -> the
    repository path."""
    p = f"{PACKAGE}/{module_name(name)}.py"
    return p if (REPO / p).is_file() else None


def module_name(name: str) -> str:
    """A module as the command line and the equivalents file name it: ``run/reduce``."""
    return name.removeprefix(f"{PACKAGE}/").removesuffix(".py").replace(".", "/")


# --- the equivalents file: each equivalent mutant named by what it is -------------------------

# An entry is a block of fields, one a line, blocks separated by blank lines:
#
#     module:   run/reduce
#     function: trend
#     code:     if n <= width:
#     mutation: `<=` -> `<`
#     why:      at n == width the bucketed branch gives the same points
#
# A value is the rest of its line, taken whole (code may hold any character);
# only why: goes on over indented lines. occurrence: N (N >= 2) picks the Nth
# such mutation, in source order, when the function holds the same one on the
# same code more than once. A line that starts with # is a comment.
_FIELDS = ("module", "function", "code", "mutation", "occurrence", "why")
_REQUIRED = ("module", "function", "code", "mutation", "why")
_SHOWN = 6  # candidates a stale entry's message shows
_FIELD_LINE = re.compile(r"([A-Za-z_]+):(?:[ \t]+(.*))?")


@dataclass
class Entry:
    module: str  # as the command line names it: run/reduce
    function: str
    code: str
    mutation: str
    why: str
    occurrence: int = 1
    line: int = 0  # where the entry starts in the file
    lines: dict[str, int] = field(default_factory=dict)  # each field's line in the file

    @property
    def key(self) -> tuple[str, str, str, str, int]:
        return (self.module, self.function, self.code, self.mutation, self.occurrence)


@dataclass
class Equivalents:
    entries: list[Entry] = field(default_factory=list)
    name: str = "tools/mutation-equivalents.txt"  # how messages name the file

    def __post_init__(self) -> None:
        self.by_key = {e.key: e for e in self.entries}

    def entry(self, m: Mutant) -> Entry | None:
        return self.by_key.get(m.key)

    def where(self, e: Entry) -> str:
        return f"{self.name}:{e.line}"


def read_equivalents(path: Path) -> Equivalents:
    """The entries of an equivalents file; an error names the file line that is wrong."""
    name = str(path.relative_to(REPO)) if path.is_relative_to(REPO) else path.name
    if not path.is_file():
        return Equivalents([], name)
    return parse_equivalents(path.read_text(encoding="utf-8"), name)


def parse_equivalents(text: str, name: str) -> Equivalents:
    entries: list[Entry] = []
    by_key: dict[tuple, Entry] = {}
    block: dict[str, tuple[int, str]] = {}

    def fail(n: int, message: str) -> None:
        raise SystemExit(f"error: {name}:{n}: {message}")

    def close() -> None:
        if not block:
            return
        first = min(n for n, _ in block.values())
        missing = [f"{f}:" for f in _REQUIRED if f not in block]
        if missing:
            fail(first, f"the entry lacks {', '.join(missing)} (see the top of the file)")
        occurrence = 1
        if "occurrence" in block:
            n, value = block["occurrence"]
            if not value.isdigit() or int(value) < 1:
                fail(n, f"occurrence: must be a whole number from 1 up, not {value!r}")
            occurrence = int(value)
        e = Entry(module_name(block["module"][1]), block["function"][1], block["code"][1],
                  block["mutation"][1], block["why"][1], occurrence, first,
                  {f: n for f, (n, _) in block.items()})
        if e.key in by_key:
            fail(first, f"the same mutant as the entry at line {by_key[e.key].line}")
        by_key[e.key] = e
        entries.append(e)
        block.clear()

    last = ""
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        if not line:
            close()
            last = ""
            continue
        if line.startswith("#"):
            continue
        if line[0] in " \t":
            if last != "why":
                fail(n, "an indented line goes on with the why: above it, and only with a why:")
            n0, value = block["why"]
            block["why"] = (n0, f"{value} {line.strip()}")
            continue
        m = _FIELD_LINE.fullmatch(line)
        if m is None:
            fail(n, "expected 'FIELD: VALUE', one of " + ", ".join(_FIELDS)
                 + " (see the top of the file)")
        key, value = m.group(1), (m.group(2) or "").strip()
        if key not in _FIELDS:
            fail(n, f"no field {key}: (the fields are {', '.join(_FIELDS)})")
        if key in block:
            fail(n, f"{key}: given twice in one entry (also at line {block[key][0]}); "
                 "a blank line ends an entry")
        if not value:
            fail(n, f"{key}: is empty")
        block[key] = (n, value)
        last = key
    close()
    return Equivalents(entries, name)


def entry_text(m: Mutant, why: str) -> str:
    """The entry that lists ``m`` as equivalent, as the file holds it."""
    fields = [("module", m.module), ("function", m.qualname), ("code", m.code),
              ("mutation", m.desc)]
    if m.occurrence > 1:
        fields.append(("occurrence", str(m.occurrence)))
    return "".join(_field_line(f, v).rstrip() + "\n" for f, v in [*fields, ("why", why)])


def _field_line(name: str, value: str) -> str:
    return f"{name + ':':<10}{value}" if len(name) < 9 else f"{name}: {value}"


@dataclass
class Stale:
    """An entry no current mutant matches, and the mutants it may have become."""
    entry: Entry
    path: str  # the module's file, ezpz_amsc/run/reduce.py
    module_exists: bool
    # The entry's mutation in the entry's function, or on the entry's code,
    # the closest code first.
    candidates: list[Mutant] = field(default_factory=list)

    def successor(self, eq: Equivalents) -> Mutant | None:
        """The one unlisted candidate whose code is close to the entry's, if exactly one is."""
        close = [m for m in self.candidates
                 if eq.entry(m) is None and _likeness(m.code, self.entry.code) >= _CLOSE]
        if len(close) > 1:  # a renamed function: the same code, the same occurrence
            close = [m for m in close if (m.code, m.occurrence) == (self.entry.code,
                                                                   self.entry.occurrence)]
        return close[0] if len(close) == 1 else None


# How alike an edited line must stay to its old code for --refresh-equivalents to
# take it for the same line (difflib's ratio: 1.0 the same, 0.6 a few words changed).
_CLOSE = 0.6


def _likeness(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()


def stale_entries(eq: Equivalents, sources: dict[str, bytes],
                  modules: Iterable[str] | None = None) -> list[Stale]:
    """The entries (of ``modules``, or all) that name no mutant of today's code."""
    wanted = None if modules is None else {module_name(x) for x in modules}
    found: dict[str, list[Mutant]] = {}
    out = []
    for e in eq.entries:
        if wanted is not None and e.module not in wanted:
            continue
        path = f"{PACKAGE}/{e.module}.py"
        if path not in sources:
            out.append(Stale(e, path, False))
            continue
        if path not in found:
            found[path] = mutants_of(path, sources[path])
        ms = found[path]
        if any(m.key == e.key for m in ms):
            continue
        near = [m for m in ms if m.desc == e.mutation and (
            m.qualname == e.function or m.code == e.code)]
        near.sort(key=lambda m: -_likeness(m.code, e.code))
        out.append(Stale(e, path, True, near))
    return out


def stale_message(s: Stale, eq: Equivalents) -> str:
    """What a stale entry named, what is there now, and how to bring the entry up to date."""
    e = s.entry
    out = [f"{eq.where(e)}: this entry names no mutant of {e.module} any more:",
           *("    " + _field_line(f, str(getattr(e, f))) for f in _FIELDS
             if f not in ("why", "occurrence") or (f == "occurrence" and e.occurrence > 1))]
    listing = f"python tools/mutate.py --list {e.module}"
    if not s.module_exists:
        out += [f"  there is no {s.path}: the code moved or went. Set module: (and function:)",
                "  to where it is now (docs/layout.md) and check the mutant survives there,",
                "  or remove the entry."]
        return "\n".join(out)
    if not s.candidates:
        out += [f"  {e.module} has that mutation neither in {e.function} nor on that code now:",
                f"  the code changed or went. Find the mutant with `{listing}`",
                "  and edit the entry, or remove it."]
        return "\n".join(out)
    out.append(f"  that mutation in {e.function}, or on that code, is now at:")
    for m in s.candidates[:_SHOWN]:
        other = eq.entry(m)
        notes = [f"occurrence {m.occurrence}"] if m.occurrence > 1 else []
        notes += [f"listed by {eq.where(other)}"] if other else []
        out.append(f"    {m.path}:{m.line}  {m.qualname}: {m.code}"
                   + (f"  ({'; '.join(notes)})" if notes else ""))
    if len(s.candidates) > _SHOWN:
        out.append(f"    and {len(s.candidates) - _SHOWN} more, less like it")
    successor = s.successor(eq)
    if successor is not None:
        out += [f"  if the mutant at line {successor.line} is still equivalent, refresh the entry:",
                f"    python tools/mutate.py --refresh-equivalents {e.module}",
                "  (it runs that mutant and, if no test kills it, rewrites the entry's",
                "  function:, code: and occurrence: to match it); else remove the entry."]
    else:
        out += ["  edit the entry's function:, code: (and occurrence:) to the one it became,",
                f"  then run it: python tools/mutate.py --only ID {e.module}",
                f"  (`{listing}` shows the ids); or remove the entry."]
    return "\n".join(out)


def rewrite_entries(text: str, changes: list[tuple[Entry, Mutant]]) -> str:
    """``text`` with each entry's function:, code: and occurrence: set to its new mutant's.

    Only those lines change: the comments, the why: and every other entry stay as written.
    """
    lines = text.split("\n")
    edits: list[tuple[int, str | None, bool]] = []  # (line, new text or None, insert after)
    for e, m in changes:
        edits += [(e.lines["function"], _field_line("function", m.qualname), False),
                  (e.lines["code"], _field_line("code", m.code), False)]
        occurrence = _field_line("occurrence", str(m.occurrence)) if m.occurrence > 1 else None
        if "occurrence" in e.lines:
            edits.append((e.lines["occurrence"], occurrence, False))
        elif occurrence:
            edits.append((e.lines["mutation"], occurrence, True))
    for n, new, after in sorted(edits, key=lambda x: (x[0], x[2]), reverse=True):
        if after:
            lines.insert(n, new)
        elif new is None:
            del lines[n - 1]
        else:
            lines[n - 1] = new
    return "\n".join(lines)


def refresh_equivalents(path: Path, sources: dict[str, bytes], modules: Iterable[str] | None,
                        run: Callable[[list[Mutant]], list[Outcome]]) -> tuple[str, int]:
    """Point each stale entry that has exactly one candidate at it, if no test kills it.

    Returns what was done, for the terminal, and the exit status: 0 when no
    entry (of ``modules``) is left stale.
    """
    eq = read_equivalents(path)
    stale = stale_entries(eq, sources, modules)
    if not stale:
        return "every entry names a current mutant: nothing to refresh\n", 0
    plan = [(s.entry, m) for s in stale if (m := s.successor(eq)) is not None]
    # Two stale entries may have the same one candidate: neither is refreshed.
    counts: dict[str, int] = defaultdict(int)
    for _, m in plan:
        counts[m.id] += 1
    plan = [(e, m) for e, m in plan if counts[m.id] == 1]
    outcomes = {o.mutant.id: o for o in run([m for _, m in plan])} if plan else {}
    done, out = [], []
    for e, m in plan:
        o = outcomes.get(m.id)
        where = f"{eq.where(e)} ({e.module}, {e.function})"
        if o is not None and o.status in ("survived", "no-tests"):
            done.append((e, m))
            out.append(f"{where}: refreshed to {m.path}:{m.line}  {m.qualname}: {m.code}"
                       + ("  (no test runs this line)" if o.status == "no-tests" else ""))
        elif o is not None and o.status == "killed":
            out.append(f"{where}: its mutant at {m.path}:{m.line} is killed by {o.killer}: "
                       "it is not equivalent any more; remove the entry")
        else:
            out.append(f"{where}: could not run its mutant at {m.path}:{m.line} ("
                       + (o.status if o else "not run") + "); the entry is left as it is")
    if done:
        path.write_text(rewrite_entries(path.read_text(encoding="utf-8"), done),
                        encoding="utf-8")
    refreshed = {id(e) for e, _ in done}
    left = [s for s in stale if id(s.entry) not in refreshed]
    chosen = {id(e) for e, _ in plan}
    out += [stale_message(s, eq) for s in left if id(s.entry) not in chosen]
    return "\n".join(out) + "\n", 1 if left else 0


# --- which tests run a line: per-test coverage, cached per test file --------------------------

def _digest(paths: Iterable[Path]) -> str:
    h = hashlib.sha256(CACHE_VERSION.encode())
    for p in sorted(paths):
        h.update(str(p.relative_to(REPO)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _coverage_keys(max_examples: int) -> dict[str, str]:
    """Per test file, the key its cached coverage is valid for: its text, helpers, the package."""
    common = _digest([*REPO.glob(f"{PACKAGE}/**/*.py"),
                      *(p for p in REPO.glob("tests/*.py") if not p.name.startswith("test_"))])
    common += str(max_examples)
    return {str(p.relative_to(REPO)): hashlib.sha256((common + p.read_text()).encode()).hexdigest()
            for p in sorted(REPO.glob("tests/**/test_*.py"))}


def _coverage_file(test_file: str) -> str:
    """tests/run/test_steps.py -> tests.run.test_steps.json: test files in two folders may
    share a name."""
    return test_file.removesuffix(".py").replace("/", ".") + ".json"


@dataclass
class TestInfo:
    duration: float
    lines: dict[str, list[int]]  # path -> lines it executed (in-process and in subprocesses)


def load_coverage(pool: Pool, log: Log, max_examples: int) -> dict[str, TestInfo]:
    """Every test's duration and lines; test files whose key changed are measured again."""
    keys = _coverage_keys(max_examples)
    folder = CACHE / "coverage"
    folder.mkdir(parents=True, exist_ok=True)
    tests: dict[str, TestInfo] = {}
    stale = []
    for test_file, key in keys.items():
        cached = folder / _coverage_file(test_file)
        data = json.loads(cached.read_text()) if cached.is_file() else {}
        if data.get("key") != key:
            stale.append(test_file)
            continue
        tests.update({t: TestInfo(**info) for t, info in data["tests"].items()})
    if stale:
        log.say(f"measuring per-test coverage of {len(stale)} test files "
                f"(the baseline: every test must pass unmutated)")
        t0 = time.monotonic()
        stale.sort(key=lambda f: -(REPO / f).stat().st_size)  # the long ones first
        results = pool.map([{"mode": "coverage", "files": [f], "max_examples": max_examples}
                            for f in stale])
        failed, logs = [], []
        for test_file, res in zip(stale, results, strict=True):
            if res.get("error"):
                raise SystemExit(f"error: coverage run of {test_file} failed: {res['error']}")
            bad = [t for t, info in res["tests"].items() if info["failed"]]
            if bad:  # not cached: the next run measures this file again
                failed += bad
                logs.append(res["log"])
                continue
            infos = {t: {"duration": info["duration"], "lines": info["lines"]}
                     for t, info in res["tests"].items()}
            (folder / _coverage_file(test_file)).write_text(
                json.dumps({"key": keys[test_file], "tests": infos}))
            tests.update({t: TestInfo(**i) for t, i in infos.items()})
        if failed:
            raise SystemExit("\n".join(logs) + "\nerror: these tests fail unmutated; fix them "
                             "first:\n  " + "\n  ".join(failed))
        log.say(f"coverage measured in {time.monotonic() - t0:.0f}s")
    return tests


class Selector:
    """Orders the tests for a mutant: past killers nearby first, then the fastest."""

    def __init__(self, tests: dict[str, TestInfo], sources: dict[str, bytes]) -> None:
        self.tests = tests
        self.by_line: dict[str, dict[int, set[str]]] = defaultdict(lambda: defaultdict(set))
        for t, info in tests.items():
            for path, lines in info.lines.items():
                for ln in lines:
                    self.by_line[path][ln].add(t)
        self.users = _users_of_names(sources)
        self.killers: dict[tuple[str, str], list[str]] = defaultdict(list)
        self.lock = threading.Lock()

    def select(self, m: Mutant) -> list[str]:
        chosen: set[str] = set()
        if not m.def_time:
            for ln in range(m.lines[0], m.lines[1] + 1):
                chosen |= self.by_line.get(m.path, {}).get(ln, set())
        else:
            for name in m.defines:
                for path, first, last in self.users.get(name, ()):
                    for ln in range(first, last + 1):
                        chosen |= self.by_line.get(path, {}).get(ln, set())
            if not chosen:  # used by nothing found: every test that runs this module
                chosen = set().union(*self.by_line.get(m.path, {}).values())
            # A value set at import reaches tests by ways coverage does not see (a
            # test reading the constant, a click default built from it): the
            # tests of the module's own test file run too.
            mirror = mirror_test_file(m.path) + "::"
            chosen |= {t for t in self.tests if t.startswith(mirror)}
        with self.lock:
            near = (self.killers[(m.path, str(m.line))] + self.killers[(m.path, m.qualname)])
        first = list(dict.fromkeys(t for t in reversed(near) if t in chosen))
        rest = sorted(chosen - set(first), key=lambda t: (self.tests[t].duration, t))
        return first + rest

    def killed_by(self, m: Mutant, test: str) -> None:
        with self.lock:
            for key in ((m.path, str(m.line)), (m.path, m.qualname)):
                if test in self.killers[key]:
                    self.killers[key].remove(test)
                self.killers[key].append(test)


def mirror_test_file(path: str) -> str:
    """The test file of a module (docs/layout.md): ezpz_amsc/run/reduce.py ->
    tests/run/test_reduce.py, ezpz_amsc/options.py -> tests/test_options.py."""
    folder, _, name = module_name(path).rpartition("/")
    return f"tests/{folder + '/' if folder else ''}test_{name}.py"


def _users_of_names(sources: dict[str, bytes]) -> dict[str, list[tuple[str, int, int]]]:
    """Name -> the lines of every statement in a package function that refers to it.

    A function's own name maps to its whole body: its defaults and decorators
    act on every call. A class's name maps to its methods' bodies.
    """
    users: dict[str, list[tuple[str, int, int]]] = defaultdict(list)
    for path, source in sources.items():
        for fn in ast.walk(ast.parse(source)):
            # A class's decorators and bases act on every instance: its methods' tests.
            if isinstance(fn, ast.ClassDef):
                users[fn.name] += [(path, m.body[0].lineno, m.body[-1].end_lineno)
                                   for m in fn.body
                                   if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.body:
                continue
            users[fn.name].append((path, fn.body[0].lineno, fn.body[-1].end_lineno))
            for s in ast.walk(fn):
                if not isinstance(s, (ast.stmt, ast.ExceptHandler)) or s is fn:
                    continue
                own = [v for k, v in ast.iter_fields(s)
                       if k not in ("body", "orelse", "finalbody", "handlers")]
                names = {n.id if isinstance(n, ast.Name) else n.attr
                         for v in own for x in (v if isinstance(v, list) else [v])
                         if isinstance(x, ast.AST) for n in ast.walk(x)
                         if isinstance(n, (ast.Name, ast.Attribute))}
                span = (path, *_selection_lines(s))
                for name in names:
                    users[name].append(span)
    return users


def _selection_lines(s: ast.stmt | ast.ExceptHandler) -> tuple[int, int]:
    """The lines coverage marks when ``s`` itself runs: a compound statement's header only."""
    if isinstance(s, _COMPOUND) and getattr(s, "body", None):
        return s.lineno, max(s.lineno, s.body[0].lineno - 1)
    return s.lineno, s.end_lineno


# --- workers: a private copy of the repository each, a forked pytest per mutant ---------------

class Log:
    def __init__(self, quiet: bool = False) -> None:
        self.quiet = quiet
        self.lock = threading.Lock()

    def say(self, text: str) -> None:
        if not self.quiet:
            with self.lock:
                print(text, file=sys.stderr, flush=True)


class Pool:
    """``jobs`` worker processes; each job is one JSON line in, one JSON line out."""

    def __init__(self, jobs: int, workdir: Path) -> None:
        self.workers = []
        self.stopping = threading.Event()
        workdir.chmod(0o755)  # tests that act as a second user read the copy too
        for i in range(jobs):
            tree = workdir / f"w{i}" / "repo"
            shutil.copytree(REPO, tree, ignore=_NOT_COPIED, symlinks=True)
            (tree / "sitecustomize.py").write_text(_SITECUSTOMIZE)
            env = {**os.environ, "CI": "1", "OPENBLAS_NUM_THREADS": "1",
                   "PYTHONPATH": os.pathsep.join(
                       [str(tree), *filter(None, [os.environ.get("PYTHONPATH")])])}
            env.pop("PYTHONDONTWRITEBYTECODE", None)  # private copy: cache what it compiles
            env.pop("HYPOTHESIS_PROFILE", None)
            env.pop("EZPZ_AMSC_JSON", None)
            self.workers.append(subprocess.Popen(
                [sys.executable, str(tree / "tools" / "mutate.py"), "--worker", str(tree)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=tree, env=env))

    def ask(self, i: int, job: dict) -> dict:
        w = self.workers[i]
        w.stdin.write(json.dumps(job) + "\n")
        w.stdin.flush()
        line = w.stdout.readline()
        if not line:
            raise RuntimeError(f"worker {i} died")
        return json.loads(line)

    def each(self, items: Sequence[T], fn: Callable[[int, T], None]) -> None:
        """``fn(worker, item)`` for every item, each worker taking the next one left."""
        todo: queue.Queue[T] = queue.Queue()
        for x in items:
            todo.put(x)

        def drain(i: int) -> None:
            while not self.stopping.is_set():
                try:
                    x = todo.get_nowait()
                except queue.Empty:
                    return
                try:
                    fn(i, x)
                except (RuntimeError, OSError, ValueError):
                    if not self.stopping.is_set():  # a worker ended because we stop
                        raise

        threads = [threading.Thread(target=drain, args=(i,), daemon=True)
                   for i in range(len(self.workers))]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():  # a timed join lets Ctrl-C (and SIGTERM) through
                t.join(0.5)

    def map(self, jobs: list[dict]) -> list[dict]:
        """Run ``jobs`` spread over the workers; results in the order given."""
        out: list[dict] = [{} for _ in jobs]

        def one(i: int, k: int) -> None:
            out[k] = self.ask(i, jobs[k])

        self.each(range(len(jobs)), one)
        return out

    def stop(self) -> None:
        """Stop now: no new job, and each worker kills the mutant it is running."""
        self.stopping.set()
        for w in self.workers:
            w.terminate()
        for w in self.workers:
            w.wait()

    def close(self) -> None:
        for w in self.workers:
            with contextlib.suppress(OSError):
                w.stdin.close()
        for w in self.workers:
            try:
                w.wait(timeout=10)
            except subprocess.TimeoutExpired:
                w.terminate()
                w.wait()


def worker_main(tree: Path) -> None:
    """Serve jobs from stdin. Single-threaded, so forking a child per job is safe."""
    for name in _PRELOAD:
        with contextlib.suppress(ImportError):
            __import__(name)
    os.chdir(tree)
    sys.path.insert(0, str(tree))
    state = {"child": 0, "mtime": int(time.time()) + 10}

    def stop(signum: int, frame: object) -> None:
        if state["child"]:
            with contextlib.suppress(OSError):
                os.killpg(state["child"], signal.SIGKILL)
        os._exit(1)

    signal.signal(signal.SIGTERM, stop)
    for line in sys.stdin:
        job = json.loads(line)
        result = _serve(tree, job, state)
        sys.stdout.write(json.dumps(result) + "\n")
        sys.stdout.flush()


def _serve(tree: Path, job: dict, state: dict) -> dict:
    target = tree / job["path"] if job.get("source") is not None else None
    original = target.read_bytes() if target else b""
    try:
        if target:
            _write(target, job["source"].encode(), state)
        return _fork(tree, job, state)
    finally:
        if target:
            _write(target, original, state)


def _write(path: Path, data: bytes, state: dict) -> None:
    # A .pyc is trusted while the source's size and whole-second mtime match it:
    # every version of the file gets an mtime of its own, so none is ever stale.
    path.write_bytes(data)
    state["mtime"] += 1
    os.utime(path, (state["mtime"], state["mtime"]))


def _fork(tree: Path, job: dict, state: dict) -> dict:
    out = tree.parent / "result.json"
    with contextlib.suppress(FileNotFoundError):
        out.unlink()
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:  # the child: run pytest, never return
        code = 3
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.setpgid(0, 0)
            log = os.open(tree.parent / "pytest.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            code = _child(tree, job, out)
        except BaseException:
            import traceback

            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    state["child"] = pid
    status, timed_out = _wait(pid, job.get("timeout"))
    state["child"] = 0
    with contextlib.suppress(OSError):
        os.killpg(pid, signal.SIGKILL)  # whatever a test left running
    result = json.loads(out.read_text()) if out.is_file() else {}
    if any(t["failed"] for t in result.get("tests", {}).values()):
        result["log"] = (tree.parent / "pytest.log").read_text()[-6000:]
    result.update(secs=round(time.monotonic() - t0, 2), timed_out=timed_out,
                  exit=os.waitstatus_to_exitcode(status) if not timed_out else None)
    # In a run, 2 is a collection error the mutant caused (the baseline collected
    # clean), so selected tests are missing for a reason: a kill; so is 4 when the
    # mutant broke an import of tests/conftest.py (a constant the helpers read at
    # import). Tests missing from a passing run mean the coverage map no longer
    # matches the tests.
    fine = (0, 1, 2) if job["mode"] == "run" else (0, 1)
    if (job["mode"] == "run" and result.get("exit") == 4 and "while loading conftest"
            in (tree.parent / "pytest.log").read_text(errors="replace")):
        fine = (4,)
    if not timed_out and (result["exit"] not in fine
                          or (result["exit"] == 0 and result.get("missing"))):
        result["error"] = (f"pytest exit {result['exit']}, missing {result.get('missing')}: "
                           + (tree.parent / "pytest.log").read_text()[-2000:])
    return result


def _wait(pid: int, timeout: float | None) -> tuple[int, bool]:
    fd = os.pidfd_open(pid)
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
    finally:
        os.close(fd)
    if not ready:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        return os.waitpid(pid, 0)[1], True
    return os.waitpid(pid, 0)[1], False


def _child(tree: Path, job: dict, out: Path) -> int:
    import pytest

    plugin = _Plugin(job, out, tree)
    files = job.get("files") or list(dict.fromkeys(t.split("::")[0] for t in job["tests"]))
    args = [*files, "-q", "-p", "no:cacheprovider", "--tb=short",
            f"--basetemp={tree.parent / 't'}"]
    if job["mode"] == "run":
        args.append("-x")
    return int(pytest.main(args, plugins=[plugin]))


class _Plugin:
    """Inside the child: keeps only the chosen tests, in order; records outcomes and coverage."""

    def __init__(self, job: dict, out: Path, tree: Path) -> None:
        self.job, self.out, self.tree = job, out, tree
        self.tests: dict[str, dict] = {}
        self.killer: str | None = None
        self.missing: list[str] = []
        self.cov = None
        if job["mode"] == "coverage":
            import coverage

            self.subdir = tree.parent / "subcov"
            shutil.rmtree(self.subdir, ignore_errors=True)
            self.subdir.mkdir()
            self.subdir.chmod(0o1777)  # a test may run the CLI as another user
            os.environ["MUTATE_COV_DIR"] = str(self.subdir)
            self.cov = coverage.Coverage(data_file=None, config_file=False,
                                         source=[str(tree / PACKAGE)])
            self.cov.start()

    def pytest_configure(self, config: object) -> None:
        # A failing example is a kill as found: shrinking it to the smallest only
        # costs time. The fuzz tests would take most of every survivor's time at
        # their full count; the first examples find what a one-token bug breaks.
        from hypothesis import Phase, settings

        cap = min(settings.default.max_examples, self.job["max_examples"])
        settings.register_profile("mutate", settings.default, max_examples=cap,
                                  phases=(Phase.explicit, Phase.reuse, Phase.generate))
        settings.load_profile("mutate")

    def pytest_collection_modifyitems(self, session: object, config: object,
                                      items: list) -> None:
        if self.job["mode"] != "run":
            return
        by_id = {it.nodeid: it for it in items}
        self.missing = [t for t in self.job["tests"] if t not in by_id]
        keep = [by_id[t] for t in self.job["tests"] if t in by_id]
        chosen = set(self.job["tests"])
        config.hook.pytest_deselected(items=[it for it in items if it.nodeid not in chosen])
        items[:] = keep

    def pytest_runtest_protocol(self, item: object, nextitem: object) -> None:
        if self.cov is not None:
            self.cov.switch_context(item.nodeid)
            os.environ["MUTATE_COV_CONTEXT"] = item.nodeid

    def pytest_runtest_logreport(self, report: object) -> None:
        t = self.tests.setdefault(report.nodeid, {"duration": 0.0, "failed": False})
        t["duration"] += report.duration
        if report.failed:
            t["failed"] = True
            self.killer = self.killer or report.nodeid

    def pytest_sessionfinish(self, session: object, exitstatus: int) -> None:
        result = {"killer": self.killer, "ran": len(self.tests), "missing": self.missing}
        if self.cov is not None:
            self.cov.stop()
            lines = self._lines([self.cov.get_data()])
            import coverage

            subs = []
            for f in self.subdir.glob("sub.*"):
                d = coverage.CoverageData(basename=str(f))
                d.read()
                subs.append(d)
            for t, extra in self._lines(subs).items():
                for path, ls in extra.items():
                    lines.setdefault(t, {}).setdefault(path, set()).update(ls)
            for t, info in self.tests.items():
                info["duration"] = round(info["duration"], 4)
                info["lines"] = {p: sorted(ls) for p, ls in lines.get(t, {}).items()}
            result["tests"] = self.tests
        self.out.write_text(json.dumps(result))

    def _lines(self, datas: list) -> dict[str, dict[str, set[int]]]:
        per_test: dict[str, dict[str, set[int]]] = defaultdict(lambda: defaultdict(set))
        for data in datas:
            for f in data.measured_files():
                path = os.path.relpath(f, self.tree)
                for ln, contexts in data.contexts_by_lineno(f).items():
                    for c in contexts:
                        if c:
                            per_test[c][path].add(ln)
        return per_test


# --- the run ----------------------------------------------------------------------------------

@dataclass
class Outcome:
    mutant: Mutant
    status: str  # killed, timeout, survived, no-tests, equivalent (survived, listed), error
    killer: str | None = None
    tests_run: int = 0
    secs: float = 0.0
    detail: str = ""
    cached: bool = False  # the outcome of an earlier run that still holds


def run_mutants(pool: Pool, selector: Selector, mutants: list[Mutant], sources: dict[str, bytes],
                log: Log, max_examples: int, cache: OutcomeCache) -> list[Outcome]:
    outcomes: list[Outcome] = []
    lock = threading.Lock()
    t0 = time.monotonic()
    shown = [t0]

    def one(i: int, m: Mutant) -> None:
        key = cache.key(m, selector.select(m))
        hit = cache.get(key)
        if hit:
            o = Outcome(m, hit["status"], killer=hit["killer"], cached=True)
        else:
            o = _one(pool, i, selector, m, sources[m.path], max_examples)
            cache.put(key, o)
        with lock:
            outcomes.append(o)
            now = time.monotonic()
            if now - shown[0] > 30 or len(outcomes) == len(mutants):
                shown[0] = now
                cache.save()  # an interrupted run keeps what it found
                done = len(outcomes)
                left = (now - t0) / done * (len(mutants) - done)
                alive = sum(x.status in ("survived", "no-tests") for x in outcomes)
                log.say(f"  {done}/{len(mutants)} mutants, {alive} not killed, "
                        f"{now - t0:.0f}s, about {left:.0f}s left")

    try:
        pool.each(mutants, one)
    except KeyboardInterrupt:
        log.say(f"interrupted: reporting the {len(outcomes)} mutants run so far")
        pool.stop()
    with lock:
        return sorted(outcomes, key=lambda o: (o.mutant.path, o.mutant.start, o.mutant.desc))


def _one(pool: Pool, i: int, selector: Selector, m: Mutant, source: bytes,
         max_examples: int) -> Outcome:
    tests = selector.select(m)
    if not tests:
        return Outcome(m, "no-tests")
    ran, secs = 0, 0.0
    for stage in _stages(tests):
        expected = sum(selector.tests[t].duration for t in stage)
        job = {"mode": "run", "path": m.path, "source": m.apply(source).decode(),
               "tests": stage, "timeout": 3 * expected + 30, "max_examples": max_examples}
        res = pool.ask(i, job)
        secs += res["secs"]
        if res.get("timed_out"):
            return Outcome(m, "timeout", tests_run=ran + len(stage), secs=secs)
        if res.get("error"):
            return Outcome(m, "error", secs=secs, detail=res["error"])
        ran += res.get("ran", 0)  # none when the conftest import failed
        if res["exit"] != 0:
            killer = res.get("killer")
            if killer:
                selector.killed_by(m, killer)
            return Outcome(m, "killed", killer=killer or "(collection)", tests_run=ran,
                           secs=secs)
    return Outcome(m, "survived", tests_run=ran, secs=secs)


def _stages(tests: list[str], files: int = 2) -> list[list[str]]:
    """The tests of the first two test files, then the rest.

    Most mutants die in the first few tests: collecting two files for them
    instead of the twenty a central line needs halves what a kill costs.
    """
    first = list(dict.fromkeys(t.split("::")[0] for t in tests))[:files]
    early = [t for t in tests if t.split("::")[0] in first]
    late = [t for t in tests if t.split("::")[0] not in first]
    return [early, late] if late else [early]


class OutcomeCache:
    """Outcomes of earlier runs, valid while the package, the tests run and the helpers match."""

    def __init__(self, sources: dict[str, bytes], max_examples: int, fresh: bool) -> None:
        self.path = CACHE / "outcomes.json"
        self.base = _digest(REPO.glob(f"{PACKAGE}/**/*.py")) + _digest(
            p for p in REPO.glob("tests/*.py") if not p.name.startswith("test_")) + str(
            max_examples)
        self.files = {str(p.relative_to(REPO)): hashlib.sha256(p.read_bytes()).hexdigest()
                      for p in REPO.glob("tests/**/test_*.py")}
        self.known = {} if fresh or not self.path.is_file() else json.loads(
            self.path.read_text())
        self.lock = threading.Lock()

    def key(self, m: Mutant, tests: list[str]) -> str:
        files = sorted({t.split("::")[0] for t in tests})
        text = "\0".join([self.base, m.id, m.replacement, *sorted(tests),
                          *(self.files.get(f, "") for f in files)])
        return hashlib.sha256(text.encode()).hexdigest()

    def get(self, key: str) -> dict | None:
        with self.lock:
            return self.known.get(key)

    def put(self, key: str, o: Outcome) -> None:
        if o.status in ("killed", "survived"):  # a timeout may be the machine's load
            with self.lock:
                self.known[key] = {"status": o.status, "killer": o.killer}

    def save(self) -> None:
        CACHE.mkdir(exist_ok=True)
        with self.lock:
            self.path.write_text(json.dumps(self.known))


# --- the report -------------------------------------------------------------------------------

def summarize(outcomes: list[Outcome], eq: Equivalents) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for o in outcomes:
        row = table.setdefault(o.mutant.path, dict.fromkeys(
            ("mutants", "killed", "timeout", "survived", "no-tests", "equivalent", "error"), 0))
        row["mutants"] += 1
        listed = eq.entry(o.mutant) is not None
        row["equivalent" if listed and o.status in ("survived", "no-tests") else o.status] += 1
    return table


def score_pct(row: dict[str, int]) -> float | None:
    real = row["mutants"] - row["equivalent"] - row["error"]
    return 100.0 * (row["killed"] + row["timeout"]) / real if real else None


def report(outcomes: list[Outcome], eq: Equivalents, sources: dict[str, bytes],
           header: str) -> str:
    table = summarize(outcomes, eq)
    out = [header, ""]
    cols = ("mutants", "killed", "timeout", "survived", "no-tests", "equivalent")
    out.append(f"{'module':<28}" + "".join(f"{c:>11}" for c in cols) + f"{'score':>9}")
    total = dict.fromkeys((*cols, "error"), 0)
    for path, row in sorted(table.items()):
        s = score_pct(row)
        out.append(f"{path:<28}" + "".join(f"{row[c]:>11}" for c in cols)
                   + (f"{s:>8.1f}%" if s is not None else f"{'-':>9}"))
        for c in total:
            total[c] += row[c]
    s = score_pct(total)
    out.append(f"{'total':<28}" + "".join(f"{total[c]:>11}" for c in cols)
               + (f"{s:>8.1f}%" if s is not None else f"{'-':>9}"))
    out.append("score = (killed + timeout) / (mutants - equivalent)")
    groups = (("survivors", ("survived", "no-tests"), False),
              ("errors (neither killed nor survived: see the detail)", ("error",), None),
              ("equivalent (listed in tools/mutation-equivalents.txt)", ("survived", "no-tests"),
               True))
    for title, statuses, listed in groups:
        chosen = [o for o in outcomes if o.status in statuses
                  and (listed is None or (eq.entry(o.mutant) is not None) == listed)]
        if not chosen:
            continue
        out += ["", f"{title}: {len(chosen)}"]
        for o in chosen:
            m = o.mutant
            tag = " (no test runs this line)" if o.status == "no-tests" else ""
            occurrence = f" (occurrence {m.occurrence})" if m.occurrence > 1 else ""
            out.append(f"  {m.id}  {m.path}:{m.line}  {m.qualname}: {m.desc}{occurrence}{tag}")
            out.append(f"      {m.code}")
            if listed:
                out.append(f"      -- {eq.entry(m).why}")
            if o.detail:
                out.append("      " + o.detail.strip().splitlines()[-1])
    for status, title in (("killed", "listed as equivalent but killed (remove these entries "
                                     "from the file):"),
                          ("timeout", "listed as equivalent but timed out (a loop the mutant "
                                      "made, or a loaded machine: run them again with --only)")):
        listed_out = [o for o in outcomes if eq.entry(o.mutant) is not None
                      and o.status == status]
        if listed_out:
            out += ["", title]
            out += [f"  {eq.where(eq.entry(o.mutant))}  {o.mutant.id}  {o.mutant.path}:"
                    f"{o.mutant.line}  {o.mutant.qualname}: {o.mutant.desc}"
                    + (f", killed by {o.killer}" if o.killer else "") for o in listed_out]
    stale = stale_entries(eq, sources, {o.mutant.module for o in outcomes})
    if stale:
        out += ["", f"stale entries (naming no mutant of these modules): {len(stale)}"]
        out += [stale_message(x, eq) for x in stale]
    return "\n".join(out) + "\n"


def _git(*args: str) -> str:
    with contextlib.suppress(OSError, subprocess.CalledProcessError):
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    return ""


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("modules", nargs="*", help="modules of ezpz_amsc to mutate "
                    f"(default: {' '.join(DEFAULT_MODULES)})")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1; use "
                    "2 on an otherwise idle 2-core machine)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--entries", action="store_true", help="with --list: print each mutant "
                    "as an entry of tools/mutation-equivalents.txt, its why: left to write")
    ap.add_argument("--only", default="", help="comma-separated mutant ids to run")
    ap.add_argument("--kinds", default="", help="comma-separated operator groups "
                    "(compare,arith,const,bool,not,return,string; default all)")
    ap.add_argument("--tests", default="", help="comma-separated test id prefixes: run only "
                    "those tests (tests/run/,tests/test_cases.py); a quick look, whose "
                    "survivors the full selection may still kill")
    ap.add_argument("--json", type=Path, help="also write every outcome to this file")
    ap.add_argument("--max-examples", type=int, default=50, help="cap on each hypothesis "
                    "test's examples (default 50; the suite's own count is 500)")
    ap.add_argument("--recheck-equivalents", action="store_true", help="run the mutants "
                    "listed as equivalent too (default: reported apart without running)")
    ap.add_argument("--refresh-equivalents", action="store_true", help="point each stale "
                    "entry of the equivalents file (of the modules named, or all) at the one "
                    "mutant it became, after running it to check that no test kills it")
    ap.add_argument("--min-score", type=float, help="exit 1 if a module scores below this %%")
    ap.add_argument("--fresh", action="store_true", help="run every mutant again, even "
                    "when an earlier run's outcome still holds (.mutate/outcomes.json)")
    ap.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    return ap


def _module_paths(names: list[str], log: Log) -> list[str] | None:
    """Repository paths of the modules asked for; None (after an error line) if one is not."""
    paths = []
    for name in names or DEFAULT_MODULES:
        p = module_path(name)
        if p is None:
            if names:
                print(f"error: no module {name!r} in {PACKAGE}/", file=sys.stderr)
                return None
            log.say(f"note: no module {name!r} yet; skipped")
            continue
        paths.append(p)
    return paths


def _run_all(args: argparse.Namespace, mutants: list[Mutant], eq: Equivalents,
             sources: dict[str, bytes], log: Log) -> list[Outcome]:
    """Coverage, then every mutant not listed as equivalent; the copies are removed after."""
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)  # report what ran, remove the copies
    with tempfile.TemporaryDirectory(prefix="mut") as tmp:
        pool = Pool(max(1, args.jobs), Path(tmp))
        try:
            tests = load_coverage(pool, log, args.max_examples)
            if args.tests:  # a quick look: a survivor may still die to a test left out
                tests = {t: info for t, info in tests.items()
                         if t.startswith(tuple(args.tests.split(",")))}
            selector = Selector(tests, sources)
            listed = [] if args.recheck_equivalents else [m for m in mutants
                                                          if eq.entry(m) is not None]
            run = [m for m in mutants if m.id not in {x.id for x in listed}]
            log.say(f"running {len(run)} mutants on {len(pool.workers)} worker(s)"
                    + (f" ({len(listed)} listed as equivalent: not run)" if listed else ""))
            cache = OutcomeCache(sources, args.max_examples, args.fresh)
            try:
                outcomes = run_mutants(pool, selector, run, sources, log, args.max_examples,
                                       cache)
            finally:
                cache.save()
        finally:
            pool.close()
    outcomes += [Outcome(m, "survived") for m in listed]
    return sorted(outcomes, key=lambda o: (o.mutant.path, o.mutant.start, o.mutant.desc))


def _write_json(path: Path, header: str, secs: float, outcomes: list[Outcome]) -> None:
    path.write_text(json.dumps(
        {"header": header, "seconds": round(secs),
         "outcomes": [{**asdict(o), "mutant": {k: v for k, v in asdict(o.mutant).items()
                                                if k != "replacement"}}
                      for o in outcomes]}, indent=1))


def package_sources() -> dict[str, bytes]:
    return {str(p.relative_to(REPO)): p.read_bytes() for p in REPO.glob(f"{PACKAGE}/**/*.py")}


def _list(mutants: list[Mutant], eq: Equivalents, entries: bool) -> None:
    for m in mutants:
        if entries:
            print(f"# {m.id}  {m.path}:{m.line}\n{entry_text(m, '')}")
            continue
        listed = eq.entry(m)
        print(f"{m.id}  {m.path}:{m.line}  {m.qualname}: {m.desc}"
              + (f"  (occurrence {m.occurrence})" if m.occurrence > 1 else "")
              + (f"  (equivalent: {eq.where(listed)})" if listed else ""))
    print(f"{len(mutants)} mutants", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.worker:
        worker_main(args.worker)
        return 0
    log = Log()
    if not args.list and importlib.util.find_spec("coverage") is None:
        print("error: tools/mutate.py maps tests to lines with coverage: "
              "pip install -e '.[test,mutate]'", file=sys.stderr)
        return 2
    paths = _module_paths(args.modules, log)
    if paths is None:
        return 2
    kinds = set(filter(None, args.kinds.split(","))) or None
    sources = package_sources()
    if args.refresh_equivalents:
        text, status = refresh_equivalents(
            EQUIVALENTS, sources, args.modules or None,
            lambda ms: _run_all(args, ms, Equivalents(), sources, log))
        print(text, end="")
        return status
    mutants = [m for p in paths for m in mutants_of(p, sources[p], kinds)]
    if args.only:
        wanted = set(args.only.split(","))
        mutants = [m for m in mutants if m.id in wanted]
    eq = read_equivalents(EQUIVALENTS)
    if args.list:
        _list(mutants, eq, args.entries)
        return 0
    commit = _git("rev-parse", "--short", "HEAD") or "unknown"
    if _git("status", "--porcelain", "--", PACKAGE, "tests", "tools"):
        commit += " + uncommitted changes"
    started = time.monotonic()
    outcomes = _run_all(args, mutants, eq, sources, log)
    secs = time.monotonic() - started
    cached = sum(o.cached for o in outcomes)
    header = (f"mutation run {dt.date.today().isoformat()}, commit {commit}, "
              f"{len(outcomes)} mutants in {secs / 60:.1f} min with --jobs {args.jobs}"
              + (f" ({cached} outcomes from earlier runs)" if cached else "")
              + (f"; only tests under {args.tests}" if args.tests else "")
              + (f"; INTERRUPTED: {len(mutants) - len(outcomes)} of {len(mutants)} not run"
                 if len(outcomes) < len(mutants) else ""))
    print(report(outcomes, eq, sources, header), end="")
    if args.json:
        _write_json(args.json, header, secs, outcomes)
    if args.min_score is not None:
        low = [p for p, row in summarize(outcomes, eq).items()
               if (score_pct(row) or 100.0) < args.min_score]
        if low:
            print(f"below {args.min_score}%: {', '.join(low)}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
