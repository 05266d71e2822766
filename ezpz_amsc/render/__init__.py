"""Text for a terminal: colour, wrapping, tables, and the ``--explain`` report.

Import-free, so loading it costs nothing.
"""
