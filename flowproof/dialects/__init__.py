"""Pure translation between wire bodies and the facts flowproof needs; one module per API."""

from flowproof.dialects import anthropic as _anthropic  # noqa: F401  (each registers itself)
from flowproof.dialects import azure_openai as _azure_openai  # noqa: F401
from flowproof.dialects import gemini as _gemini  # noqa: F401
from flowproof.dialects import ollama as _ollama  # noqa: F401
from flowproof.dialects import openai_chat as _openai_chat  # noqa: F401
from flowproof.dialects import openai_responses as _openai_responses  # noqa: F401
from flowproof.dialects.base import Dialect, dialect_for_path, dialect_named

__all__ = ["Dialect", "dialect_for_path", "dialect_named"]
