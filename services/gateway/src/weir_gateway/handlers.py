"""Handlers of the bus: the replies on this instance's reply topic, handed to the hub."""

from __future__ import annotations

from weir_common.events import Reply
from weir_gateway.service import ReplyHub


class ReplyHandler:
    """Consumes this instance's reply topic."""

    def __init__(self, hub: ReplyHub) -> None:
        self._hub = hub

    async def on_reply(self, event: Reply) -> None:
        """Hand one reply to the hub."""
        self._hub.dispatch(event)
