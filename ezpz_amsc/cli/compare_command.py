"""``ezpz-amsc compare BASE_CSV NEW_CSV``: two studies compared point by point
(:mod:`ezpz_amsc.compare`), with an exit status a CI job can gate on.

Imports only click at module top: the comparison loads when the command runs.
"""

from __future__ import annotations

import sys

import click

from ezpz_amsc.cli import output
from ezpz_amsc.cli.edge import command
from ezpz_amsc.cli.params import RESULTS_CSV, FormatChoice, quiet_option
from ezpz_amsc.errors import ExitStatus

EXIT_CODES = {
    ExitStatus.OK: "nothing slower or broken (improvements never fail)",
    ExitStatus.FAILED: "a point is slower or broke, or a system is slower as a whole",
    ExitStatus.USAGE: "bad command line, or a file that cannot be read",
    ExitStatus.NOTHING_COMPARABLE: "nothing comparable at all (or, with --require-all, a "
                                   "point is gone)",
}


@command(
    "compare",
    short_help="Compare two studies: regressions beyond noise, for CI and pull requests.",
    usages=("BASE_CSV NEW_CSV [--format FORMAT] [OPTIONS]",
            "--base CSV --base CSV ... --new CSV ... [OPTIONS]"),
    examples=(("old.csv new.csv", "slower, broken, missing points; exit 1 if any"),
              ("--base a1.csv --base a2.csv --new b.csv", "several files in a study"),
              ("old.csv new.csv --format markdown", "for a pull request's description"),
              ("old.csv new.csv --noise-from aa.csv", "sigma from an A/A pair")),
    exit_codes=EXIT_CODES,
)
@click.argument("paths", metavar="BASE_CSV NEW_CSV", nargs=-1, type=RESULTS_CSV)
@click.option("--base", "base", multiple=True, type=RESULTS_CSV, metavar="CSV",
              help="A results file of the base study (repeat for several files); instead of "
                   "BASE_CSV NEW_CSV.")
@click.option("--new", "new", multiple=True, type=RESULTS_CSV, metavar="CSV",
              help="A results file of the new study (repeat for several files).")
@click.option("--format", "out_format", type=FormatChoice(["text", "json", "markdown"]),
              default="text", show_default=True,
              help="text: for a terminal or a CI log; json: the same comparison as data (with "
                   "z, se and adjusted p); markdown: for a pull request.")
@click.option("--min-effect", "min_effect", type=click.FloatRange(0, 100, min_open=True,
                                                                   max_open=True),
              default=5.0, show_default=True, metavar="PCT",
              help="The smallest change in tokens/s/gpu that counts, in percent: a point is "
                   "slower or faster only past it, same only inside it.")
@click.option("--alpha", type=click.FloatRange(0, 0.5, min_open=True, max_open=True),
              default=0.05, show_default=True, metavar="P",
              help="Family error rate over all judged points (Holm).")
@click.option("--noise-from", "noise_from", multiple=True, type=RESULTS_CSV, metavar="CSV",
              help="Take each system's sigma from the repeats in these files (an A/A pair: the "
                   "same runs twice, in one file or two), unless the studies' own repeats show "
                   "more noise.")
@click.option("--across-systems", is_flag=True,
              help="Put a point missing from one system beside the same config and nodes on "
                   "another system, as a difference (never a regression).")
@click.option("--require-all", is_flag=True,
              help="Exit 3 when a point of the base study is gone from the new one.")
@quiet_option
@click.pass_context
def compare_command(ctx: click.Context, paths: tuple[str, ...], base: tuple[str, ...],
                    new: tuple[str, ...], out_format: str, min_effect: float, alpha: float,
                    noise_from: tuple[str, ...], across_systems: bool, require_all: bool,
                    quiet: bool) -> None:
    """Compare two studies, BASE_CSV NEW_CSV (or --base/--new), point by point: is the new
    one slower, and where?

    A point is (system, config, nodes, gpus); its repeats are its pass rows, read the way
    'check' reads them. Per point: the median tokens/s/gpu in each study, the change, and a
    verdict against the noise of repeats (sigma per system from the studies' own repeats,
    floor 2%), with all points judged as one family (Holm): slower, faster, same, unsure
    (with the repeats that would settle it), noisy; and without statistics: broke, fixed,
    flaky, new, gone. Per system, the whole study's shift. Never claims "no regression":
    each point says what it can resolve. The rules: docs/compare.md.
    """
    if paths and (base or new):
        raise click.UsageError("give BASE_CSV NEW_CSV or --base/--new, not both", ctx)
    if paths:
        if len(paths) != 2:
            raise click.UsageError(
                f"two files are needed (BASE_CSV NEW_CSV), got {len(paths)}; several files per "
                "study go with --base CSV --base CSV --new CSV", ctx)
        base, new = (paths[0],), (paths[1],)
    elif not base or not new:
        missing = "--new" if base else "--base"
        raise click.UsageError(f"missing {missing}: the new study needs a file as much as the "
                               "base one", ctx)

    from ezpz_amsc.compare.render import render_markdown, render_text, to_data
    from ezpz_amsc.compare.study import Settings, compare_studies, read_study

    settings = Settings(alpha=alpha, min_effect_pct=min_effect, across_systems=across_systems,
                        require_all=require_all)
    studies = (read_study(base), read_study(new))
    noise = read_study(noise_from) if noise_from else None
    result = compare_studies(studies[0], studies[1], settings=settings, noise=noise)
    if out_format == "json":
        sys.stdout.write(output.json_text(to_data(result), indent=2) + "\n")
    elif out_format == "markdown":
        sys.stdout.write(render_markdown(result))
    else:
        sys.stdout.write(render_text(result, colour=output.use_colour(sys.stdout)))
    sys.stdout.flush()
    output.notes([problem for sweep in (*studies, *([noise] if noise is not None else []))
                  for problem in sweep.problems], quiet)
    status = ExitStatus(result["exit_code"])
    if status == ExitStatus.NOTHING_COMPARABLE:
        click.echo(f"error: {result['exit_reason']}", err=True)
    ctx.exit(status)
