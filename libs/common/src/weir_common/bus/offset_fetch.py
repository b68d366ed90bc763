"""A consumer that starts while the broker's group coordinator is still loading must wait for
its committed offsets, not start over from `auto_offset_reset`.

OffsetFetch v2 and later report a group-level failure (the coordinator loading its offsets
after a broker restart, or not this broker's) in the response's top-level `error_code`, with
no partitions (KIP-88; Kafka's `OffsetFetchRequest.getErrorResponse`). aiokafka 0.14 reads
only the partition-level codes, so such a response reads as "nothing committed": a consumer
that asked then started its partitions over at the earliest offset and replayed the whole
retention. Consumers with assigned partitions ask at once (the dead-letter replay, the
tests); group members ask after their join, which the loading coordinator mostly holds back.
Seen in CI: after a broker restart a group read `m0` where it had committed `m3`; reproduced
in `libs/common/tests/test_bus_offset_fetch.py`. pykafka had the same defect
(Parsely/pykafka#958).

`install()` wraps aiokafka's `GroupCoordinator._send_req`: an OffsetFetch answer with a
top-level error raises that error, which `fetch_committed_offsets` already handles like the
partition-level one: retried after the backoff when retriable (coordinator loading, not
available, moved), raised to the consumer otherwise (group authorization). Installed when
`weir_common.bus` is imported, so every consumer of the product has it.
"""

from __future__ import annotations

import functools
from typing import Any

from aiokafka import errors
from aiokafka.consumer.group_coordinator import GroupCoordinator
from aiokafka.protocol.commit import OffsetFetchRequest

_MOVED = (errors.GroupCoordinatorNotAvailableError, errors.NotCoordinatorForGroupError)


def install() -> None:
    """Make aiokafka's consumers honour OffsetFetch's top-level error (idempotent)."""
    send = GroupCoordinator._send_req
    if getattr(send, "_weir_offset_fetch", False):
        return

    @functools.wraps(send)
    async def send_req(self: GroupCoordinator, request: Any) -> Any:
        response = await send(self, request)
        code = getattr(response, "error_code", 0) if isinstance(request, OffsetFetchRequest) else 0
        if code:
            error = errors.for_code(code)
            if issubclass(error, _MOVED):
                self.coordinator_dead()  # look the coordinator up again before the retry
            raise error()
        return response

    send_req._weir_offset_fetch = True  # type: ignore[attr-defined]
    GroupCoordinator._send_req = send_req
