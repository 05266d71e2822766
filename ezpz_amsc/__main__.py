"""``python -m ezpz_amsc``: the export-amsc command."""

from .cli import main

main(prog_name="python -m ezpz_amsc")
