"""ezpz-amsc: export a finished ezpz run directory as one AmSC benchmark CSV row.

Importing the package is cheap (no numpy, no ezpz): the host CLI loads the
plugin on every call.
"""

__version__ = "0.1.0"
