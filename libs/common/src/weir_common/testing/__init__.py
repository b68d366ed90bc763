"""Test doubles with real transports (a scripted OpenAI-compatible server)."""

from weir_common.testing.script import ScriptRule, ScriptState, ScriptToolCall
from weir_common.testing.scripted_llm import ScriptedLLM, create_app

__all__ = ["ScriptRule", "ScriptState", "ScriptToolCall", "ScriptedLLM", "create_app"]
