"""The scaling report over results files: its data, its text, its plot.

Import-free, so loading it costs nothing.
"""
