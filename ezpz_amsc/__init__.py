"""ezpz-amsc: export a finished ezpz run directory as one AmSC benchmark CSV row.

Importing the package is cheap (no numpy, no ezpz): the host CLI loads the
plugin on every call.
"""

from ezpz_amsc.version import __version__

__all__ = ["__version__", "install"]


def install() -> bool:
    """Export a row at the end of every ``History.finalize()`` (see :func:`ezpz_amsc.hook.install`).

    Defined here, importing the hook lazily, so that ``import ezpz_amsc`` stays cheap.
    """
    from ezpz_amsc.hook import install as _install

    return _install()
