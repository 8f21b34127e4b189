"""Shared pieces of `make bench` (bench/run.py): servers, the client, statistics, fixtures."""
