"""Offline evaluator rules (F39, seed 004): cheap checks of a generated answer.

Each rule returns a short reason when the answer fails it, or None. `first_failure` runs
them in order; the harness regenerates with that reason as the revision note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from weir_common.llm.relevance import terms

_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")
_LETTER = re.compile(r"[A-Za-z\u3400-\u9fff\uf900-\ufaff]")
_CITATION = re.compile(r"\[\d+\]")
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_SENTENCE = re.compile(r"[^.!?。！？;；\n]+")

# A preference that names something the user avoids: "dislikes coffee", "不喜欢咖啡".
_EN_NEGATED = re.compile(
    r"\b(?:dislikes?|hates?|avoids?|doesn'?t like|does not like|don'?t like|do not like|"
    r"(?:is |am )?allergic to|never (?:eats?|drinks?)|can'?t (?:eat|drink))\s+"
    r"([a-z][a-z \-]{1,40}?)(?=$|[,.;:!?)\n]| and | or | but )",
    re.IGNORECASE,
)
_ZH_NEGATED = re.compile(r"(?:不喜欢|讨厌|不爱|不吃|不喝|忌口|忌)([\u3400-\u9fff]{1,8})")
# memory's preference block (seed 000): "不喜欢: 咖啡、茶" / "Dislikes: coffee, tea".
_BLOCK_LINE = re.compile(r"^\s*(?:dislikes|不喜欢|讨厌|allergies|过敏)\s*[:：]\s*(.+)$", re.I)
_LIST_SEP = re.compile(r"\s*(?:[,，、;；/]|\band\b|和)\s*")
_ZH_ALLERGY = re.compile(r"对([\u3400-\u9fff]{1,8}?)过敏")
# Words near a mention that mean the answer also steers away from it.
_ANSWER_NEGATION = re.compile(
    r"\b(?:no|not|never|avoid|avoids|avoiding|without|instead of|skip|don'?t|dislikes?|allergic)\b"
    r"|不|别|避免|避开|过敏|代替|而不是|除了",
    re.IGNORECASE,
)
# Words that make a sentence a suggestion: talking about a disliked thing is no contradiction,
# recommending it is ("Coffee came from Yemen" passes, "Have a coffee" does not).
_SUGGESTION = re.compile(
    r"\b(?:try|have|get|grab|order|drink|eat|recommend|suggest|how about|why not|go for|"
    r"you could|you should|you might|consider|perfect|ideal|best)\b"
    r"|推荐|建议|试试|尝试|可以|来一|不妨|最好|适合",
    re.IGNORECASE,
)
_EN_STOP = {"the", "a", "an", "to", "of", "very", "much", "any"}
#: Terms an answer must share with a passage (beyond the question's) to be drawing on it.
DRAWN_TERMS = 2


def cjk_share(text: str) -> float:
    """Share of letters that are CJK ideographs (0 when the text has no letters)."""
    letters = _LETTER.findall(text)
    return sum(1 for ch in letters if _CJK.match(ch)) / len(letters) if letters else 0.0


def avoided_terms(preference_lines: Iterable[str]) -> set[str]:
    """Things the stored preferences and facts say the user dislikes, avoids or cannot have."""
    terms: set[str] = set()
    for line in preference_lines:
        block = _BLOCK_LINE.match(line)
        if block:
            terms.update(t.strip(" .。").lower() for t in _LIST_SEP.split(block.group(1)))
            continue
        for match in _EN_NEGATED.finditer(line):
            words = [w for w in match.group(1).lower().split() if w not in _EN_STOP]
            if words:
                terms.add(" ".join(words))
        for pattern in (_ZH_NEGATED, _ZH_ALLERGY):
            for match in pattern.finditer(line):
                terms.add(match.group(1).rstrip("的了"))
    return {t for t in terms if t}


def _mentions(sentence: str, term: str) -> bool:
    if _CJK.search(term):
        return term in sentence
    return re.search(rf"\b{re.escape(term)}(?:s|es)?\b", sentence, re.IGNORECASE) is not None


def empty_answer(answer: str) -> str | None:
    return "the answer is empty" if not answer.strip() else None


def off_language(answer: str, question: str) -> str | None:
    """The user wrote Chinese and the answer has none, or the reverse."""
    asked, answered = cjk_share(question), cjk_share(answer)
    if asked >= 0.3 and not _CJK.search(answer):
        return "the answer is not in the user's language (Chinese); answer in Chinese"
    if asked == 0.0 and _LETTER.search(question) and answered >= 0.5:
        return "the answer is not in the user's language (English); answer in English"
    return None


def contradicts_preferences(answer: str, preference_lines: Iterable[str]) -> str | None:
    """The answer recommends something the user's stored preferences say they avoid."""
    terms = avoided_terms(preference_lines)
    for sentence in _SENTENCE.findall(answer):
        for term in sorted(terms):
            if (
                _mentions(sentence, term)
                and _SUGGESTION.search(sentence)
                and not _ANSWER_NEGATION.search(sentence)
            ):
                return f"the answer suggests '{term}', which the user's stored preferences avoid"
    return None


def _terms(text: str) -> set[str]:
    """The text's words and CJK bigrams (relevance terms), and its numbers however short."""
    return terms(text) | set(_NUMBER.findall(text))


def missing_citation(answer: str, question: str, evidence: Sequence[tuple[str, str]]) -> str | None:
    """The answer draws on a passage of the evidence (`(source, text)` pairs) but cites
    none ([n] markers or a source name). Drawing on one: sharing at least
    `DRAWN_TERMS` terms with it that the question does not hold. An answer that does not
    use the passages (retrieval found nothing to the point) need not cite them."""
    if not evidence or _CITATION.search(answer):
        return None
    if any(source and source.lower() in answer.lower() for source, _ in evidence):
        return None
    own = _terms(answer) - _terms(question)
    if not any(len(own & _terms(text)) >= DRAWN_TERMS for _, text in evidence):
        return None
    return "the answer uses the evidence but cites none of it; cite passages as [n]"


def first_failure(
    answer: str,
    question: str,
    preference_lines: Iterable[str] = (),
    evidence: Sequence[tuple[str, str]] = (),
) -> str | None:
    """The first failed rule's reason, or None when the answer passes every rule."""
    return (
        empty_answer(answer)
        or off_language(answer, question)
        or contradicts_preferences(answer, preference_lines)
        or missing_citation(answer, question, evidence)
    )
