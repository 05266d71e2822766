"""Results files: the row's schema and run identity, appending under a lock, validating.

Import-free, so loading it costs nothing.
"""
