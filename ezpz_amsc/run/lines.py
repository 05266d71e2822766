"""Lines of a metrics file, read with a cap: a line too long to hold is skipped unread.

Shared by the step reader (:mod:`ezpz_amsc.run.steps`) and the skim
(:mod:`ezpz_amsc.run.skim`), so both see the same lines; and how a metrics file
is opened, gzipped (``*.jsonl.gz``) or not.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import IO, cast

from ezpz_amsc.fs.read import open_regular

DRAIN_BYTES = 1 << 20
GZIP_SUFFIX = ".gz"


def is_gzip(path: Path | str) -> bool:
    """A gzipped metrics file, by its name (``metrics-0.jsonl.gz``)."""
    return str(path).endswith(GZIP_SUFFIX)


def open_metrics(path: Path, raw: IO[bytes] | None = None) -> IO[bytes]:
    """``path`` opened for reading bytes, decompressed when gzipped.

    ``raw``, when given, is the file already opened to read through (so that a
    digest sees the bytes on disk); the caller closes it too, as a gzip reader
    over a given file leaves it open.
    """
    owned = raw is None
    if raw is None:
        raw = open_regular(path)  # a FIFO or /proc file would block: refused
    if not is_gzip(path):
        return raw
    import gzip

    gz = gzip.GzipFile(filename=str(path), mode="rb", fileobj=raw)
    if owned:
        gz.myfileobj = raw  # type: ignore[assignment]  # closed with the gzip reader, as gzip.open does
    return cast("IO[bytes]", gz)  # a GzipFile reads as an IO[bytes]; typeshed types it apart


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
