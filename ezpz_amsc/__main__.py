"""``python -m ezpz_amsc``: the ezpz-amsc command line."""

from .cli import main

main(prog_name="python -m ezpz_amsc")
