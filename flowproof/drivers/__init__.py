"""How the agent under test is started and stopped."""
