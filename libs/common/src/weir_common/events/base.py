"""The envelope every event carries, whatever its type."""

from __future__ import annotations

from datetime import UTC, datetime
from uuid import uuid4

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

#: A user id: letters, digits and `_.@|+-`, starting with a letter or digit. No `:` or `*`,
#: so keys built as `{user}:{…}` cannot collide and no user is the shared owner `*`.
USER_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@|+-]{0,127}$"


def new_id() -> str:
    """A fresh, URL-safe identifier for events, runs and conversations."""
    return uuid4().hex


def utcnow() -> datetime:
    """The current time, timezone-aware, in UTC."""
    return datetime.now(UTC)


class Envelope(TypedDict):
    """The routing fields an event passes on to the events it causes."""

    run_id: str | None
    conversation_id: str | None
    user_id: str | None


class Event(BaseModel):
    """Fields shared by every event in the catalogue.

    Events are immutable. Unknown fields are ignored so that a newer producer that adds an
    optional field does not break an older consumer (versioning by addition).
    """

    model_config = ConfigDict(frozen=True, extra="ignore")

    event_id: str = Field(default_factory=new_id, description="Unique id; consumers dedupe by it.")
    occurred_at: datetime = Field(
        default_factory=utcnow, description="When the event happened (UTC)."
    )
    schema_version: int = Field(default=1, description="Bumped only by additive changes.")
    run_id: str | None = Field(default=None, description="The run this event belongs to, if any.")
    conversation_id: str | None = Field(default=None, description="The conversation, if any.")
    user_id: str | None = Field(
        default=None,
        pattern=USER_ID_PATTERN,
        description="The user on whose behalf this happens.",
    )

    def envelope(self) -> Envelope:
        """The routing fields to copy onto an event caused by this one."""
        return {
            "run_id": self.run_id,
            "conversation_id": self.conversation_id,
            "user_id": self.user_id,
        }


class StepCommand(Event):
    """A command the harness sends to a worker for one step of a run."""

    attempt: int = Field(
        default=1, ge=1, description="1 for the first try, then 2, 3... on retries."
    )


class StepResult(Event):
    """A worker's answer to one step command; `request_id` is the command's `event_id`."""

    request_id: str = Field(description="The event_id of the command this answers.")
