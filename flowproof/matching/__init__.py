"""Pure: which recorded turn serves a request, and how a request that matches none differs."""
