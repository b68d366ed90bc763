"""weir_deploy: start the local engines (Kafka, PostgreSQL, Redis, Milvus) and services."""

from .base import Engine, EngineStartError, default_data_dir
from .services import Services
from .stack import ALL_ENGINES, Stack

__all__ = ["ALL_ENGINES", "Engine", "EngineStartError", "Services", "Stack", "default_data_dir"]
