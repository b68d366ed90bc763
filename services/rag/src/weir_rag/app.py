"""Wiring of the knowledge service: indexes, registry, embedder, subscribers, internal API."""

from __future__ import annotations

from fastapi import FastAPI

from weir_common.bus import (
    KafkaCredentials,
    command_subscriber_options,
    make_broker,
    partition_subscriber_options,
)
from weir_common.embeddings import make_embedder
from weir_common.llm import LLMSettings, make_llm_client
from weir_common.logs import setup_logging
from weir_common.objects import LocalObjectStore
from weir_common.runtime import service_app
from weir_common.service_auth import require_service_token
from weir_common.telemetry import setup_tracing
from weir_rag import api
from weir_rag.handlers import RagHandlers
from weir_rag.index.factory import IndexSettings, make_dense_index, make_lexical_index
from weir_rag.ingest import PostgresRegistry
from weir_rag.retrieve.pipeline import Retriever
from weir_rag.service import Knowledge
from weir_rag.settings import RagSettings


def create_app(settings: RagSettings) -> FastAPI:
    """The rag process: ingests documents and answers retrieval steps."""
    setup_logging("rag", settings.log_level, settings.log_json)
    provider = setup_tracing("rag", settings.otel_exporter_otlp_endpoint)
    broker = make_broker(
        settings.kafka_bootstrap_servers,
        "rag",
        provider,
        credentials=KafkaCredentials.of(settings),
    )
    embedder = make_embedder()
    indexes = IndexSettings(milvus_uri=settings.milvus_uri, es_url=settings.es_url,
                            data_dir=settings.data_dir)  # fmt: skip
    dense = make_dense_index(embedder.dimension, indexes)
    lexical = make_lexical_index(indexes)
    registry = PostgresRegistry(settings.database_url)
    knowledge = Knowledge(
        store=LocalObjectStore.under(settings.data_dir),
        registry=registry,
        embedder=embedder,
        dense=dense,
        lexical=lexical,
        retriever=Retriever(embedder, dense, lexical, llm=make_llm_client(LLMSettings())),
        ingest_timeout_s=settings.ingest_timeout_s,
    )
    handlers = RagHandlers(knowledge, broker, settings.topics)
    topics, wait = settings.topics, settings.kafka_fetch_max_wait_ms
    broker.subscriber(
        topics.of("ingest.requested"),
        **partition_subscriber_options(
            "weir.rag.ingest", settings.ingest_workers, fetch_max_wait_ms=wait
        ),
    )(handlers.on_ingest)
    broker.subscriber(
        topics.of("rag.retrieve.requested"),
        **command_subscriber_options(
            "weir.rag.retrieve", settings.max_concurrent_retrievals, fetch_max_wait_ms=wait
        ),
    )(handlers.on_retrieve)

    async def open_stores() -> None:
        await registry.open()
        await dense.open()
        await lexical.open()

    async def close_stores() -> None:
        await lexical.close()
        await dense.close()
        await registry.close()
        provider.shutdown()

    app = service_app(
        name="rag",
        settings=settings,
        broker=broker,
        on_startup=[open_stores],
        on_shutdown=[close_stores],
    )
    app.state.knowledge = knowledge
    app.include_router(
        api.router, dependencies=[require_service_token(settings.weir_service_token)]
    )
    return app
