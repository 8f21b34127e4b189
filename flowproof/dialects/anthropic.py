"""Anthropic Messages (`…/messages`)."""
