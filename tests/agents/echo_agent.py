"""An agent that fails before calling any model, printing AGENT_ECHO to its stderr: how a value
the agent should never have repeated (a key it found in its own environment) reaches the
failure message flowproof prints."""

import os
import sys

print(f"config dump: key={os.environ.get('AGENT_ECHO', '')}", file=sys.stderr)
sys.exit(1)
