"""The floor every layer stands on: errors and exit codes, atomic files, JSON reading, lane names,
wording, the registry rule, background tasks and the mocked-tool answers.
"""
