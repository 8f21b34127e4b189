"""The live state of one flow as it runs: what crossed the boundaries, and which user turn of a
conversation the agent is in.
"""
