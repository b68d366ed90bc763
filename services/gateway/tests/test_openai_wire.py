"""The OpenAI door's wire format: requests read, completions and chunks written."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from weir_gateway.doors.openai_frames import RESET_SEPARATOR, Completion
from weir_gateway.doors.openai_wire import PROFILES, CompletionRequest

pytestmark = pytest.mark.unit


def _request(**fields: object) -> CompletionRequest:
    body = {"model": "weir-chat", "messages": [{"role": "user", "content": "hi"}], **fields}
    return CompletionRequest.model_validate(body)


def test_the_profiles_switch_knowledge_and_tools() -> None:
    assert (PROFILES["weir-chat"].knowledge, PROFILES["weir-chat"].tools) == (False, False)
    assert (PROFILES["weir-rag"].knowledge, PROFILES["weir-rag"].tools) == (True, False)
    assert (PROFILES["weir-agent"].knowledge, PROFILES["weir-agent"].tools) == (True, True)


def test_the_turn_is_the_last_user_message_with_text_parts_joined() -> None:
    parts = [{"type": "text", "text": "What is "}, {"type": "text", "text": "Falcon?"}]
    body = _request(messages=[{"role": "system", "content": "Be brief."},
                              {"role": "user", "content": parts}])  # fmt: skip
    assert body.question() == "What is Falcon?"


@pytest.mark.parametrize(
    "messages",
    [
        [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        [{"role": "user", "content": "   "}],
    ],
)
def test_a_request_not_ending_with_a_user_message_is_refused(messages: list[object]) -> None:
    with pytest.raises(ValueError, match="last message must be the user's"):
        _request(messages=messages).question()


def test_images_and_unknown_roles_do_not_validate() -> None:
    image = [{"type": "image_url", "image_url": {"url": "data:,"}}]
    with pytest.raises(ValidationError):
        _request(messages=[{"role": "user", "content": image}])
    with pytest.raises(ValidationError):
        _request(messages=[{"role": "narrator", "content": "hi"}])
    with pytest.raises(ValidationError):
        _request(messages=[])


def test_sampling_fields_are_accepted_and_ignored() -> None:
    assert _request(temperature=0.2, max_tokens=10, n=1).question() == "hi"


def test_a_chat_resent_whole_stays_in_one_conversation() -> None:
    first = _request(messages=[{"role": "user", "content": "hi"}])
    later = _request(messages=[{"role": "user", "content": "hi"},
                               {"role": "assistant", "content": "hello"},
                               {"role": "user", "content": "and now?"}])  # fmt: skip
    assert first.conversation() == later.conversation()
    assert first.conversation() != _request(user="someone-else").conversation()
    assert _request(conversation_id="mine").conversation() == "mine"


def test_a_whole_completion_carries_the_answer_and_weir_s_extension() -> None:
    completion = Completion("r1", "c1", "weir-rag")
    cited = {"document_id": "d", "source": "falcon.pdf", "locator": "p. 1", "score": 0.3}
    completion.encode({"type": "step", "kind": "retrieval", "tool": None,
                       "content": "falcon.pdf", "sources": [cited]})  # fmt: skip
    done = {"type": "done", "text": "It flies.", "route": "knowledge", "intent": "knowledge",
            "offline": True}  # fmt: skip
    whole = completion.whole(done)
    assert whole["object"] == "chat.completion"
    assert whole["choices"][0]["message"] == {"role": "assistant", "content": "It flies.",
                                              "refusal": None}  # fmt: skip
    assert whole["choices"][0]["finish_reason"] == "stop"
    assert whole["weir"]["sources"] == [cited]
    assert whole["weir"]["route"] == "knowledge"
    assert whole["weir"]["run_id"] == "r1"


def test_chunks_of_a_streamed_answer() -> None:
    completion = Completion("r1", "c1", "weir")
    assert completion.first()["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    reset = completion.encode({"type": "reset", "attempt": 2})
    assert reset is not None
    assert reset["choices"][0]["delta"] == {"content": RESET_SEPARATOR}
    assert reset["weir"] == {"reset": 2}
    step = completion.encode({"type": "step", "kind": "action", "tool": "clock",
                              "content": "clock()", "arguments": {}})  # fmt: skip
    assert step is not None
    assert step["choices"][0]["delta"] == {}
    assert step["weir"]["step"]["tool"] == "clock"
    last = completion.encode({"type": "done", "text": "x", "route": "tool", "offline": False})
    assert last is not None
    assert last["choices"][0]["finish_reason"] == "stop"
    assert last["weir"]["steps"][0]["kind"] == "action"
    error = completion.encode({"type": "error", "code": "deadline", "message": "late"})
    assert error == {"error": {"message": "late", "type": "server_error", "code": "deadline",
                               "param": None}}  # fmt: skip


def test_a_whole_completion_whose_run_asks_for_approval_says_how_to_give_it() -> None:
    completion = Completion("r1", "c1", "weir-agent")
    ask = {"type": "confirm", "run_id": "r1", "call_id": "k1", "tool": "append_note",
           "arguments": {"text": "hi"}, "server": "notes", "reason": "side_effects",
           "expires_at": "2026-12-04T22:00:00+00:00", "conversation_id": "c1",
           "id": None}  # fmt: skip
    whole = completion.whole(ask)
    text = whole["choices"][0]["message"]["content"]
    assert 'append_note({"text": "hi"})' in text
    assert "POST /api/runs/r1/confirm" in text
    assert whole["weir"]["confirm"]["call_id"] == "k1"
    assert whole["weir"]["run_id"] == "r1"
