"""One module per subcommand, each a thin click layer over the pipeline.

Each imports only click and the light shared modules at its top; the
pipeline (numpy) loads inside the command when it runs. ``ezpz_amsc.cli``
maps subcommand names to these modules and imports one only when it is used.
"""
