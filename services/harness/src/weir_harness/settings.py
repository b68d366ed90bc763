"""Harness settings: where runs are stored, step deadlines, retry policy."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from weir_common.settings import WeirSettings


class HarnessSettings(WeirSettings):
    """The harness owns runs: their store, their deadlines and every retry."""

    service_name: ClassVar[str] = "harness"

    database_url: str = "postgresql://weir@127.0.0.1:15432/weir"
    max_attempts: int = Field(default=3, ge=1, description="Tries per step, the first included.")
    backoff_base_s: float = Field(default=0.5, gt=0, description="Retry n waits base × 2^(n-1).")
    step_timeout_s: float = Field(default=15.0, gt=0, description="Deadline of a quick step.")
    generate_timeout_s: float = Field(default=120.0, gt=0, description="Deadline of generation.")
    sweep_interval_s: float = Field(
        default=1.0,
        gt=0,
        description="How often deadlines and retry times are checked (a query each time: "
        "at 0.2 s it was a tenth of the idle stack's CPU).",
    )
    private_text_retention_s: float = Field(
        default=600.0,
        ge=0,
        description="How long a finished private run keeps its text (for a resume) before "
        "its message, answer and step payloads are removed from its record.",
    )
    scrub_interval_s: float = Field(
        default=30.0, gt=0, description="How often finished private runs are scrubbed."
    )
    run_step_retention_days: float = Field(
        default=30.0,
        ge=0,
        description="How long a finished run keeps its step payloads; then they are pruned "
        "to {'pruned': true} (the steps' kinds and times, the diagnosis and verdict stay).",
    )
    outbox_poll_interval_s: float = Field(
        default=1.0, gt=0, description="How often the outbox relay looks without being woken."
    )
    outbox_backoff_base_s: float = Field(
        default=0.5, gt=0, description="A failed publish is retried after base × 2^(n-1)."
    )
    outbox_backoff_max_s: float = Field(default=30.0, gt=0, description="Longest publish wait.")
    max_message_bytes: int = Field(
        default=900_000,
        ge=10_000,
        description="Largest command sent (below the broker's 1 MB); larger ones are trimmed.",
    )
    route_with_memory: bool = Field(
        default=True,
        description="Ask for the route together with the memory context (the route reads "
        "only the message), instead of after it: one step less on every turn's path.",
    )
    rag_connected: bool = Field(default=False, description="A rag service is deployed.")
    rag_top_k: int = Field(default=5, ge=1)
    agent_max_model_turns: int = Field(default=6, ge=2, description="Model calls per request.")
    agent_max_tool_calls: int = Field(default=8, ge=1, description="Tool calls per request.")
    agent_max_repeated_tool_calls: int = Field(default=1, ge=1, description="Same tool+args.")
    agent_max_runtime_seconds: float = Field(default=60.0, gt=0, description="Tool loop time.")
    tool_timeout_s: float = Field(default=30.0, gt=0, description="One tool call's limit.")
    tool_confirm_timeout_s: float = Field(
        default=600.0,
        gt=0,
        description="How long a tool call waits for the user's confirmation; no answer by "
        "then counts as a denial (the run's verdict is needs_human).",
    )
    evaluator_enabled: bool = Field(
        default=True,
        description="Check each generated answer (F39): offline rules (empty, off-language, "
        "contradicts a stored preference, uses given evidence without citing it), then the model "
        "judge (`EVALUATOR_JUDGE`).",
    )
    evaluator_max_regenerations: int = Field(
        default=3,
        ge=0,
        description="Regenerations after a failed check (seed 004); the last failing answer "
        "is still delivered and marked in the run's verdict.",
    )
    evaluator_skip_routes: list[str] = Field(
        default_factory=list,
        description='Routes whose answers are not checked (rules nor judge), e.g. ["react"].',
    )
    evaluator_skip_profiles: list[str] = Field(
        default_factory=list,
        description="weir profiles (the OpenAI door's `model`) whose answers are not checked "
        '(rules nor judge), e.g. ["weir-chat"].',
    )
    evaluator_judge: bool = Field(
        default=True,
        description="An answer a model wrote that passes the rules is also judged by the "
        "FLASH model with a short rubric (answers the question, consistent with memory and "
        "evidence, same language): one more step, a helper model call. Never for the "
        "offline responder's answers.",
    )
    evaluator_timeout_s: float = Field(
        default=30.0, gt=0, description="Deadline of the judge's step (a FLASH call)."
    )

    def evaluates(self, route: str, profile: str | None = None) -> bool:
        """Whether answers on `route` (asked for with `profile`) go through the evaluator."""
        if profile is not None and profile in self.evaluator_skip_profiles:
            return False
        return self.evaluator_enabled and route not in self.evaluator_skip_routes

    def timeout_for(self, step: str) -> float:
        """The deadline of one step command."""
        if step == "tools.call.requested":  # the tool's own limit, then the way back
            return self.tool_timeout_s + self.step_timeout_s
        if step in ("answer.generate.requested", "react.step.requested"):  # model calls
            return self.generate_timeout_s
        if step == "answer.evaluate.requested":
            return self.evaluator_timeout_s
        return self.step_timeout_s
