"""OpenAI Responses (`…/responses`)."""
