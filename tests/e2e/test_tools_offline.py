"""Tools offline (no model configured): messages no keyword rule knows reach the connected
MCP servers through the catalogue, the planner fills the arguments from the tools' schemas
(the file a message names is resolved against the server's allowed directory), and the
offline answer quotes what the tools returned, in the user's language."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import websockets

from weir_common.events import new_id

from ..conftest import LAUNCH_CODE
from .conftest import ChatClient, Frame, Offline

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(240), pytest.mark.xdist_group("own")]


@pytest.fixture
async def chat(offline: Offline) -> AsyncIterator[ChatClient]:
    url = offline.front.url("gateway").replace("http", "ws") + "/ws/chat"
    headers = {"X-User-Id": f"off-{new_id()[:6]}"}
    async with websockets.connect(url, additional_headers=headers) as ws:
        client = ChatClient(ws)
        assert (await client.recv())["type"] == "ready"
        yield client


def _calls(frames: list[Frame]) -> list[tuple[str, dict[str, object]]]:
    actions = [f for f in frames if f["type"] == "step" and f["kind"] == "action"]
    return [(f["tool"], f["arguments"]) for f in actions]


def _done(frames: list[Frame]) -> Frame:
    done = frames[-1]
    assert done["type"] == "done", frames
    assert done["offline"] is True
    return done


async def test_list_the_files_returns_the_listing(chat: ChatClient, shared_files: Path) -> None:
    frames = await chat.turn("List the files in the allowed directory")
    calls = _calls(frames)
    assert ("list_directory", {"path": str(shared_files)}) in calls, calls
    assert "[FILE] falcon.txt" in _done(frames)["text"]


async def test_read_falcon_returns_the_text(chat: ChatClient, shared_files: Path) -> None:
    frames = await chat.turn("Read the file falcon.txt")
    assert ("read_text_file", {"path": str(shared_files / "falcon.txt")}) in _calls(frames)
    assert f"Project Falcon launch code: {LAUNCH_CODE}" in _done(frames)["text"]


async def test_a_question_about_a_file_quotes_its_content(chat: ChatClient) -> None:
    frames = await chat.turn(
        "What is the launch code for project Falcon? Check the file falcon.txt"
    )
    assert LAUNCH_CODE in _done(frames)["text"]


@pytest.mark.parametrize(
    ("question", "heading"),
    [
        ("现在东京几点？", "工具为这个问题返回的结果"),
        ("What time is it in Tokyo?", "What the tools returned"),
    ],
)
async def test_time_questions_quote_the_time_tool(
    chat: ChatClient, question: str, heading: str
) -> None:
    frames = await chat.turn(question)
    assert ("get_current_time", {"timezone": "Asia/Tokyo"}) in _calls(frames)
    observation = next(f for f in frames if f["type"] == "step" and f["kind"] == "observation")
    tokyo = json.loads(observation["content"])
    text = _done(frames)["text"]
    assert heading in text
    assert tokyo["datetime"] in text


async def test_a_file_the_message_does_not_name_is_asked_for(chat: ChatClient) -> None:
    frames = await chat.turn("Read the file for me")
    text = _done(frames)["text"]
    called = [tool for tool, _ in _calls(frames)]
    assert "read_text_file" not in called
    assert "was not called: its required argument path could not be filled" in text
