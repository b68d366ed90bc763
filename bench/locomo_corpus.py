"""LoCoMo as a retrieval benchmark: each turn a document, each question of categories 1–4 a
query whose `evidence` turns are relevant, searched within its own conversation only."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from weir_rag.retrieve.evaluation import EvalDoc, EvalQuery

LOCOMO = Path(
    os.environ.get("LOCOMO_DIR")
    or Path(__file__).resolve().parents[2] / "shared" / "data" / "locomo"
)
WHERE_TO_GET = (
    "LoCoMo conversations 26, 30, 41, 42 and 43 as <id>.json: from the public "
    "snap-research/locomo repository (data/locomo10.json, CC BY-NC 4.0); "
    "set LOCOMO_DIR to their folder"
)


def locomo_dir() -> Path:
    """The LoCoMo folder (``LOCOMO_DIR``, default ../shared/data/locomo); exits when missing."""
    if not (LOCOMO / "26.json").is_file():
        raise SystemExit(f"LoCoMo data not found in {LOCOMO}. {WHERE_TO_GET}.")
    return LOCOMO


CONVERSATIONS = ("26", "30", "41", "42", "43")
CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_DIA_ID = re.compile(r"D\d+:\d+")


def turn_text(speaker: str, text: str, date: str, caption: str | None, with_date: bool) -> str:
    """The indexed text of one turn: session date, speaker, words (and a shared photo)."""
    body = f"{speaker}: {text}"
    if caption:
        body += f" [shares a photo of {caption}]"
    return f"[{date}] {body}" if with_date else body


def load(
    root: Path | None = None, *, with_date: bool = True, captions: bool = True
) -> tuple[list[EvalDoc], list[EvalQuery]]:
    """Turns (collection ``locomo-<conv>``, id ``<conv>:<dia_id>``) and the questions."""
    root = root or locomo_dir()
    docs: list[EvalDoc] = []
    queries: list[EvalQuery] = []
    for conv in CONVERSATIONS:
        data = json.loads((root / f"{conv}.json").read_text())
        data = data.get("conversation", data) | {"qa": data["qa"]}
        collection = f"locomo-{conv}"
        session = 1
        while f"session_{session}_date_time" in data:
            date = data[f"session_{session}_date_time"]
            for turn in data.get(f"session_{session}") or []:
                caption = turn.get("blip_caption") if captions else None
                text = turn_text(turn["speaker"], turn["text"], date, caption, with_date)
                docs.append(
                    EvalDoc(
                        f"{conv}:{turn['dia_id']}",
                        text,
                        collection,
                        f"locomo {conv} session {session}",
                    )
                )
            session += 1
        for n, qa in enumerate(data["qa"]):
            if qa["category"] not in CATEGORIES:
                continue
            evidence = {f"{conv}:{d}" for e in qa["evidence"] for d in _DIA_ID.findall(e)}
            queries.append(
                EvalQuery(
                    f"{conv}-q{n}",
                    qa["question"],
                    frozenset(evidence),
                    collection,
                    CATEGORIES[qa["category"]],
                )
            )
    return docs, queries
