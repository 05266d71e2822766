"""results/publish.py: where rows and records go. The CLI's and the hook's uses of it are
tested through them (tests/cli/test_export_command.py, tests/test_hook.py); here, what it
returns."""

from __future__ import annotations

import json

from helpers import copy_run, expected_row, parse_csv

from ezpz_amsc.export import export_run
from ezpz_amsc.options import ExportOptions
from ezpz_amsc.results.publish import RECORD_FILE, ROW_FILE, publish_into_run_dir


def test_publishing_into_the_run_directory_returns_the_rows_file(tmp_path):
    run = copy_run("minimal-1rank", tmp_path)
    opts = ExportOptions(config="test/cfg")
    result = export_run(run, opts, hash_files=True)
    assert publish_into_run_dir(result, opts, run) == run / ROW_FILE
    assert parse_csv((run / ROW_FILE).read_text()) == [expected_row("minimal-1rank")]
    assert json.loads((run / RECORD_FILE).read_text())["row"] == expected_row("minimal-1rank")
