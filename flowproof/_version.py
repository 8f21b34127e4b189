"""The version of this flowproof, in a module of its own: every layer reads it, and reading it
must not load the package face (which loads the Python API)."""

__version__ = "0.1.0"
