"""Knowledge events: ingesting documents and retrieving passages."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from weir_common.events.base import Event, StepCommand, StepResult
from weir_common.events.parts import Passage


class IngestRequested(Event):
    """Ingest one stored document. Keyed by `document_id`; the file itself is never in Kafka."""

    type: Literal["ingest.requested"] = "ingest.requested"
    document_id: str
    source: str = Field(description="Display name (file name or path in a manifest).")
    object_ref: str = Field(description="Where the stored file is, e.g. 'file:///…' or 's3://…'.")
    content_type: str | None = None
    owner: str | None = Field(default=None, description="Private to this user; None: shared.")
    collection: str = "default"
    force: bool = Field(default=False, description="Re-ingest even if the content is unchanged.")
    job_id: str | None = Field(default=None, description="The batch job this belongs to, if any.")
    reply_to: str | None = Field(default=None, description="Where to send the outcome as well.")


class IngestCompleted(Event):
    """A document is searchable (or was already, unchanged)."""

    type: Literal["ingest.completed"] = "ingest.completed"
    document_id: str
    source: str
    outcome: Literal["ingested", "unchanged", "replaced"]
    chunks: int = 0
    job_id: str | None = None


class IngestFailed(Event):
    """A document could not be ingested; `reason` says why in words a person understands."""

    type: Literal["ingest.failed"] = "ingest.failed"
    document_id: str
    source: str
    reason: str
    job_id: str | None = None


class RagRetrieveRequested(StepCommand):
    """Harness → rag: passages for a question, from the shared base and the user's own."""

    type: Literal["rag.retrieve.requested"] = "rag.retrieve.requested"
    query: str
    top_k: int = Field(default=5, ge=1, le=50)
    collection: str = "default"


class RagRetrieveCompleted(StepResult):
    """Rag → harness: the passages, best first."""

    type: Literal["rag.retrieve.completed"] = "rag.retrieve.completed"
    passages: list[Passage] = Field(default_factory=list)
