"""Figures of the load benchmark: the model's own first-token time, idle, load and soak."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from load_clients import Turn
from procstat import Usage, cpu_between

from benchlib import pct
from weir_common.llm.litellm_support import import_litellm

DIRECT_WARMUP = 5
DIRECT_SAMPLES = 30
PROMPT = "hello, how are you doing today?"


async def direct_ttft_ms(base_url: str) -> list[float]:
    """The scripted model's own time to its first content token, called directly through
    litellm the way the services call it (`openai/scripted`, streamed, no retries); ms."""
    litellm = import_litellm()  # without the network fetch of litellm's price map

    times: list[float] = []
    for i in range(DIRECT_WARMUP + DIRECT_SAMPLES):
        began = time.perf_counter()
        first: float | None = None
        stream = await litellm.acompletion(
            model="openai/scripted",
            api_base=base_url,
            api_key="sk-scripted",
            messages=[{"role": "user", "content": PROMPT}],
            stream=True,
            stream_options={"include_usage": True},
            num_retries=0,
            max_retries=0,
        )
        async for chunk in stream:
            content = chunk.choices[0].delta.content if chunk.choices else None
            if content and first is None:
                first = (time.perf_counter() - began) * 1000
        if first is None:
            raise RuntimeError("the scripted model streamed no content")
        if i >= DIRECT_WARMUP:
            times.append(first)
    return times


def model_calls(recorded: list[dict[str, Any]], turns: int) -> dict[str, float]:
    """Requests the scripted model got per answered turn: memory's own (its prompts start
    with `[weir-memory]`), the other chat completions, and embeddings."""
    counts: Counter[str] = Counter()
    for request in recorded:
        if request["path"] != "/v1/chat/completions":
            counts["embeddings"] += 1
            continue
        messages = request["body"].get("messages") or [{}]
        first = str(messages[0].get("content") or "")
        counts["memory" if first.startswith("[weir-memory]") else "answer"] += 1
    return {kind: round(n / max(turns, 1), 2) for kind, n in sorted(counts.items())}


def _ms(values_s: list[float], q: float) -> float:
    return pct([v * 1000 for v in values_s], q)


def idle_report(before: Usage, after: Usage) -> dict[str, Any]:
    """CPU of each process tree and of all of them, in % of one core."""
    seconds = after.at - before.at
    spent = cpu_between(before, after)
    share = {name: round(100 * cpu / seconds, 2) for name, cpu in spent.items()}
    return {
        "idle_seconds": round(seconds, 1),
        "idle_cpu_percent_of_core": round(100 * sum(spent.values()) / seconds, 2),
        "idle_cpu_percent_by_process": share,
        "idle_rss_mb": after.rss_mb,
    }


def _outcomes(turns: list[Turn]) -> dict[str, Any]:
    counts = Counter(t.status for t in turns)
    details = Counter(t.detail for t in turns if t.status == "error")
    return {
        "turns_total": len(turns),
        "turns_answered": counts["done"],
        "errors": len(turns) - counts["done"],
        "errors_by_kind": {"error": counts["error"], "unanswered": counts["unanswered"]},
        "error_details": dict(details.most_common(5)),
    }


def load_report(
    turns: list[Turn], before: Usage, after: Usage, bench_cpu_s: float
) -> dict[str, Any]:
    """Throughput, latency, first-delta time, errors and CPU per answered turn."""
    window = after.at - before.at
    answered = [t for t in turns if t.status == "done"]
    per = max(len(answered), 1)
    spent = cpu_between(before, after)
    latency = [t.latency_s for t in answered]
    firsts = [t.first_delta_s for t in answered if t.first_delta_s is not None]
    report: dict[str, Any] = {
        **_outcomes(turns),
        "window_s": round(window, 2),
        "turns_per_s": round(len(answered) / window, 2),
        "cpu_ms_per_turn": {n: round(1000 * cpu / per, 2) for n, cpu in sorted(spent.items())},
        "cpu_ms_per_turn_total": round(1000 * sum(spent.values()) / per, 2),
        "cpu_percent_of_core_during_load": round(100 * sum(spent.values()) / window, 1),
        # the clients and the in-process scripted model (and py-spy's parent): not in the total
        "bench_process_cpu_ms_per_turn": round(1000 * bench_cpu_s / per, 2),
        "rss_mb_after_load": after.rss_mb,
        "processes_per_tree": after.processes,
    }
    if latency:
        report["p50_s"] = round(_ms(latency, 50) / 1000, 3)
        report["p99_s"] = round(_ms(latency, 99) / 1000, 3)
        report["max_s"] = round(max(latency), 3)
    if firsts:
        report["ttft_p50_ms"] = _ms(firsts, 50)
        report["ttft_p99_ms"] = _ms(firsts, 99)
    return report


def soak_report(turns: list[Turn], began: float, samples: list[Usage]) -> dict[str, Any]:
    """Per minute: turns/s, latency, CPU and RSS of each tree; the soak's verdict keys.

    `samples[k]` is the reading at the end of minute k (`samples[0]`: the start).
    """
    minutes = len(samples) - 1
    per_minute: list[dict[str, Any]] = []
    for k in range(minutes):
        start, end = began + 60 * k, began + 60 * (k + 1)
        inside = [t for t in turns if start <= t.ended < end]
        answered = [t.latency_s for t in inside if t.status == "done"]
        seconds = samples[k + 1].at - samples[k].at
        cpu = cpu_between(samples[k], samples[k + 1])
        per_minute.append({
            "minute": k + 1,
            "turns_per_s": round(len(answered) / 60, 2),
            "p50_s": round(_ms(answered, 50) / 1000, 3) if answered else None,
            "p99_s": round(_ms(answered, 99) / 1000, 3) if answered else None,
            "unanswered": sum(t.status == "unanswered" for t in inside),
            "errors": sum(t.status == "error" for t in inside),
            "cpu_percent_of_core": {n: round(100 * c / seconds, 1) for n, c in cpu.items()},
            "rss_mb": samples[k + 1].rss_mb,
            "pss_mb": samples[k + 1].pss_mb,
            "processes": samples[k + 1].processes,
        })  # fmt: skip
    first, last = per_minute[0]["turns_per_s"], per_minute[-1]["turns_per_s"]
    base = samples[min(2, minutes - 1)]  # the end of minute 2 (earlier when shorter)

    def growth(of: str) -> dict[str, float]:
        last, first = getattr(samples[-1], of), getattr(base, of)
        return {n: round(last[n] - first.get(n, 0.0), 1) for n in last}

    outcomes = _outcomes(turns)
    return {
        "soak_minutes": minutes,
        "soak_turns_answered": outcomes["turns_answered"],
        "soak_unanswered": outcomes["errors_by_kind"]["unanswered"],
        "soak_errors": outcomes["errors_by_kind"]["error"],
        "soak_last_over_first": round(last / first, 3) if first else None,
        "soak_rss_growth_mb": growth("rss_mb"),
        "soak_pss_growth_mb": growth("pss_mb"),
        "soak_rss_growth_from_minute": min(2, minutes - 1),
        "soak_per_minute": per_minute,
    }
