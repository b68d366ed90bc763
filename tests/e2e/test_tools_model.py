"""Tools with a model, end to end on the real MCP servers: on the knowledge route the model
is offered the connected tools and reads a file through function calling (the answer step,
no planner), and a write stops at a `confirm` frame and runs once, only after approval."""

from __future__ import annotations

from pathlib import Path

import pytest

from weir_common.testing.script import ScriptRule, ScriptToolCall
from weir_common.testing.scripted_llm import ScriptedLLM
from weir_deploy.services import Services

from ..conftest import LAUNCH_CODE
from .conftest import ChatClient, Frame, messages_for
from .test_confirm import calls_sent, record, until, user_of

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(180)]


def steps(frames: list[Frame], kind: str) -> list[Frame]:
    return [f for f in frames if f["type"] == "step" and f["kind"] == kind]


async def test_on_the_knowledge_route_the_model_reads_a_file_by_function_calling(
    chat: ChatClient, llm: ScriptedLLM, shared_files: Path
) -> None:
    path = str(shared_files / "falcon.txt")
    read = ScriptToolCall(name="read_text_file", arguments={"path": path})
    question = "Explain the Falcon project's launch procedure from our notes"
    llm.set_script(
        [
            ScriptRule(match="Falcon project's launch", tool_calls=[read], once=True,
                       with_tools=True),
            ScriptRule(match="Falcon project's launch", text=f"The code is {LAUNCH_CODE}."),
        ]
    )  # fmt: skip
    frames = await chat.turn(question)
    done = frames[-1]
    assert done["type"] == "done", frames
    assert done["route"] == "rag", done  # no keyword rule, no catalogue tool: the knowledge route
    [action] = steps(frames, "action")
    assert (action["tool"], action["arguments"]) == ("read_text_file", {"path": path})
    [observation] = steps(frames, "observation")
    assert LAUNCH_CODE in observation["content"]
    assert done["text"] == f"The code is {LAUNCH_CODE}."
    # the second answer request carried the file's text to the model
    assert LAUNCH_CODE in str(messages_for(llm, question)[-1]["content"])


async def test_write_file_waits_for_approval_and_runs_exactly_once(
    product: Services, chat: ChatClient, llm: ScriptedLLM, shared_files: Path
) -> None:
    target = shared_files / "plan.txt"
    arguments = {"path": str(target), "content": "Launch moved to Friday."}
    write = ScriptToolCall(name="write_file", arguments=arguments)
    llm.set_script(
        [
            ScriptRule(match="plan.txt", tool_calls=[write], once=True, with_tools=True),
            ScriptRule(match="plan.txt", text="Saved the plan."),
        ]
    )
    await chat.send({"type": "chat", "text": "Write 'Launch moved to Friday.' into plan.txt"})
    frames = await until(chat, "confirm", "done", "error")
    ask = frames[-1]
    assert ask["type"] == "confirm", frames
    assert (ask["tool"], ask["arguments"]) == ("write_file", arguments)
    assert not target.exists()  # nothing ran before the user said yes
    run_id, user = ask["run_id"], user_of(chat)
    assert calls_sent(await record(product, run_id, user)) == 0
    approve = {"type": "confirm", "run_id": run_id, "call_id": ask["call_id"], "approve": True}
    await chat.send(approve)
    await chat.send(approve)
    rest = await until(chat, "done")
    assert rest[-1]["text"] == "Saved the plan.", rest
    assert target.read_text() == "Launch moved to Friday."
    assert calls_sent(await record(product, run_id, user)) == 1
