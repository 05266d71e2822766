"""ezpz-amsc: export a finished ezpz run directory as one AmSC benchmark CSV row.

Importing the package is cheap (no numpy, no ezpz): the host CLI loads the
plugin on every call.
"""

__version__ = "0.1.0"


def install() -> bool:
    """Export a row at the end of every ``History.finalize()`` (see :func:`ezpz_amsc.hook.install`).

    Defined here, importing the hook lazily, so that ``import ezpz_amsc`` stays cheap.
    """
    from .hook import install as _install

    return _install()
