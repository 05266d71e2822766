"""Every command example in README.md and docs/*.md runs and prints what it shows.

The convention the docs follow, and this test enforces:

- A ```console block is a runnable example. A line starting with ``$ `` is a
  command (a line ending in ``\\`` continues on the next); the lines after it,
  up to the next ``$ `` line or the end of the block, are exactly what it
  prints, stdout and stderr in the order a terminal shows them.
- The commands of one document run in order, with bash, in a fresh copy of the
  repository's ``examples/`` and ``docs/`` folders: what a command writes is
  there for the later commands of the same document, as in one shell session.
  The session starts at the copy's root (the repository root, where the docs'
  paths start); ``$ cd DIR`` moves it, for the rest of the document.
- A command whose output shows an ``error:`` line must exit non-zero, any other
  must exit 0.
- Console blocks hold no placeholders (``RUN_DIR``, ``LABEL``, ...). An example
  that cannot run as written (a placeholder, a cluster path, a long benchmark)
  goes in another fence (```sh, ```text) without the ``$ `` prompt; outside
  console blocks no line starts with ``$ ``, so no runnable-looking example
  escapes this test.

What may legitimately differ from a reader's terminal is normalised by these
rules only:

- trailing spaces at the end of a line are ignored;
- the output of a command piped into ``jq`` is compared as JSON values, since
  jq versions print numbers differently (1.6 prints ``1152000.0`` as ``1152000``);
- every document runs twice: with ``umask 002`` in a setgid, group-writable
  folder (a folder a team shares), and with ``umask 022`` in a plain 0755
  folder (a personal checkout). ``check`` notes teammates' access only where it
  can matter, and in neither session is there anything to note: the shared
  folder gives every file group write, and the personal one is nobody else's.
  (The personal session assumes a personal primary group, as most Linux
  systems give each user; under a group with other members ``check`` rightly
  notes that they could not append, so that session is skipped there.)
  ``COLUMNS=80``; ``LC_ALL=C.UTF-8`` (a glob lists ``fsdp_tp-2rank-torchrun/``
  before ``fsdp_tp-2rank/`` in every locale); no colour (not a terminal);
- ``ezpz-amsc`` is the one installed beside the Python that runs the tests.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ezpz_amsc.fs.access import group_has_others

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MARKDOWN = [*DOCS, REPO / "CHANGELOG.md", REPO / "examples" / "runs" / "README.md"]
COPIED = ("examples", "docs")  # what the commands may read, copied for each document
PLACEHOLDERS = re.compile(r"\b(RUN_DIR|RUNS?|DIR|PATH|LABEL|RESULTS_CSV|RECORD|FILE|N|SECONDS)\b")
PROMPT = "$ "
# The test command of the README's "Install" list, which CI runs (.ci/run).
TEST_COMMAND = "python -m pip install '.[test]' && python -m pytest -q"


@dataclass
class Command:
    line: int  # 1-based line of the ``$ `` in the document
    text: str  # as given to bash (continuation lines included)
    shown: list[str] = field(default_factory=list)  # the output the document shows


@dataclass
class Block:
    doc: Path
    line: int  # of the opening fence
    lang: str
    body: list[str]


def fences(doc: Path) -> list[Block]:
    """Every fenced block of a markdown file (``` fences, any info string)."""
    blocks: list[Block] = []
    current: Block | None = None
    for i, raw in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        stripped = raw.strip()
        if current is None:
            if stripped.startswith("```"):
                current = Block(doc, i, stripped[3:].strip(), [])
        elif stripped == "```":
            blocks.append(current)
            current = None
        else:
            current.body.append(raw)
    assert current is None, f"{doc.name}:{current.line}: fence never closed"
    return blocks


def commands(block: Block) -> list[Command]:
    """A console block's commands, each with the output shown after it."""
    cmds: list[Command] = []
    lines = iter(enumerate(block.body, block.line + 1))
    for n, raw in lines:
        if raw.startswith(PROMPT):
            text = raw[len(PROMPT):]
            while text.endswith("\\"):
                text += "\n" + next(lines)[1]
            cmds.append(Command(n, text))
        else:
            assert cmds, f"{block.doc.name}:{n}: output before the first '$ ' command"
            cmds[-1].shown.append(raw)
    return cmds


def console_blocks(doc: Path) -> list[Block]:
    return [b for b in fences(doc) if b.lang == "console"]


# ---------------------------------------------------------------- the convention itself


def test_there_are_console_examples_to_run():
    found = {doc.name: len(console_blocks(doc)) for doc in DOCS}
    assert found["README.md"] >= 5, found
    assert sum(found.values()) >= 10, found


@pytest.mark.parametrize("doc", MARKDOWN, ids=lambda p: str(p.relative_to(REPO)))
def test_console_blocks_hold_commands_without_placeholders(doc):
    for block in console_blocks(doc):
        cmds = commands(block)
        assert cmds, f"{doc.name}:{block.line}: a console block without a '$ ' command"
        for cmd in cmds:
            found = PLACEHOLDERS.search(cmd.text)
            assert found is None, (f"{doc.name}:{cmd.line}: placeholder {found.group()!r} in a "
                                   "console block; use a real path, or another fence")


@pytest.mark.parametrize("doc", MARKDOWN, ids=lambda p: str(p.relative_to(REPO)))
def test_no_prompt_outside_console_blocks(doc):
    for block in fences(doc):
        if block.lang == "console":
            continue
        for n, raw in enumerate(block.body, block.line + 1):
            assert not raw.startswith(PROMPT), (
                f"{doc.name}:{n}: a '$ ' command in a ```{block.lang or ''} block: make it a "
                "```console block (then it is run), or drop the prompt")


def test_example_docs_outside_the_scan_hold_no_console_block():
    # CHANGELOG.md and examples/runs/README.md are checked for the convention but not run.
    for doc in MARKDOWN:
        if doc not in DOCS:
            assert console_blocks(doc) == [], f"{doc}: run it (add it to DOCS) or use another fence"


def test_the_parser_reads_commands_outputs_and_continuations(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text("text\n```console\n$ a \\\n    b\nout 1\n\nout 2\n$ c\n```\n"
                   "```sh\nd\n```\n")
    console, sh = fences(doc)
    assert (console.lang, console.line, sh.lang) == ("console", 2, "sh")
    cmds = commands(console)
    assert [(c.line, c.text, c.shown) for c in cmds] == [
        (3, "a \\\n    b", ["out 1", "", "out 2"]), (8, "c", [])]


# ---------------------------------------------------------------- running them


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("EZPZ_AMSC_") or k == "EZPZ_AMSC_JSON"}
    scripts = Path(sys.executable).parent
    assert (scripts / "ezpz-amsc").exists(), f"ezpz-amsc is not installed in {scripts}"
    env.update(PATH=f"{scripts}{os.pathsep}{env.get('PATH', '')}", COLUMNS="80",
               LC_ALL="C.UTF-8", PYTHONUNBUFFERED="1", PYTHONIOENCODING="utf-8")
    env.pop("NO_COLOR", None)  # no colour anyway: the output is a pipe, not a terminal
    return env


def _json_values(text: str) -> list[object]:
    decoder, values, pos = json.JSONDecoder(), [], 0
    text = text.strip()
    while pos < len(text):
        value, pos = decoder.raw_decode(text, pos)
        values.append(value)
        while pos < len(text) and text[pos].isspace():
            pos += 1
    return values


def _run(cmd: Command, cwd: Path, env: dict[str, str], umask: str = "002") -> tuple[int, str]:
    proc = subprocess.run(["bash", "-c", f"umask {umask}\nset -o pipefail\n{cmd.text}"], cwd=cwd,
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, encoding="utf-8", timeout=300)
    return proc.returncode, proc.stdout


def _same(cmd: Command, output: str) -> bool:
    if re.search(r"\|\s*jq\b", cmd.text):
        return _json_values(output) == _json_values("\n".join(cmd.shown))
    got = [line.rstrip() for line in output.splitlines()]
    return got == [line.rstrip() for line in cmd.shown]


# (umask, mode of the folder the session starts in)
SESSIONS = {"team-folder": ("002", 0o2775), "personal-checkout": ("022", 0o755)}


@pytest.mark.slow
@pytest.mark.parametrize("session", SESSIONS)
@pytest.mark.parametrize("doc", [d for d in DOCS if console_blocks(d)],
                         ids=lambda p: str(p.relative_to(REPO)))
def test_console_examples_print_what_they_show(doc, tmp_path, session):
    umask, mode = SESSIONS[session]
    if umask == "022" and group_has_others(os.getegid(), os.geteuid()):
        pytest.skip("your primary group has other members: under umask 022 check notes that "
                    "they could not append, which the docs (a personal group) do not show")
    root = tmp_path / "repo"
    root.mkdir()
    root.chmod(mode)
    for name in COPIED:
        shutil.copytree(REPO / name, root / name, symlinks=True)
    env, no_jq, cwd = _env(), [], root
    for block in console_blocks(doc):
        for cmd in commands(block):
            where = f"{doc.name}:{cmd.line}: $ {cmd.text}"
            if m := re.fullmatch(r"cd (\S+)", cmd.text.strip()):
                cwd = (cwd / m.group(1)).resolve()
                assert cwd.is_relative_to(root) and cwd.is_dir(), where
                continue
            if re.search(r"\|\s*jq\b", cmd.text) and shutil.which("jq") is None:
                no_jq.append(where)
                continue
            code, output = _run(cmd, cwd, env, umask)
            shows_error = any(line.startswith("error:") for line in cmd.shown)
            assert (code != 0) == shows_error, f"{where}\nexit {code}:\n{output}"
            assert _same(cmd, output), (f"{where}\n--- shown\n" + "\n".join(cmd.shown)
                                        + f"\n--- printed\n{output}")
    assert _left_dirty(root) == [], (
        f"{doc.name}: run in a checkout, its examples leave it unclean: edit the repository's "
        "files in place (copy a shipped run first) or write outside the ignored folders")
    if no_jq:
        pytest.skip("jq is not installed; not run: " + "; ".join(no_jq))


def _ignored() -> set[str]:
    return {line.strip().strip("/") for line in
            (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")}


def _left_dirty(root: Path) -> list[str]:
    """What a document's commands changed in the copy of the checkout at ``root``: a copied
    file changed or gone, or a new file outside the folders .gitignore names."""
    dirty = []
    for name in COPIED:
        for path in sorted((REPO / name).rglob("*")):
            copy = root / path.relative_to(REPO)
            if path.is_symlink() or path.is_dir():
                continue
            if not copy.is_file() or copy.read_bytes() != path.read_bytes():
                dirty.append(f"{path.relative_to(REPO)}: changed or removed")
    ignored = _ignored()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_dir() or (REPO / rel).exists() or any(
                rel.as_posix() == i or rel.as_posix().startswith(i + "/") for i in ignored):
            continue
        if "__pycache__" not in rel.parts:
            dirty.append(f"{rel}: new, and not ignored")
    return dirty


# ---------------------------------------------------------------- what else must not drift


def test_readme_set_up_commands_are_what_ci_and_the_quick_start_run():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert f"   {TEST_COMMAND}\n" in readme  # command 2 of the list, in its fenced block
    assert TEST_COMMAND in ci.splitlines()[-1]
    install_and_export = re.search(r"python -m pip install \. && (ezpz-amsc .*)\n", readme)
    assert install_and_export, "README command 1 (install and export a shipped run) is gone"
    quick_start = [c.text for b in console_blocks(REPO / "README.md") for c in commands(b)]
    assert install_and_export.group(1) == quick_start[0]


def test_readme_examples_write_only_into_ignored_folders():
    """Run in a checkout, the README's examples leave no untracked files behind."""
    ignored = _ignored()
    written = [target for block in console_blocks(REPO / "README.md") for cmd in commands(block)
               for target in re.findall(r"--(?:append|provenance) (\S+)", cmd.text)]
    assert written, "the README's examples write no results file any more: update this test"
    assert [t for t in written if Path(t).parts[0] not in ignored] == []


# The README is for a newcomer: what, install, quick start, everyday workflow. Depth goes
# into a page of docs/ that the README links; this bound keeps it from growing back.
README_MAX_LINES = 170


def test_readme_stays_short():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move the detail into a "
        "page of docs/ and link it")


def _readme_documentation_list() -> str:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    start = readme.index("\n## Documentation\n")
    end = readme.find("\n## ", start + 1)
    return readme[start:end if end != -1 else len(readme)]


def test_readme_documentation_list_links_every_page_of_docs():
    listed = _readme_documentation_list()
    missing = [page.name for page in sorted((REPO / "docs").glob("*.md"))
               if f"](docs/{page.name})" not in listed]
    assert missing == [], f"README.md's Documentation list does not link {missing}"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    text = doc.read_text(encoding="utf-8")
    in_fence = False
    found = set()
    for line in text.splitlines():
        if line.strip().startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            found.add(_slug(line.lstrip("#")))
    return found


@pytest.mark.parametrize("doc", MARKDOWN, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_and_anchors_exist(doc):
    text = re.sub(r"```.*?```", "", doc.read_text(encoding="utf-8"), flags=re.S)
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        assert dest.exists(), f"{doc.name}: link to {target}: no such file"
        if anchor:
            assert anchor in _anchors(dest), f"{doc.name}: link to {target}: no such heading"


def test_slug_is_githubs():
    assert _slug(" Interleaved metrics (one file for all ranks)") == \
        "interleaved-metrics-one-file-for-all-ranks"
    assert _slug("`--explain`") == "--explain"


def test_the_comparison_catches_a_wrong_output(tmp_path):
    env = _env()
    echo = Command(1, "echo 'a  b'; echo '{\"x\": 1.0}' >&2", ["a  b", '{"x": 1.0}'])
    code, output = _run(echo, tmp_path, env)
    assert code == 0 and _same(echo, output)
    assert not _same(Command(1, echo.text, ["a b", '{"x": 1.0}']), output)
    assert not _same(Command(1, echo.text, ["a  b"]), output)  # stderr is part of it
    assert _same(Command(1, echo.text, ["a  b   ", '{"x": 1.0}']), output)  # trailing spaces
    if shutil.which("jq"):
        jq = Command(1, "echo '{\"x\": 1.0}' | jq .", ["{", '  "x": 1.0', "}"])
        code, output = _run(jq, tmp_path, env)
        assert code == 0 and _same(jq, output)  # jq 1.6 prints 1, jq 1.7 1.0: one value
        assert not _same(Command(1, jq.text, ['{"x": 2}']), output)
    code, _ = _run(Command(1, "false | cat"), tmp_path, env)
    assert code != 0  # pipefail: a failing ezpz-amsc before a pipe is not hidden
