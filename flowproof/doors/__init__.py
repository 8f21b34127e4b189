"""The front doors besides the command line: the Python API, in-process flows, the pytest plugin,
and what `flowproof init` writes.
"""
