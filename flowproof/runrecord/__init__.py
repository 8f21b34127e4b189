"""The run record: `<runs dir>/<run id>/report.json`, the one document every report reads."""
