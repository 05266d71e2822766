"""Workflows: what each command does, end to end, above the storage rooms.

``export`` (a run directory in, a row out), ``publish`` (rows and their records out),
``check``, ``describe`` and ``reproduce``. The command line and the finalize hook call
these and print; the storage rooms below (``results``, ``records``, ``fs``) never import
a workflow. Import-free, so loading the layer costs nothing.
"""
