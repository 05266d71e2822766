"""Studies made up for the compare tests: rows written as results files, with a seeded RNG.

A study is a list of rows in the results schema's header order; :func:`write` makes
it a results CSV. :func:`realistic_pair` draws two sweeps of the same runs (an A/A
pair) with the scatter real sweeps show, or with a change applied to the second.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ezpz_amsc.results.schema import HEADER

CFG = "agpt-2b/bs1/seq2048/tp1"
GPUS_PER_NODE = {"aurora": 12, "polaris": 4, "perlmutter": 4}


@dataclass
class Study:
    """Rows of one study; each run gets its own timestamp, a second apart, from ``start``."""

    start: str = "2026-08-11T00:00:00Z"
    rows: list[list[str]] = field(default_factory=list)

    def add(self, system: str, nodes: int, tps_per_gpu: float | None, *, config: str = CFG,
            gpus: int | None = None, status: str = "pass", steps: int | None = 30,
            error: str = "", mfu: float | None = None, wall: float | None = 100.0) -> Study:
        gpus = GPUS_PER_NODE.get(system, 4) * nodes if gpus is None else gpus
        t0 = dt.datetime.strptime(self.start, "%Y-%m-%dT%H:%M:%SZ")
        stamp = (t0 + dt.timedelta(seconds=len(self.rows))).strftime("%Y-%m-%dT%H:%M:%SZ")
        cell = lambda x, f="{:.3f}": "" if x is None else f.format(x)  # noqa: E731
        tps = None if tps_per_gpu is None else tps_per_gpu * gpus
        if status == "fail":
            tps = tps_per_gpu = None
        self.rows.append([stamp, system, config, str(nodes), str(gpus), status, cell(wall),
                          cell(tps), cell(tps_per_gpu), cell(mfu), "", "",
                          cell(steps, "{}"), error])
        return self

    def repeats(self, system: str, nodes: int, rates: list[float], **kw) -> Study:
        for r in rates:
            self.add(system, nodes, r, **kw)
        return self

    def write(self, path: Path) -> Path:
        with open(path, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f, lineterminator="\n")
            w.writerow(HEADER)
            w.writerows(self.rows)
        return path


NODES = (1, 2, 4, 8, 16, 32, 64)


def realistic_pair(seed: int, *, scale: float = 1.0, shift: dict[tuple, float] | None = None,
                   systems: dict[str, float] | None = None, bad_nodes: float = 1 / 40
                   ) -> tuple[Study, Study]:
    """Two sweeps of the same runs, as a site runs them weeks apart.

    Per system (sigma of one repeat, on the log scale): two configs at 1..64 nodes,
    each point run 1 to 3 times in each study (not the same count in both). A point's
    rate falls with the node count; each repeat scatters around it (normal on the log
    scale), and one repeat in 40 lands on a bad node, 6-20 % slow, as real sweeps
    show. The second study is the first's runs again (an A/A pair): no change, unless
    ``shift`` maps (system, config, nodes) or (system,) to a factor on the rate, or
    ``scale`` applies one to every point.
    """
    rng = np.random.default_rng(seed)
    systems = systems or {"aurora": 0.02, "polaris": 0.03}
    shift = shift or {}
    base, new = Study("2026-08-11T00:00:00Z"), Study("2026-09-02T00:00:00Z")
    for system, sigma in systems.items():
        for config, rate0 in ((CFG, 10_000.0), ("vit/bs64", 5_000.0)):
            for nodes in NODES:
                true = rate0 * (1 - 0.03 * math.log2(nodes))
                factor = scale * shift.get((system, config, nodes), shift.get((system,), 1.0))
                for study, f in ((base, 1.0), (new, factor)):
                    for _ in range(int(rng.integers(1, 4))):
                        slow = 1 - rng.uniform(0.06, 0.20) if rng.random() < bad_nodes else 1.0
                        rate = true * f * slow * math.exp(rng.normal(0, sigma))
                        study.add(system, nodes, rate, config=config)
    return base, new
