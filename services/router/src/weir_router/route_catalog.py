"""Routing by the tool catalogue: does a connected tool fit the message, and which one?

The keyword rules (:mod:`weir_router.intent`) are the fast, explainable path written for the
seed's operations vocabulary. Any other tool a user connects is reached through this module:
the router asks it when the rules chose no tool route, and the offline planner asks it for the
same tool afterwards, so the route and the plan agree.

A tool fits when the message names it, or when its score reaches one threshold
(``RouterSettings.tool_min_score``). The score is how much closer the message is to the tool
than ordinary messages are: the embedding similarity of message and tool
(:class:`~weir_router.shortlist.Shortlister`) less the tool's mean similarity to a fixed set of
everyday messages that no tool serves (:data:`BACKGROUND`; a short description such as
"Convert time between timezones" is close to every short message, a long one to none), adjusted
by two cheap, explainable signals:

* ``+ NAME_BONUS × (share of the tool name's words found in the message)`` — "convert the
  time to Tokyo" and ``convert_time``;
* ``- UNFILLABLE_PENALTY`` when the tool requires a number and the message holds none — a
  general question ("what is the best way to reduce CO2 emissions?") next to a calculator that
  needs figures.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from weir_common.events import Intent, Route, ToolInfo
from weir_router.shortlist import Shortlister, tool_text

BACKGROUND = (
    "hi",
    "good morning, how are you?",
    "thank you very much",
    "tell me a joke",
    "what is the meaning of life?",
    "who was the first president of the united states?",
    "how do vaccines work?",
    "write a short story about a dragon",
    "what should I cook for dinner tonight?",
    "recommend a good book",
    "你好",
    "谢谢你的帮助",
    "给我讲个笑话",
    "人工智能是什么？",
    "why is the sky blue?",
    "can you help me with my homework?",
    "what are the benefits of exercise?",
    "summarize the plot of Hamlet",
    "I feel tired today",
    "what is your name?",
)
"""Everyday messages, English and Chinese, that no tool serves: each tool's baseline."""
NAME_BONUS = 0.04
"""At most this is added when every word of the tool's name is in the message."""
UNFILLABLE_PENALTY = 0.03
"""Taken off when a required number has no figure in the message to come from."""


def _wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


_STOP = _wordset(
    "the a an of to in on for and or with by from at is are was were be what which who how get "
    "find give me my i you it its this that than then into as do does can could please tell "
    "about all any some set"
)
_SUFFIXES = ("ing", "ed", "es", "s")
_CAMEL = re.compile(r"([a-z0-9])([A-Z])")
_WORD = re.compile(r"[a-z]+")
_NUMBER = re.compile(
    r"\d|[一二两三四五六七八九十百千万半]|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|"
    r"eleven|twelve|twenty|thirty|forty|fifty|hundred|thousand|million|billion|half|dozen)\b",
    re.I,
)
_NUMERIC = frozenset({"integer", "number", "float"})
_ACTION_VERBS = _wordset(
    "write create delete remove move rename edit update modify set send post book cancel "
    "restart stop start kill deploy rollback purchase buy pay transfer insert drop"
)


def _stem(word: str) -> str:
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)]
    return word


def words(text: str) -> set[str]:
    """Content words of `text`, lower-cased and crudely stemmed (camelCase and snake_case split)."""
    spaced = _CAMEL.sub(r"\1 \2", text).lower()
    return {_stem(w) for w in _WORD.findall(spaced) if len(w) >= 3 and w not in _STOP}


def name_words(tool: ToolInfo) -> set[str]:
    """The content words of a tool's name (server prefixes such as ``fs.`` included)."""
    return words(re.sub(r"[_.\-/]", " ", tool.name))


def needs_number(tool: ToolInfo) -> bool:
    """True when a required argument of the tool is a number (or a list of numbers)."""
    schema = tool.input_schema
    props = schema.get("properties") or {}
    for name in schema.get("required") or []:
        prop = props.get(name) or {}
        kind = prop.get("type")
        if kind in _NUMERIC:
            return True
        if kind == "array" and (prop.get("items") or {}).get("type") in _NUMERIC:
            return True
    return False


def named_in(query: str, tools: Sequence[ToolInfo]) -> list[ToolInfo]:
    """Tools the message names, as ``get_current_time`` or as "get current time"."""
    lowered = query.lower()
    return [
        t
        for t in tools
        if re.search(rf"(?<![\w.-]){re.escape(t.name.lower())}(?![\w-])", lowered)
        or t.name.lower().replace("_", " ").replace("-", " ") in lowered
    ]


def deprecated(tool: ToolInfo) -> bool:
    """The tool's description says it is deprecated (e.g. the filesystem server's read_file)."""
    return "deprecated" in tool.description.lower()


def is_action(tool: ToolInfo) -> bool:
    """A tool with side effects: marked for confirmation, or named after a changing verb."""
    if bool(getattr(tool, "confirm", False)):
        return True
    first = re.split(r"[_.\-/ ]|(?<=[a-z])(?=[A-Z])", tool.name)
    verbs = [w.lower() for w in first if w]
    return bool(verbs) and verbs[0] in _ACTION_VERBS


@dataclass(frozen=True, slots=True)
class ToolFit:
    """A tool that fits a message: its score (similarity above baseline, adjusted) or named."""

    tool: ToolInfo
    score: float
    similarity: float
    named: bool = False

    @property
    def rule(self) -> str:
        """The run record's label, ``catalogue:<tool>:<score>`` or ``catalogue:<tool>:named``."""
        how = "named" if self.named else f"{self.score:.3f}"
        return f"catalogue:{self.tool.name}:{how}"

    @property
    def intent(self) -> Intent:
        """Reading data, or acting on a system."""
        return Intent.EXTERNAL_ACTION if is_action(self.tool) else Intent.EXTERNAL_DATA

    @property
    def route(self) -> Route:
        """One call for reading; the ReAct loop (and its confirmation) for actions."""
        return Route.REACT if is_action(self.tool) else Route.SINGLE_TOOL


class CatalogueMatcher:
    """Which connected tools fit a message, best first, above one threshold."""

    def __init__(self, shortlister: Shortlister | None, min_score: float) -> None:
        self.shortlister = shortlister
        self.min_score = min_score
        self._baselines: dict[str, float] = {}  # by tool text: a tool's description may change

    async def warm_up(self) -> None:
        """Load the embedding model and embed the background messages (at start-up)."""
        if self.shortlister is not None:
            for message in BACKGROUND:
                await self.shortlister.query_vector(message)

    async def _baseline(self, tools: Sequence[ToolInfo]) -> dict[str, float]:
        """Each tool's mean similarity to the background messages (computed once per tool)."""
        assert self.shortlister is not None
        missing = [t for t in tools if tool_text(t) not in self._baselines]
        if missing:
            sums = dict.fromkeys((tool_text(t) for t in missing), 0.0)
            for message in BACKGROUND:
                for tool, similarity in await self.shortlister.rank(message, missing):
                    sums[tool_text(tool)] += similarity
            for text, total in sums.items():
                self._baselines[text] = total / len(BACKGROUND)
        return {t.name: self._baselines[tool_text(t)] for t in tools}

    async def scored(self, query: str, tools: Sequence[ToolInfo]) -> list[ToolFit]:
        """Every tool with its adjusted score, best first (empty without an embedder)."""
        if self.shortlister is None or not tools:
            return []
        said = words(query)
        has_number = _NUMBER.search(query) is not None
        baseline = await self._baseline(tools)
        fits = []
        for tool, similarity in await self.shortlister.rank(query, tools):
            names = name_words(tool)
            score = (
                similarity
                - baseline[tool.name]
                + NAME_BONUS * len(said & names) / max(len(names), 1)
            )
            if not has_number and needs_number(tool):
                score -= UNFILLABLE_PENALTY
            fits.append(ToolFit(tool, score, similarity))
        return sorted(fits, key=lambda f: f.score, reverse=True)

    async def fits(self, query: str, tools: Sequence[ToolInfo]) -> list[ToolFit]:
        """Tools named in the message, else the best-scoring one when it reaches the threshold."""
        named = named_in(query, tools)
        if named:
            return [ToolFit(t, 1.0, 1.0, named=True) for t in named]
        # a tool its own description calls deprecated is used only when named
        current = [f for f in await self.scored(query, tools) if not deprecated(f.tool)]
        return [f for f in current[:1] if f.score >= self.min_score]

    async def best(self, query: str, tools: Sequence[ToolInfo]) -> ToolFit | None:
        """The tool this message goes to, or None when none fits."""
        found = await self.fits(query, tools)
        return found[0] if found else None
