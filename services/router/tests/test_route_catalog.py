"""Routing by the tool catalogue, with the real offline embedder and real MCP tool descriptions.

The catalogue is what the product lists with the official filesystem MCP server and
mcp-server-time connected (tests/data/catalogue_fs_time.json: their published names,
descriptions and input schemas).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from faststream.kafka import TestKafkaBroker
from opentelemetry.sdk.trace import TracerProvider

from weir_common.bus import command_subscriber_options, make_broker, publish, subscriber_options
from weir_common.embeddings import Embedder, make_embedder
from weir_common.events import (
    Intent,
    Route,
    RouteDecided,
    RouteRequested,
    ToolInfo,
    ToolsCatalogUpdated,
)
from weir_common.testing.embedders import CountingEmbedder
from weir_common.topics import Topics
from weir_router.catalog import Catalog
from weir_router.handlers import RouterHandlers
from weir_router.intent import IntentClassifier
from weir_router.planner import RulePlanner
from weir_router.route_catalog import CatalogueMatcher
from weir_router.service import AnswerGenerator, decide_route
from weir_router.settings import RouterSettings
from weir_router.shortlist import Shortlister

pytestmark = pytest.mark.unit

TOOLS = [
    ToolInfo(**entry)
    for entry in json.loads((Path(__file__).parent / "data" / "catalogue_fs_time.json").read_text())
]
BY_NAME = {t.name: t for t in TOOLS}
THRESHOLD = RouterSettings().tool_min_score
SHORTLISTER = Shortlister(make_embedder)  # one embedder for the module: tool vectors are cached
CLASSIFIER = IntentClassifier()


def _matcher() -> CatalogueMatcher:
    return CatalogueMatcher(SHORTLISTER, THRESHOLD)


async def _route(query: str, tools: Sequence[ToolInfo] = TOOLS) -> RouteDecided:
    cmd = RouteRequested(query=query, run_id="r1", conversation_id="c1")
    return await decide_route(CLASSIFIER, cmd, _matcher(), tools)


@pytest.mark.parametrize(
    ("query", "fitting"),
    [
        (
            "List the files in the allowed directory",
            {"list_directory", "list_allowed_directories", "list_directory_with_sizes"},
        ),
        (
            "What is the launch code for project Falcon? Check the file falcon.txt",
            {"read_text_file"},
        ),
        ("Read the file falcon.txt", {"read_text_file"}),
        ("Which directories can you access?", {"list_allowed_directories"}),
        ("列出允许目录里的文件", {"list_directory", "list_allowed_directories"}),
    ],
)
async def test_a_message_no_keyword_rule_knows_goes_to_the_tool_that_fits(
    query: str, fitting: set[str]
) -> None:
    assert CLASSIFIER.classify(query).route is Route.RAG  # no keyword rule chose a tool
    decided = await _route(query)
    assert decided.route is Route.SINGLE_TOOL
    assert decided.intent is Intent.EXTERNAL_DATA
    assert decided.rule is not None
    assert decided.rule.startswith("catalogue:")
    _, tool, score = decided.rule.split(":")
    assert tool in fitting
    assert float(score) >= THRESHOLD
    # the offline planner then plans the very tool the router saw
    planner = RulePlanner(SHORTLISTER, THRESHOLD)
    assert (await planner.candidates(query, BY_NAME))[0].name == tool


@pytest.mark.parametrize(
    "query",
    [
        "What is the difference between a process and a thread?",
        "Who wrote Pride and Prejudice?",
        "Explain how photosynthesis works",
        "write me a poem about rain",
        "Python 协程和线程有什么区别？",
        "What are the main causes of inflation?",
    ],
)
async def test_a_question_no_tool_fits_stays_on_knowledge(query: str) -> None:
    decided = await _route(query)
    assert (decided.route, decided.rule) == (Route.RAG, CLASSIFIER.classify(query).rule)
    planner = RulePlanner(SHORTLISTER, THRESHOLD)
    assert await planner.candidates(query, BY_NAME) == []


@pytest.mark.parametrize("query", ["hello there", "thanks a lot!", "你好", "what is my name?"])
async def test_greetings_and_small_talk_stay_off_tools(query: str) -> None:
    decided = await _route(query)
    assert decided.route is Route.PLAIN_CHAT
    assert decided.rule == CLASSIFIER.classify(query).rule


@pytest.mark.parametrize(
    ("query", "route", "rule"),
    [
        ("重启 user-service", Route.REACT, "action:restart:重启"),
        ("查下最近15分钟的错误日志", Route.SINGLE_TOOL, "data:logs:日志"),
        ("What time is it in Tokyo?", Route.SINGLE_TOOL, "data:time:what time"),
    ],
)
async def test_the_keyword_rules_still_decide_first(query: str, route: Route, rule: str) -> None:
    decided = await _route(query)
    assert (decided.route, decided.rule) == (route, rule)
    without = await decide_route(CLASSIFIER, RouteRequested(query=query, run_id="r1"))
    assert (without.intent, without.route, without.rule) == (
        decided.intent,
        decided.route,
        decided.rule,
    )


async def test_a_named_tool_fits_and_a_changing_tool_takes_the_action_route() -> None:
    decided = await _route("please run get_file_info on notes.txt")
    assert decided.rule == "catalogue:get_file_info:named"
    assert (decided.intent, decided.route) == (Intent.EXTERNAL_DATA, Route.SINGLE_TOOL)
    decided = await _route("use write_file to put hello into notes.txt")
    assert decided.rule == "catalogue:write_file:named"
    assert (decided.intent, decided.route) == (Intent.EXTERNAL_ACTION, Route.REACT)


async def test_without_tools_the_rules_decide_alone() -> None:
    query = "List the files in the allowed directory"
    decided = await _route(query, tools=[])
    assert (decided.route, decided.rule) == (Route.RAG, "default:knowledge")


async def test_a_turn_embeds_its_message_once_for_route_and_plan() -> None:
    counting = CountingEmbedder(make_embedder())

    def factory() -> Embedder:
        return counting

    shortlister = Shortlister(factory)
    query = "Read the file falcon.txt"
    cmd = RouteRequested(query=query, run_id="r1")
    decided = await decide_route(CLASSIFIER, cmd, CatalogueMatcher(shortlister, THRESHOLD), TOOLS)
    planned = await RulePlanner(shortlister, THRESHOLD).candidates(query, BY_NAME)
    assert decided.rule is not None
    assert decided.rule.split(":")[1] == planned[0].name
    assert counting.texts.count(query) == 1
    # tool vectors are cached too: a second turn embeds only its own message
    before = len(counting.texts)
    await decide_route(CLASSIFIER, RouteRequested(query="Which directories can you access?",
                                                  run_id="r2"),
                       CatalogueMatcher(shortlister, THRESHOLD), TOOLS)  # fmt: skip
    assert len(counting.texts) - before <= 1 + 20  # its message (+ baselines of a new matcher)


async def test_the_handler_routes_by_the_catalogue_it_was_sent() -> None:
    topics = Topics(prefix="routecatalogue.")
    broker = make_broker("127.0.0.1:1", "router", TracerProvider())
    handlers = RouterHandlers(
        CLASSIFIER,
        AnswerGenerator(None, RouterSettings()),
        broker,
        topics,
        catalog=Catalog(),
        matcher=_matcher(),
    )
    broker.subscriber(topics.of("route.requested"), **command_subscriber_options("r", 1))(
        handlers.on_route
    )
    broker.subscriber(topics.of("tools.catalog.updated"), **subscriber_options("c"))(
        handlers.on_catalog
    )
    seen: list[RouteDecided] = []

    async def results(event: RouteDecided) -> None:
        seen.append(event)

    broker.subscriber(topics.of("route.decided"), **subscriber_options("h"))(results)
    query = "What is the launch code for project Falcon? Check the file falcon.txt"
    async with TestKafkaBroker(broker) as br:
        await publish(br, topics, RouteRequested(query=query, run_id="before"))
        await publish(br, topics, ToolsCatalogUpdated(tools=TOOLS))
        await publish(br, topics, RouteRequested(query=query, run_id="after"))
    by_run = {e.run_id: e for e in seen}
    assert (by_run["before"].route, by_run["before"].rule) == (Route.RAG, "default:knowledge")
    assert by_run["after"].route is Route.SINGLE_TOOL
    assert by_run["after"].rule is not None
    assert by_run["after"].rule.startswith("catalogue:read_text_file:")


async def test_the_route_offers_the_message_vector_it_made_for_memory() -> None:
    query = "Who wrote Pride and Prejudice? (asked once)"
    decided = await _route(query)
    assert decided.message_vector is not None
    embedder = make_embedder()
    vector = decided.message_vector.for_text(embedder.name, query, embedder.dimension)
    assert vector is not None  # the message's own passage vector, by this embedder
    assert vector == pytest.approx((await embedder.embed_documents([query]))[0], abs=1e-6)
    assert decided.message_vector.for_text(embedder.name, query + "!", embedder.dimension) is None
    # no catalogue asked, nothing embedded: nothing to offer
    nothing = await decide_route(CLASSIFIER, RouteRequested(query="Hi there", run_id="r2"), None)
    assert nothing.message_vector is None
