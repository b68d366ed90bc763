"""The offline planner on a filesystem-like server: it learns the allowed roots before a call
that needs a path, resolves the file the message names, and says which argument is missing."""

from __future__ import annotations

import pytest

from weir_common.embeddings import make_embedder
from weir_common.events import Observation, ReactStepDecided, ReactStepRequested, ToolInfo
from weir_router.planner import RulePlanner
from weir_router.shortlist import Shortlister

pytestmark = pytest.mark.unit


def _tool(name: str, description: str, *required: str) -> ToolInfo:
    properties = {name: {"type": "string"} for name in required}
    schema = {"type": "object", "properties": properties, "required": list(required)}
    return ToolInfo(name=name, description=description, input_schema=schema, server="fs")


# the descriptions of @modelcontextprotocol/server-filesystem, shortened
FS = {
    t.name: t
    for t in (
        _tool(
            "list_allowed_directories",
            "Returns the list of directories that this server is allowed to access.",
        ),
        _tool(
            "list_directory",
            "Get a detailed listing of all files and directories in a specified path.",
            "path",
        ),
        _tool(
            "read_text_file",
            "Read the complete contents of a file from the file system as text.",
            "path",
        ),
    )
}
ROOTS = "Allowed directories:\n/srv/share"


def _cmd(query: str, *seen: Observation) -> ReactStepRequested:
    return ReactStepRequested(
        query=query, observations=list(seen), model_turns_left=5, tool_calls_left=8, run_id="r"
    )


@pytest.fixture(scope="module")
def planner() -> RulePlanner:
    return RulePlanner(Shortlister(make_embedder))


async def _steps(
    planner: RulePlanner, query: str, results: dict[str, str]
) -> list[ReactStepDecided]:
    seen: list[Observation] = []
    steps = []
    for _ in range(4):
        decided = await planner.decide(_cmd(query, *seen), FS)
        steps.append(decided)
        if decided.tool is None:
            break
        content = results[decided.tool]
        seen.append(Observation(tool=decided.tool, arguments=decided.arguments, content=content))
    return steps


async def test_reading_a_named_file_first_learns_the_root(planner: RulePlanner) -> None:
    results = {"list_allowed_directories": ROOTS, "read_text_file": "launch code 7"}
    steps = await _steps(planner, "Read the file falcon.txt", results)
    calls = [(s.tool, s.arguments, s.discovery) for s in steps if s.tool]
    assert calls == [
        ("list_allowed_directories", {}, True),
        ("read_text_file", {"path": "/srv/share/falcon.txt"}, False),
    ]
    assert steps[-1].tool is None


async def test_listing_the_allowed_directory_lists_its_files(planner: RulePlanner) -> None:
    results = {"list_allowed_directories": ROOTS, "list_directory": "[FILE] falcon.txt"}
    steps = await _steps(planner, "List the files in the allowed directory", results)
    calls = [(s.tool, s.arguments) for s in steps if s.tool]
    assert calls[-1] == ("list_directory", {"path": "/srv/share"})


async def test_a_missing_required_argument_is_named_not_guessed(planner: RulePlanner) -> None:
    results = {"list_allowed_directories": ROOTS}
    steps = await _steps(planner, "Read the file for me", results)
    last = steps[-1]
    assert last.tool is None
    assert last.unfilled is not None
    assert "required argument path" in last.unfilled
    assert "read_text_file" in last.unfilled or "list_directory" in last.unfilled
