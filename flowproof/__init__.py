"""flowproof: record and replay AI agents at their model boundary."""

__version__ = "0.1.0"
