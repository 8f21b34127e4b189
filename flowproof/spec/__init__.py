"""The YAML edge: spec files in, typed and line-aware values out."""
