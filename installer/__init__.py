"""Build and release tooling (not shipped in the flowproof package)."""
