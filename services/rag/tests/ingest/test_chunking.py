"""The Markdown chunker's tiers, the fixed-size splitter and the semantic splitter."""

from __future__ import annotations

import itertools

import pytest

from weir_rag.ingest.chunk_prose import chunk_prose, sections
from weir_rag.ingest.fixed import split_fixed
from weir_rag.ingest.markdown import parse_markdown, rst_to_markdown
from weir_rag.ingest.semantic import cohesion, split_semantic
from weir_rag.ingest.units import Unit, hard_split, split_sentences

pytestmark = pytest.mark.unit

DOC = """# Setup

Short intro.

## Install

Run the installer. It takes a minute.

```python
def main():

    return 1
```

| a | b |
| --- | --- |
| 1 | 2 |

### Linux

Use the package manager.
"""


def test_markdown_blocks() -> None:
    kinds = [(b.kind, b.level) for b in parse_markdown(DOC)]
    assert kinds == [
        ("heading", 1),
        ("text", 0),
        ("heading", 2),
        ("text", 0),
        ("code", 0),
        ("table", 0),
        ("heading", 3),
        ("text", 0),
    ]
    code = parse_markdown(DOC)[4].text
    assert code.startswith("```python")
    assert code.endswith("```")
    assert "\n\n" in code


def test_sections_carry_the_heading_path() -> None:
    paths = [s.path for s in sections(parse_markdown(DOC))]
    assert paths == [("Setup",), ("Setup", "Install"), ("Setup", "Install", "Linux")]


def test_rst_titles_become_headings_by_order_of_style() -> None:
    text = "=====\nTitle\n=====\n\nPart\n----\n\nbody\n\nOther\n-----\n"
    assert rst_to_markdown(text).splitlines() == [
        "# Title",
        "",
        "## Part",
        "",
        "body",
        "",
        "## Other",
    ]


def test_sentences_latin_and_cjk() -> None:
    assert split_sentences("One. Two? 三。四！") == ["One.", "Two?", "三。", "四！"]


async def test_tier1_keeps_small_sections_whole() -> None:
    drafts = await chunk_prose(parse_markdown(DOC), False, max_chars=800, overlap=80)
    assert [d.section for d in drafts] == [
        ("Setup",),
        ("Setup", "Install"),
        ("Setup", "Install", "Linux"),
    ]
    assert drafts[1].raw_content.startswith("## Install\n\nRun the installer.")


def _sentences(n: int) -> str:
    return " ".join(f"Sentence number {i} talks about topic {i % 7}." for i in range(n))


async def test_tier3_fixed_split_with_overlap() -> None:
    blocks = parse_markdown("# Long\n\n" + _sentences(60))
    drafts = await chunk_prose(blocks, False, max_chars=300, overlap=60)
    assert len(drafts) > 5
    assert all(len(d.raw_content) <= 300 for d in drafts)
    for left, right in itertools.pairwise(drafts):
        first_sentence = right.raw_content.split(". ")[0] + "."
        assert first_sentence in left.raw_content  # the overlap carried a whole sentence


async def test_code_blocks_are_never_cut() -> None:
    code = "```\n" + "\n".join(f"line_{i} = {i}" for i in range(80)) + "\n```"
    blocks = parse_markdown("# Code\n\n" + _sentences(10) + "\n\n" + code + "\n\n" + _sentences(10))
    drafts = await chunk_prose(blocks, False, max_chars=300, overlap=40)
    holders = [d for d in drafts if "line_0 = 0" in d.raw_content]
    assert len(holders) == 1
    assert code in holders[0].raw_content
    assert sum(d.raw_content.count("```") for d in drafts) == 2


def test_hard_split_windows_overlap_at_words() -> None:
    text = " ".join(f"w{i}" for i in range(200))
    pieces = hard_split(text, 100, 20)
    assert all(len(p) <= 100 for p in pieces)
    assert " ".join(pieces).count("w199") >= 1
    assert pieces[1].split()[0] in pieces[0]  # overlap


def test_fixed_split_packs_tables_whole() -> None:
    units = [Unit("| a |\n| --- |\n| 1 |", "table", 0), Unit("x" * 50, "text", 1)]
    assert split_fixed(units, 60, 10) == ["| a |\n| --- |\n| 1 |", "x" * 50]


def test_semantic_split_cuts_at_the_least_similar_boundary() -> None:
    units = [Unit(f"s{i} " + "x" * 40, "text", 0) for i in range(6)]
    sims = [0.9, 0.8, 0.1, 0.85, 0.9]  # the topic changes between unit 2 and unit 3
    spans = split_semantic(units, sims, max_chars=150)
    assert [[u.text[:2] for u in span] for span in spans] == [
        ["s0", "s1", "s2"],
        ["s3", "s4", "s5"],
    ]


PLANTS = [
    "Photosynthesis turns light into chemical energy in the leaves of plants.",
    "The leaves hold chlorophyll, which absorbs red and blue light.",
    "Chlorophyll sits in the chloroplasts of each leaf cell.",
    "With light, the chloroplasts split water and release oxygen.",
    "The plant stores the captured energy as sugar for growth.",
]
NETWORK = [
    "TCP congestion control keeps a sender from flooding the network.",
    "The sender grows its congestion window while packets are acknowledged.",
    "A lost packet tells the sender the network is congested.",
    "The congestion window then shrinks, and the sender slows down.",
    "Routers drop packets when their queues overflow.",
]


@pytest.mark.parametrize("order", ["plants first", "network first"])
def test_cohesion_is_lowest_at_the_topic_boundary(order: str) -> None:
    first, second = (PLANTS, NETWORK) if order == "plants first" else (NETWORK, PLANTS)
    scores = cohesion([*first, *second])
    assert len(scores) == len(first) + len(second) - 1
    best, runner_up = sorted(scores)[:2]
    assert scores.index(best) == len(first) - 1
    assert best < runner_up * 1.5  # a clear margin (scores are negative depths)


def test_cohesion_works_without_spaces_between_words() -> None:
    cats = ["猫喜欢吃鱼。", "猫每天睡很久。", "猫的胡须很灵敏。"]
    stocks = ["股票市场今天下跌。", "股票投资有风险。", "市场情绪影响股票。"]
    cjk = [*cats, *stocks]
    scores = cohesion(cjk)
    assert scores.index(min(scores)) == 2


async def test_semantic_tier_cuts_two_concatenated_topics_apart() -> None:
    text = " ".join([*NETWORK, *PLANTS])
    drafts = await chunk_prose(parse_markdown(f"# Notes\n\n{text}"), True, 400, 0)
    assert [d.raw_content for d in drafts] == [
        "# Notes\n\n" + " ".join(NETWORK),
        " ".join(PLANTS),
    ]
    # without tier 2 the same section is packed by size, across the topic change
    fixed = await chunk_prose(parse_markdown(f"# Notes\n\n{text}"), False, 400, 0)
    assert any("Routers" in d.raw_content and "Photosynthesis" in d.raw_content for d in fixed)
