"""The A/A calibration of ``compare``: two sweeps of the same runs, many seeds.

    python benchmarks/compare_aa.py [--seeds 1000] [--bad-nodes 0.025]

Each seed draws an A/A pair with the model of tests/compare/synthetic_studies.py
(2 systems x 2 configs x 7 node counts, 1-3 repeats a point in each study, 2% and
3% scatter of one repeat; with --bad-nodes, that share of runs lands on a bad
node, 6-20% slow), writes both as results files and compares them as the command
does. Prints the share of seeds with no point called slower or faster, the share
that exit 0, and what the points were called. docs/compare.md quotes its figures.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "compare"))
from synthetic_studies import realistic_pair  # noqa: E402

from ezpz_amsc.compare.study import compare_studies, read_study  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", type=int, default=1000)
    p.add_argument("--bad-nodes", type=float, default=0.0,
                   help="share of runs on a bad node (default 0: normal scatter only)")
    args = p.parse_args(argv)
    clean = exit_0 = 0
    verdicts: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for seed in range(args.seeds):
            base, new = realistic_pair(seed, bad_nodes=args.bad_nodes)
            c = compare_studies(read_study([base.write(Path(tmp) / "a.csv")]),
                                read_study([new.write(Path(tmp) / "b.csv")]))
            clean += c["counts"]["slower"] + c["counts"]["faster"] == 0
            exit_0 += c["exit_code"] == 0
            verdicts.update({k: v for k, v in c["counts"].items() if v})
    n = args.seeds
    print(f"{n} seeds, bad nodes {args.bad_nodes:g}: no slower or faster point in {clean} "
          f"({100 * clean / n:.1f}%); exit 0 in {exit_0} ({100 * exit_0 / n:.1f}%)")
    total = sum(verdicts[v] for v in verdicts if v != "flaky")
    print("points: " + ", ".join(f"{v} {k} ({100 * v / total:.2f}%)"
                                 for k, v in verdicts.most_common()))


if __name__ == "__main__":
    main()
