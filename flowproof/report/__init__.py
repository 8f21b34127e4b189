"""Reports rendered from a run record: HTML page, PR-comment markdown, JUnit XML (render.py),
the terminal summary (terminal.py), the views they read (view.py) and the markdown escapes
every markdown output shares (markdown.py). Empty on purpose: the terminal summary and the lane
views are read on every run, and jinja2 is imported only by a report that needs it."""
