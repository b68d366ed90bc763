"""The event contract in numbers: channels in code against channels documented, how many
of the outside client's cases pass against the running product, and which frame kinds each
door of the gateway (WebSocket, SSE, OpenAI) carries.

Builds the six services' apps as `create_app` does (nothing started), reads every topic their
real subscribers take and every topic the ownership map lets each principal publish (which
the bus enforces), maps each to its channel of the contract and looks it up in the checked-in
`docs/asyncapi.json`. Then runs `tests/contract/test_external_client.py` (Kafka's console
producer and consumer against the whole product on Apache Kafka: chat, ingestion, retrieval,
a tool call) with pytest and counts its cases. Writes ``bench/results/contract.json``.

    .venv/bin/python bench/contract.py                   # about 2 minutes (product start-up)
    .venv/bin/python bench/contract.py --skip-external   # the channels only, seconds
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the contract's apps: tests/

from benchlib import write_result
from tests.contract.apps import service_brokers
from weir_common.contract import (
    build_document,
    channel_of,
    documented,
    published_topics,
    render,
    subscribed_topics,
)
from weir_common.topics import Topics
from weir_gateway.doors.table import coverage, sample_frames
from weir_gateway.stream import FRAME_KINDS

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "docs" / "asyncapi.json"
EXTERNAL = ROOT / "tests" / "contract" / "test_external_client.py"


def channels() -> dict[str, Any]:
    """Topics and channels in code, and which of them the checked-in document has."""
    topics, brokers = Topics(), service_brokers()
    subscribed = {t for names in subscribed_topics(brokers).values() for t in names}
    published = {t for names in published_topics(brokers, topics).values() for t in names}
    in_code = sorted(subscribed | published)
    checked_in = json.loads(DOCUMENT.read_text())
    missing = [t for t in in_code if not documented(checked_in, t)]
    by_channel: dict[str, list[str]] = {}
    for topic in in_code:
        by_channel.setdefault(channel_of(topic.replace("{owner}", "x"), topics), []).append(topic)
    covered = [c for c, names in by_channel.items()
               if c in checked_in["channels"] and not set(names) & set(missing)]  # fmt: skip
    return {
        "channels": len(by_channel),
        "channels_documented": len(covered),
        "channels_in_document": len(checked_in["channels"]),
        "topics": len(in_code),
        "topics_documented": len(in_code) - len(missing),
        "undocumented_topics": missing,
        "document_current": DOCUMENT.read_text() == render(build_document(brokers, topics)),
    }


class Outcomes:
    """A pytest plugin that keeps each test's outcome (its call phase, or a failed set-up)."""

    def __init__(self) -> None:
        self.cases: dict[str, str] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = report.nodeid.rsplit("::", 1)[-1]
        if report.when == "call" or report.outcome != "passed":
            self.cases.setdefault(name, report.outcome)


def external_client_cases() -> dict[str, Any]:
    """Run the outside client's tests against a fresh product (Apache Kafka)."""
    os.environ.setdefault("KAFKA_IMPL", "apache")
    os.chdir(ROOT)
    outcomes = Outcomes()
    pytest.main(["-p", "no:cacheprovider", "-q", "-m", "e2e", str(EXTERNAL)], plugins=[outcomes])
    passed = sum(outcome == "passed" for outcome in outcomes.cases.values())
    return {"passed": passed, "total": len(outcomes.cases), "cases": outcomes.cases}


def doors() -> dict[str, Any]:
    """Every door of the gateway against every kind of frame: carried, dropped on purpose
    (with why), or a gap."""
    table = coverage(sample_frames())
    gaps = [f"{door}:{kind}" for door, row in table.items() for kind, v in row.items()
            if v == "gap"]  # fmt: skip
    return {"doors": list(table), "frame_kinds": list(FRAME_KINDS), "table": table,
            "gaps": gaps}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-external", action="store_true", help="only count channels")
    args = parser.parse_args()
    result: dict[str, Any] = channels()
    result["doors"] = doors()
    result["external_client_cases"] = None if args.skip_external else external_client_cases()
    out = write_result("contract", result)
    print(json.dumps(result, indent=2))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
