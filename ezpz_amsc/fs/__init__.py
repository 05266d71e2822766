"""Files this tool reads and creates: capped reads, whole-file writes, permissions.

Import-free, so loading it costs nothing.
"""
