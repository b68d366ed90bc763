"""Every settings class of weir, who reads it, and the README's generated table of them.

`weir settings` prints the table; `weir settings --write README.md` (`make settings-doc`)
puts it between the README's markers; `weir settings --check README.md` fails when stale.
"""

from __future__ import annotations

from pathlib import Path

from weir_common.embeddings import EmbeddingSettings
from weir_common.llm import LLMSettings
from weir_common.settings import WeirSettings
from weir_common.settings_doc import SHARED_TABLE, Owner, render, replace_table
from weir_gateway.memory_api import MemoryApiSettings
from weir_gateway.settings import GatewaySettings
from weir_harness.settings import HarnessSettings
from weir_memory.settings import MemorySettings
from weir_rag.batch import BatchSettings
from weir_rag.index.factory import IndexSettings
from weir_rag.settings import RagSettings
from weir_router.settings import RouterSettings
from weir_tools.settings import ToolsSettings

#: the services that call the shared libraries' factories (`make_llm_client`, `make_embedder`)
MODEL_USERS = ("router", "rag", "memory")
RUNNING_SERVICE = f"{SHARED_TABLE}, the service's"
REGENERATE = "make settings-doc"
#: what the variables whose fields carry no description do
NOTES = {
    "DATABASE_URL": "PostgreSQL (asyncpg).",
    "MAX_CONCURRENT_GENERATIONS": "Model generations running at once.",
    "OFFLINE_CHUNK_CHARS": "Size of the offline responder's deltas.",
    "RAG_TOP_K": "Passages retrieved per knowledge turn.",
    "MCP_SERVERS": "MCP servers: a JSON list of `{name, transport: stdio/sse/streamable_http, "
    "command, args, env, cwd, url, headers, timeout_s, confirm}`, or `[[tools.mcp_servers]]` "
    "tables.",
    "WEATHER_URL_TEMPLATE": "The weather tool's HTTP endpoint (`{city}`, `{api_key}`); unset: "
    "the tool says it is not configured.",
    "WEATHER_API_KEY": "Its API key.",
    "WEATHER_API_KEY_HEADER": "Header carrying the key (unset: in the URL).",
    "SEARCH_URL_TEMPLATE": "The web search tool's HTTP endpoint (`{query}`, `{max_results}`); "
    "unset: the tool says it is not configured.",
    "SEARCH_API_KEY": "Its API key.",
    "SEARCH_API_KEY_HEADER": "Header carrying the key (unset: in the URL).",
    "MAX_CONCURRENT_RETRIEVALS": "Retrievals answered at once.",
}


def owners() -> list[Owner]:
    """Every settings class, in the README's order."""
    return [
        Owner(WeirSettings, ("all",), SHARED_TABLE),
        Owner(LLMSettings, MODEL_USERS, RUNNING_SERVICE),
        Owner(EmbeddingSettings, MODEL_USERS, RUNNING_SERVICE),
        Owner(GatewaySettings, ("gateway",), "`[gateway]`"),
        Owner(MemoryApiSettings, ("gateway",), "`[gateway]`"),
        Owner(RouterSettings, ("router",), "`[router]`"),
        Owner(HarnessSettings, ("harness",), "`[harness]`"),
        Owner(ToolsSettings, ("tools",), "`[tools]`"),
        Owner(RagSettings, ("rag",), "`[rag]`"),
        Owner(IndexSettings, ("rag",), "`[rag]`"),
        Owner(MemorySettings, ("memory",), "`[memory]`"),
        Owner(BatchSettings, ("batch",), "`[batch]`"),
    ]


def table() -> str:
    """The Markdown table of every setting."""
    return render(owners(), NOTES)


def updated(readme: Path) -> str:
    """The README's text with a fresh table."""
    return replace_table(readme.read_text(), table())
