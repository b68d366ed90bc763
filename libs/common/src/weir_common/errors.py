"""Which failures are worth another try.

An engine that is restarting, a network blip or a timeout says nothing about the event being
handled: the same event succeeds once the engine is back, so it is retried, never parked as
poison. Everything else (a bad body, a bug, a refused request) would fail again the same way.
"""

from __future__ import annotations

import asyncio
import sys

import asyncpg
import httpx
import redis.exceptions
from aiokafka.errors import KafkaError


class TransientError(Exception):
    """An infrastructure failure (engine down, network, timeout): retry, do not park."""


_TRANSIENT_TYPES: tuple[type[BaseException], ...] = (
    TransientError,
    ConnectionError,
    TimeoutError,
    asyncio.TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.CannotConnectNowError,
    # a pooled connection whose server ended it mid-reply is left consuming that error, and
    # its next statement fails "cannot switch to state …; another operation (2) is in
    # progress"; the pool replaces the connection (seen parking events in the chaos tests)
    asyncpg.exceptions.InternalClientError,
    # a server stopping or crashing ends its sessions with these (57P01, 57P02); a query
    # in flight then fails with one of them instead of a closed connection
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,
    # the transaction lost a race (40001, 40P01): the same statements succeed when run again
    asyncpg.exceptions.SerializationError,
    asyncpg.exceptions.DeadlockDetectedError,
    asyncpg.exceptions.TooManyConnectionsError,
    asyncpg.exceptions.ConnectionDoesNotExistError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    redis.exceptions.BusyLoadingError,
    httpx.TransportError,
)
# gRPC status codes of an engine that is away or slow, not of a refused request
_GRPC_TRANSIENT = {"UNAVAILABLE", "DEADLINE_EXCEEDED", "RESOURCE_EXHAUSTED", "ABORTED"}
_MILVUS_TRANSIENT_WORDS = ("unavailable", "deadline", "connect", "timeout", "not ready", "released")


def _one_is_transient(exc: BaseException) -> bool:
    if isinstance(exc, _TRANSIENT_TYPES):
        return True
    if isinstance(exc, KafkaError):
        return bool(getattr(exc, "retriable", False))
    code = getattr(exc, "code", None)
    if type(exc).__module__.startswith("grpc") and callable(code):  # a grpc.RpcError
        return getattr(code(), "name", "") in _GRPC_TRANSIENT
    # pymilvus costs ~1.7 s of CPU to import, and only the services that use Milvus need it;
    # an exception of its own type means it is already loaded
    milvus = sys.modules.get("pymilvus")
    if milvus is not None and isinstance(exc, milvus.MilvusException):
        text = str(exc).lower()
        return any(word in text for word in _MILVUS_TRANSIENT_WORDS)
    return isinstance(exc, OSError) and not isinstance(exc, FileNotFoundError | PermissionError)


def is_transient(exc: BaseException) -> bool:
    """True when `exc`, or an exception it was raised from, is an infrastructure failure."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if _one_is_transient(current):
            return True
        seen.add(id(current))
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return False
