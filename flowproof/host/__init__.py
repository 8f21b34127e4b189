"""The host flowproof runs on: the environment the user started it in, proxy variables, the agent's
process tree, how to start this same engine again, and one flowproof per environment.
"""
