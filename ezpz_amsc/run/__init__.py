"""One run directory in, a row's cells out: the export's stages, in the order that
:func:`ezpz_amsc.flow.export.export_run` calls them (docs/layout.md lists them).

Import-free, so loading it costs nothing.
"""
