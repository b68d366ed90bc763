"""Structured logs with fields, the same way in every service."""

from __future__ import annotations

import logging
import sys

import structlog


def setup_logging(service: str, level: str = "INFO", as_json: bool = False) -> None:
    """Route stdlib and structlog records through one renderer, tagged with the service."""
    logging.basicConfig(stream=sys.stderr, level=level.upper(), format="%(message)s")
    for noisy in ("aiokafka", "kafka", "LiteLLM", "httpx", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    renderer = (
        structlog.processors.JSONRenderer()
        if as_json
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(logging.getLevelName(level.upper())),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
    )
    structlog.contextvars.bind_contextvars(service=service)
