"""``python -m ezpz_amsc``: the ezpz-amsc command line."""

from ezpz_amsc.cli.group import main

main(prog_name="python -m ezpz_amsc")
