"""The docs are the code: docs/cli.md is the CLI's --help, the schema in
docs/results-files.md is the one the code writes, every command and option has
help text, the host loader and the report example in docs/ are what the tests run,
and no message hedges a plural.

After changing a command, an option or a column, regenerate both with:

    python tests/test_docs.py
"""

from __future__ import annotations

import ast
import json
import re
import sys
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent))
from helpers import PNG_SIGNATURE, REPO, RUNS, run_cli, run_group, run_report  # noqa: E402

from ezpz_amsc.cli.group import cli  # noqa: E402
from ezpz_amsc.results.fields import FINITE_MAX, table_schema  # noqa: E402

DOC = REPO / "docs" / "cli.md"
PROG = "ezpz-amsc"
REGENERATE = "python tests/test_docs.py"


# ------------------------------------------------------------------- the CLI reference


def _commands(group: click.Group) -> list[tuple[str, click.Command]]:
    ctx = click.Context(group, info_name=PROG)
    return [(name, cmd) for name in group.list_commands(ctx)
            if (cmd := group.get_command(ctx, name)) is not None]


# The page's last section: how to turn on tab completion (tests/cli/test_cli.py runs the
# bash line the way bash does).
COMPLETION = """## Shell completion

Tab completion of command names, options, choices and paths (folders for
`RUN_DIR`, files for `RESULTS_CSV`). Add one line to your shell's start-up file:

```sh
eval "$(_EZPZ_AMSC_COMPLETE=bash_source ezpz-amsc)"    # bash: ~/.bashrc
eval "$(_EZPZ_AMSC_COMPLETE=zsh_source ezpz-amsc)"     # zsh: ~/.zshrc
_EZPZ_AMSC_COMPLETE=fish_source ezpz-amsc | source     # fish: ~/.config/fish/config.fish
```

In bash, the first word offers the command names that match what you typed,
and folders when none does (`ezpz-amsc out<TAB>` completes `outputs/`). Each
TAB runs `ezpz-amsc` once, which imports neither numpy nor ezpz.
"""


def render() -> str:
    """The reference page: the group's --help, then each subcommand's, in listing order."""
    parts = ["# Command-line reference\n",
             f"Generated from `--help`; do not edit by hand. Regenerate with `{REGENERATE}`.\n"]
    for argv in [[], *([name] for name, _ in _commands(cli))]:
        result = run_group(*argv, "--help", prog=PROG)
        assert result.exit_code == 0, result.output
        parts.append(f"## `{' '.join([PROG, *argv])}`\n\n```text\n{result.stdout}```\n")
    parts.append(COMPLETION)
    return "\n".join(parts)


def undocumented(group: click.Group) -> list[str]:
    """Commands without help, options without help, arguments their command's help never names."""
    missing = []
    for name, cmd in [("", group), *_commands(group)]:
        where = " ".join([PROG, name]).strip()
        if not (cmd.help or "").strip() or not cmd.get_short_help_str().strip():
            missing.append(where)
        for p in cmd.params:
            if isinstance(p, click.Option) and not (p.help or "").strip():
                missing.append(f"{where} {p.opts[0]}")
            if isinstance(p, click.Argument):
                metavar = p.human_readable_name.rstrip(".")
                if metavar not in (cmd.help or ""):
                    missing.append(f"{where} {metavar}")
    return missing


def test_every_command_option_and_argument_has_help():
    assert undocumented(cli) == []


def test_the_check_finds_what_lacks_help():
    group = click.Group("g", help="A group.")

    @group.command("plain", help="Does X with THING.")
    @click.argument("thing")
    @click.option("--documented", help="Yes.")
    @click.option("--bare")
    def plain(thing, documented, bare):  # pragma: no cover - never run
        pass

    @group.command("silent")
    @click.argument("path")
    def silent(path):  # pragma: no cover - never run
        pass

    assert undocumented(group) == ["ezpz-amsc plain --bare", "ezpz-amsc silent",
                                   "ezpz-amsc silent PATH"]


def test_reference_matches_help():
    assert DOC.read_text() == render(), f"docs/cli.md is stale; regenerate: {REGENERATE}"


def test_reference_covers_every_subcommand():
    text = DOC.read_text()
    for name, _ in _commands(cli):
        assert f"## `{PROG} {name}`" in text


# ------------------------------------------------------------- the schema of a results file

SCHEMA_DOC = REPO / "docs" / "results-files.md"
SCHEMA_START = ("<!-- schema: generated from ezpz_amsc/results/fields.py by "
                f"{REGENERATE}; do not edit -->\n")
SCHEMA_END = "<!-- end of schema -->\n"


def _constraints(field: dict) -> str:
    c = field.get("constraints", {})
    parts = ["required"] if c.get("required") else []
    if "pattern" in c:
        parts.append("not blank")
    if "enum" in c:
        parts.append(" or ".join(f"`{v}`" for v in c["enum"]))
    if "format" in field:
        parts.append(f"`{field['format']}`")
    elif field["type"] == "datetime":
        parts.append("ISO 8601, read as UTC")
    low = c.get("minimum") if c.get("minimum") != -FINITE_MAX else None
    high = c.get("maximum") if c.get("maximum") != FINITE_MAX else None
    if low is not None and high is not None:
        parts.append(f"{low:g} to {high:g}")
    elif low is not None:
        parts.append(f"≥ {low:g}")
    if c.get("maximum") == FINITE_MAX:
        parts.append("finite")
    return ", ".join(parts)


def render_schema() -> str:
    """The Table Schema as a table: column, type, constraints, description."""
    schema = table_schema()
    lines = ["| column | type | constraints | description |", "|---|---|---|---|"]
    lines += [f"| `{f['name']}` | {f['type']} | {_constraints(f)} | {f['description']} |"
              for f in schema["fields"]]
    keys = ", ".join(schema["primaryKey"])
    missing = ", ".join(json.dumps(v) for v in schema["missingValues"])
    lines += ["", f"Missing values: {missing} (an empty cell). Primary key: {keys}."]
    return "\n".join(lines) + "\n"


def schema_doc() -> str:
    """docs/results-files.md with the generated section between its markers."""
    text = SCHEMA_DOC.read_text()
    start = text.index(SCHEMA_START) + len(SCHEMA_START)
    return text[:start] + render_schema() + text[text.index(SCHEMA_END, start):]


def test_the_schema_in_the_docs_is_the_codes():
    assert SCHEMA_DOC.read_text() == schema_doc(), (
        f"docs/results-files.md's schema is stale; regenerate: {REGENERATE}")


def test_the_schema_table_says_each_constraint():
    table = render_schema()
    assert "| `mfu` | number | 0 to 100 | Model FLOPS utilisation, percent" in table
    assert "| `nodes` | integer | required, ≥ 1 | Nodes used:" in table
    assert "| `status` | string | required, `pass` or `fail` | pass or fail" in table
    assert "| `timestamp` | datetime | required, ISO 8601, read as UTC | Start of the run" in table
    assert "| `final_loss` | number | finite | Last logged loss" in table
    assert "| `system` | string | required, not blank | Facility name" in table
    assert "| `error` | string |  | Note for a failed run" in table
    assert table.endswith('Missing values: "" (an empty cell). Primary key: timestamp, system, '
                          "config, nodes, gpus.\n")


# --------------------------------------------------------------------- the host loader


def test_docs_give_exactly_the_tested_host_code():
    source = (REPO / "tests" / "host_loader.py").read_text()
    snippets = [part.split("# --- end snippet ---")[0].split("---\n", 1)[1]
                for part in source.split("# --- snippet: ")[1:]]
    docs = (REPO / "docs" / "ezpz-integration.md").read_text()
    assert len(snippets) == 2
    for snippet in snippets:
        assert f"```python\n{snippet}```" in docs


# ------------------------------------------------------------------ the report example


DOCS = Path(__file__).resolve().parents[1] / "docs"


EXAMPLE = DOCS / "report-example"


def _console_block(after: str) -> str:
    text = (DOCS / "report.md").read_text()
    start = text.index(after + "\n") + len(after) + 1
    return text[start:text.index("```", start)]


def test_docs_example_output_is_the_real_output(monkeypatch):
    monkeypatch.chdir(EXAMPLE)
    shown = _console_block("$ ezpz-amsc report sweep.csv --plot scaling.png")
    # the report on stdout, then where the plot went on stderr (not drawn here: the
    # committed plot is what the docs show)
    assert run_report("sweep.csv").stdout + "note: wrote scaling.png\n" == shown
    block = _console_block("$ ezpz-amsc report sweep.csv --format json | jq "
                           "'.groups[0].points[3], .groups[0].flags[0]'")
    decoder = json.JSONDecoder()
    point, end = decoder.raw_decode(block)
    flag, _ = decoder.raw_decode(block[end:].lstrip())
    rep = json.loads(run_report("sweep.csv", "--format", "json").stdout)
    assert (point, flag) == (rep["groups"][0]["points"][3], rep["groups"][0]["flags"][0])
    assert (EXAMPLE / "scaling.png").read_bytes().startswith(PNG_SIGNATURE)


def test_docs_example_real_rows_are_what_the_shipped_runs_export(tmp_path):
    out = tmp_path / "sweep.csv"
    for name, config in [("fsdp_tp-1rank-launch", "fsdp_tp/debug"),
                         ("fsdp_tp-2rank", "fsdp_tp/debug"),
                         ("fsdp_tp-2rank-torchrun", "fsdp_tp/debug"),
                         ("minimal-1rank", "minimal"), ("diffusion-1rank", "diffusion/debug")]:
        assert run_cli(RUNS / name, "--config", config, "--append", out).exit_code == 0
    documented = (EXAMPLE / "sweep.csv").read_text().splitlines()
    assert out.read_text().splitlines() == documented[:6]
    assert run_cli("--check", EXAMPLE / "sweep.csv").exit_code == 0


# --------------------------------------------------------------- the words of messages


def _strings(tree: ast.AST) -> list[str]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.append(node.value)
    return out


def test_no_message_hedges_a_plural_with_parentheses():
    found = []
    for path in sorted((REPO / "ezpz_amsc").rglob("*.py")):
        for text in _strings(ast.parse(path.read_text(encoding="utf-8"))):
            if re.search(r"[a-z]\(s\)", text):
                found.append(f"{path.name}: {text!r}")
    assert found == []


if __name__ == "__main__":
    DOC.write_text(render())
    SCHEMA_DOC.write_text(schema_doc())
    print(f"wrote {DOC.relative_to(REPO)} and the schema in {SCHEMA_DOC.relative_to(REPO)}")


def test_every_module_the_docs_name_exists():
    """A path like ``run/steps.py`` or ``ezpz_amsc/cli/output.py`` in the docs' prose (code
    fences hold history and other programs' files) names a file of this repository."""
    import re

    docs = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    named = re.compile(r"`((?:[a-z_]+/)+[a-z_]+\.py)`")
    missing = []
    for doc in docs:
        prose = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)
        for path in named.findall(prose):
            if path.startswith(("ezpz/", "src/ezpz/")):  # ezpz's own files
                continue
            where = [REPO / path, REPO / "ezpz_amsc" / path, REPO / "tests" / path]
            if not any(p.is_file() for p in where):
                missing.append(f"{doc.name}: {path}")
    assert missing == []
