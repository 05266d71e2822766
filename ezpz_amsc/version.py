"""This tool's name and version: the one home of both (pyproject.toml reads the version here)."""

TOOL = "ezpz-amsc"
__version__ = "0.1.0"
