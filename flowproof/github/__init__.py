"""flowproof's GitHub side: the sticky pull-request comment the Action keeps up to date.

`context.py` is pure (where the pull request is, what the comment body is); `comment.py` is the
one module here allowed an HTTP client. Nothing in `flowproof run` imports this package.
"""
