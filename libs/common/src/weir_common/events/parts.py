"""Value objects that several events carry."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Passage(BaseModel):
    """A retrieved chunk with its citation."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    document_id: str
    source: str = Field(description="Display name of the document, e.g. its file name.")
    locator: str = Field(default="", description="Page or section, e.g. 'p. 3' or '## Setup'.")
    text: str = Field(description="What the model reads (raw content for CSV/JSON chunks).")
    score: float = 0.0


class Citation(BaseModel):
    """Where a passage of the answer's evidence came from (no text: shown to clients)."""

    model_config = ConfigDict(frozen=True)

    document_id: str
    source: str = Field(description="Display name of the document, e.g. its file name.")
    locator: str = Field(default="", description="Page or section, e.g. 'p. 3'.")
    score: float = 0.0

    @classmethod
    def of(cls, passage: Passage) -> Citation:
        """The citation of a retrieved passage."""
        return cls(document_id=passage.document_id, source=passage.source,
                   locator=passage.locator, score=passage.score)  # fmt: skip


class Observation(BaseModel):
    """One action of a ReAct loop and what it returned."""

    model_config = ConfigDict(frozen=True)

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    content: str
    is_error: bool = False


class ProposedCall(BaseModel):
    """A tool call a planner or the model asked for; the harness decides whether it runs."""

    model_config = ConfigDict(frozen=True)

    tool: str
    arguments: dict[str, Any] = Field(default_factory=dict)
