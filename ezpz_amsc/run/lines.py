"""Lines of a metrics file, read with a cap: a line too long to hold is skipped unread.

Shared by the step reader (:mod:`ezpz_amsc.run.steps`) and the skim
(:mod:`ezpz_amsc.run.skim`), so both see the same lines.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import IO

DRAIN_BYTES = 1 << 20


def iter_lines(f: IO[bytes], limit: int) -> Iterator[bytes | None]:
    """Yield lines; ``None`` stands for a line over ``limit`` bytes (skipped)."""
    readline = f.readline
    while True:
        line = readline(limit)
        if not line:
            return
        if len(line) >= limit and not line.endswith(b"\n"):
            del line  # hold at most one small chunk while draining, not limit bytes
            while True:  # drain the rest of the long line in bounded chunks
                rest = readline(DRAIN_BYTES)
                if not rest or rest.endswith(b"\n"):
                    break
            yield None
            continue
        yield line
