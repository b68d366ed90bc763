"""Chat models for weir, through litellm only (F05), plus the honest offline responder.

Importing this package is cheap: litellm is imported on the first model call.
"""

from weir_common.llm.client import LiteLLMClient, LLMClient
from weir_common.llm.factory import make_llm_client
from weir_common.llm.offline import (
    EvidencePassage,
    OfflineRequest,
    ToolResult,
    offline_answer,
    stream_text,
)
from weir_common.llm.profiles import LLMSettings, ModelProfile, ProfileName
from weir_common.llm.stream_assembly import collect
from weir_common.llm.types import (
    ChatMessage,
    Completion,
    LLMError,
    StreamEnd,
    StreamItem,
    TextDelta,
    ToolCall,
    ToolCallsReady,
    ToolSpec,
    Usage,
)

__all__ = [
    "ChatMessage",
    "Completion",
    "EvidencePassage",
    "LLMClient",
    "LLMError",
    "LLMSettings",
    "LiteLLMClient",
    "ModelProfile",
    "OfflineRequest",
    "ProfileName",
    "StreamEnd",
    "StreamItem",
    "TextDelta",
    "ToolCall",
    "ToolCallsReady",
    "ToolResult",
    "ToolSpec",
    "Usage",
    "collect",
    "make_llm_client",
    "offline_answer",
    "stream_text",
]
