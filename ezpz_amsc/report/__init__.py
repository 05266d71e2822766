"""The scaling report over results files: its data, its text, Markdown and HTML page, its plot.

Import-free, so loading it costs nothing.
"""
