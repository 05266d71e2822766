"""``ezpz-amsc report PATH...``: the scaling study of results files (:mod:`ezpz_amsc.report`).

Imports only click at module top: the report, and matplotlib for ``--plot``,
load when the command runs.
"""

from __future__ import annotations

import sys

import click

from ezpz_amsc.cli import output
from ezpz_amsc.cli.edge import command
from ezpz_amsc.cli.params import PLOT_FILE, RESULTS_CSV, FormatChoice, quiet_option
from ezpz_amsc.errors import ExitStatus

# --dpi: 100 draws a 10-inch panel 1,000 pixels wide; 600 is print quality (and a large
# file); below 50 the labels no longer read.
DEFAULT_DPI, MIN_DPI, MAX_DPI = 100, 50, 600


@command(
    "report",
    short_help="Report on the scaling study in results CSVs before publishing.",
    usages=("RESULTS_CSV... [--format FORMAT] [--plot FILE [--dpi N]]",),
    examples=(("results/amsc.csv", "efficiency per node count, flags"),
              ("aurora.csv perlmutter.csv --plot scaling.png", "two machines, and a plot"),
              ("results/amsc.csv --format json", "the same report as data"),
              ("results/amsc.csv --format markdown", "for a pull request's description"),
              ("results/amsc.csv --format html > scaling.html", "one page to publish or send")),
    exit_codes={ExitStatus.OK: "report printed (rows with a problem are listed on stderr)",
                ExitStatus.FAILED: "a file cannot be read, or the plot cannot be written",
                ExitStatus.USAGE: "bad command line"},
)
@click.argument("paths", metavar="RESULTS_CSV...", nargs=-1, required=True, type=RESULTS_CSV)
@click.option("--format", "out_format",
              type=FormatChoice(["text", "json", "markdown", "html"]),
              default="text", show_default=True,
              help="text: tables for a terminal; json: the same report as data; markdown (or "
                   "md): GitHub-flavoured tables, e.g. for a pull request; html: one "
                   "self-contained page with charts (no network, no matplotlib needed).")
@click.option("--plot", "plot_path", metavar="FILE", type=PLOT_FILE,
              help="Also draw tokens/s/gpu and efficiency against nodes to FILE (.png, .svg or "
                   ".pdf; needs matplotlib, the 'plot' extra).")
@click.option("--dpi", type=click.IntRange(MIN_DPI, MAX_DPI), metavar="N",
              help=f"Resolution of a .png --plot, in dots per inch (a panel is 10 inches wide). "
                   f"[default: {DEFAULT_DPI}]")
@quiet_option
def report_command(paths: tuple[str, ...], out_format: str, plot_path: str | None,
                   dpi: int | None, quiet: bool) -> None:
    """Report on the scaling study in results CSV files before the rows go public.

    Per config and system: medians over repeats at each node count, weak-scaling
    efficiency against the smallest node count, and flags (superlinear points,
    collapses, repeats that disagree, failed runs). Each RESULTS_CSV is read the
    way 'check' reads it; rows with a problem are reported on stderr and left out.
    """
    if dpi is not None and plot_path is None:
        raise click.UsageError("--dpi is the resolution of --plot's image: pass --plot FILE")
    notes: list[str] = []
    if plot_path is not None:  # fail on the flag before reading anything
        from ezpz_amsc.report.plot import plot_format, require_matplotlib

        fmt = plot_format(plot_path)
        require_matplotlib()
        if dpi is not None and fmt != "png":
            notes.append(f"--dpi has no effect on a .{fmt} plot (drawn as lines and text, "
                         "not pixels)")

    from ezpz_amsc.report.data import build_report, read_sweep

    report = build_report(read_sweep(paths), sources=out_format in ("json", "html"))
    notes = [*report["problems"], *notes]
    if plot_path is not None:
        from ezpz_amsc.report.plot import write_plot

        notes += [*write_plot(report, plot_path, dpi or DEFAULT_DPI), f"wrote {plot_path}"]
    if out_format == "json":
        sys.stdout.write(output.json_text(report, indent=2) + "\n")
    elif out_format == "markdown":
        from ezpz_amsc.report.markdown import render_markdown

        sys.stdout.write(render_markdown(report))
    elif out_format == "html":
        from ezpz_amsc.report.html import render_html

        sys.stdout.write(render_html(report))
    else:
        from ezpz_amsc.report.text import render_text

        sys.stdout.write(render_text(report, colour=output.use_colour(sys.stdout)))
    sys.stdout.flush()
    output.notes(notes, quiet)
