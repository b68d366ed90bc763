"""Topic names follow the catalogue and the configured prefix."""

from __future__ import annotations

import pytest

from weir_common.topics import Topics

pytestmark = pytest.mark.unit


def test_topic_names_use_the_prefix() -> None:
    topics = Topics(prefix="test42.")
    assert topics.of("chat.requested") == "test42.chat.requested"
    assert topics.reply("gateway.a") == "test42.replies.gateway.a"
    assert Topics.dead_letter("test42.chat.requested") == "test42.chat.requested.dlq"


def test_all_fixed_topics_include_dead_letters() -> None:
    names = Topics().all_fixed()
    assert "weir.route.decided" in names
    assert "weir.route.decided.dlq" in names
    assert len(names) == len(set(names))
