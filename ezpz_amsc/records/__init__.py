"""Provenance records beside published rows: building, storing, pairing, reproducing.

Import-free, so loading it costs nothing.
"""
