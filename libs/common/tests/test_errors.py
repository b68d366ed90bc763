"""Which failures are retried and which are poison."""

from __future__ import annotations

import asyncpg
import httpx
import pytest
import redis.exceptions
from aiokafka.errors import KafkaConnectionError, MessageSizeTooLargeError
from pydantic import BaseModel, ValidationError
from pymilvus import MilvusException

from weir_common.errors import TransientError, is_transient

pytestmark = pytest.mark.unit


class _Body(BaseModel):
    text: str


def _raised_from(outer: Exception, inner: Exception) -> Exception:
    outer.__cause__ = inner  # as `raise outer from inner` leaves it
    return outer


@pytest.mark.parametrize(
    "exc",
    [
        TransientError("engine away"),
        ConnectionRefusedError(),
        TimeoutError(),
        asyncpg.CannotConnectNowError("the database system is starting up"),
        asyncpg.ConnectionDoesNotExistError("connection was closed"),
        asyncpg.exceptions.InternalClientError(
            "cannot switch to state 15; another operation (2) is in progress"
        ),
        asyncpg.AdminShutdownError("terminating connection due to administrator command"),
        asyncpg.CrashShutdownError("terminating connection due to crash of another process"),
        asyncpg.SerializationError("could not serialize access"),
        asyncpg.DeadlockDetectedError("deadlock detected"),
        redis.exceptions.ConnectionError("Connection refused"),
        httpx.ConnectError("refused"),
        KafkaConnectionError(),
        MilvusException(message="server unavailable"),
        _raised_from(RuntimeError("store failed"), ConnectionResetError()),
    ],
)
def test_engine_and_network_failures_are_transient(exc: Exception) -> None:
    assert is_transient(exc)


def _validation_error() -> ValidationError:
    try:
        _Body.model_validate({})
    except ValidationError as exc:
        return exc
    raise AssertionError


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("bad input"),
        KeyError("x"),
        _validation_error(),
        FileNotFoundError("no such object"),
        asyncpg.UniqueViolationError("duplicate key"),
        MessageSizeTooLargeError(),
        MilvusException(message="collection schema mismatch"),
    ],
)
def test_bugs_and_bad_input_are_poison(exc: Exception) -> None:
    assert not is_transient(exc)
