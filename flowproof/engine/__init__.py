"""The run pipeline: spec → proxy + agent → traffic → verdicts → trace."""
