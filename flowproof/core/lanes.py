"""The names of the lanes a trace holds, for every layer that must tell them apart.

The model boundary's lane is `model`; a tool boundary names its own lanes (MCP:
`mcp.<server>`), and what a lane's entries mean is its kind's business (trace/kinds.py).
"""

MODEL_LANE = "model"
