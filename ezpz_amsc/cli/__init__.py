"""The click layer: the command group, its edge, shared parameters, one module per command.

Import-free on purpose: ``ezpz_amsc.cli.group`` is what the entry points load.
"""
