"""The committed artifact: one JSON trace beside each spec."""
