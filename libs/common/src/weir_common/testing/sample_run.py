"""The replies of a sample run: one of every kind a requester's reply topic carries.

The gateway's door table (`weir_gateway.doors.table`) turns them into frames to check that
every door carries, or deliberately drops, every kind of frame.
"""

from __future__ import annotations

from datetime import timedelta

from weir_common.events import (
    AnswerDelta,
    Citation,
    ConversationTitled,
    Reply,
    RunCompleted,
    RunFailed,
    RunStep,
    ToolConfirmationRequested,
    utcnow,
)
from weir_common.events.base import Envelope


def sample_replies() -> list[Reply]:
    """A run's replies: a piece of an answer, a restarted generation, each kind of step, a
    tool call waiting for approval, the answer, a failure, and the conversation's title."""
    run: Envelope = {"run_id": "r1", "conversation_id": "c1", "user_id": "ann"}
    cited = Citation(document_id="d1", source="falcon.pdf", locator="p. 3", score=0.4)
    return [
        AnswerDelta(seq=0, text="Let me look. ", **run),
        AnswerDelta(seq=0, attempt=2, text="The code ", **run),
        RunStep(kind="thought", content="I should read the file", **run),
        RunStep(kind="action", content="read_text_file(...)", tool="read_text_file",
                arguments={"path": "/d/falcon.txt"}, **run),
        RunStep(kind="observation", content="launch code 7", tool="read_text_file", **run),
        RunStep(kind="retrieval", content="falcon.pdf", sources=[cited], **run),
        ToolConfirmationRequested(call_id="c1", tool="append_note", arguments={"text": "7"},
                                  expires_at=utcnow() + timedelta(minutes=5), **run),
        RunCompleted(text="The code is 7.", route="rag", **run),
        RunFailed(code="step_failed", reason="answer.generate.requested failed after 3 "
                  "attempts", **run),
        ConversationTitled(client_conversation_id="c1", title="Project Falcon", user_id="ann"),
    ]  # fmt: skip
