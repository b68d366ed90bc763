"""A turn read with the one before it.

A reply often means little alone: "It was Matt Patterson, he is so talented!" answers a
question about a concert two lines up. So a turn of the log is searched in its context: its
vector leans towards the vector of the turn before it in the conversation (which leant on
the one before, fading), and its BM25 document starts with the end of that turn's text. The
context costs no model call: the previous vector is already stored.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..longterm.models import Vector


def in_context(own: Vector, previous: Sequence[float] | None, weight: float) -> Vector:
    """`own` moved towards `previous` (the vector the turn before it has in the log) by
    `weight`, at unit length; `own` unchanged without a previous vector, at weight 0, or when
    the two do not fit together (another dimension)."""
    if not previous or weight <= 0 or len(previous) != len(own):
        return own
    mixed = np.asarray(own, dtype=np.float64) + weight * np.asarray(previous, dtype=np.float64)
    norm = float(np.linalg.norm(mixed))
    return own if norm == 0.0 else (mixed / norm).tolist()


def tail(text: str, chars: int) -> str:
    """The last `chars` characters of `text`, from a word's start (the whole text if
    shorter)."""
    text = text.strip()
    if len(text) <= chars:
        return text
    cut = text[-chars:]
    if text[-chars - 1].isspace():  # the cut falls between words
        return cut
    space = cut.find(" ")
    return cut[space + 1 :] if 0 <= space < len(cut) - 1 else cut
