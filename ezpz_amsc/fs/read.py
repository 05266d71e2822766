"""Reading a whole file with a cap: never more than a cap's worth of memory for one file."""

from __future__ import annotations

import os


def read_capped(path: str | os.PathLike[str], cap: int) -> bytes:
    """The file's bytes, at most ``cap + 1`` of them: more than ``cap`` means it is too large.

    Raises ``OSError`` as ``open`` and ``read`` do.
    """
    with open(path, "rb") as f:
        # read(n) allocates n up front: size the buffer by the file, not the cap.
        size = os.fstat(f.fileno()).st_size
        return f.read(min(size, cap) + 1)
