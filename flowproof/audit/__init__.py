"""`flowproof audit`: the latest verdict of every declared control, across run records."""
