"""An agent whose one request to flowproof's proxy has a path that decodes to a line break and
a workflow command (`/v1/x%0A::warning title=path::…`): how text an agent controls reaches the
lines flowproof prints."""

import http.client
import os
from urllib.parse import urlsplit

base = urlsplit(os.environ["OPENAI_BASE_URL"])
connection = http.client.HTTPConnection(base.hostname or "127.0.0.1", base.port, timeout=30)
connection.request(
    "POST",
    # The base URL's path (flowproof's capability, then /v1), as a client builds on it.
    base.path.rstrip("/") + "/x%0A::warning%20title=path::from%20a%20request%20path",
    body=b'{"model": "gpt-4o-mini", "messages": []}',
    headers={"Content-Type": "application/json"},
)
connection.getresponse().read()
