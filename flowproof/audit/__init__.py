"""`flowproof audit`: the latest verdict of every declared control, across run records, and what
changed since an earlier run (`--since`)."""
