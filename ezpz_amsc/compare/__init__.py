"""Two studies compared point by point: regressions beyond noise, for CI and pull requests.

Import-free, so loading it costs nothing.
"""
