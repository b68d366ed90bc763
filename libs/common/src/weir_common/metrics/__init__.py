"""Prometheus metrics of every service, served at `GET /metrics` by `service_app`.

One process-wide registry (prometheus-client's default, which also carries the process and
GC collectors). The series, all prefixed `weir_`:

- `weir_step_duration_seconds{step,outcome}`: harness, a step command's send to its result.
- `weir_runs_total{outcome}`: harness, runs closed (completed / failed).
- `weir_consumer_lag{group,topic,partition}`: every consumer, highwater − position of each
  assigned partition, sampled when `/metrics` is scraped.
- `weir_dead_letters_total{topic,reason}`: events parked on `<topic>.dlq`.
- `weir_llm_tokens_total{model,kind}` (kind input / output), `weir_llm_calls_total{model,
  operation,outcome}`, `weir_llm_duration_seconds{model,operation}`: every model call made
  through `weir_common.llm` (router, rag, memory).
- `weir_http_requests_total{method,route,status}`, `weir_http_request_duration_seconds
  {method,route}`: every HTTP route by its template; `weir_ws_connections` (open) and
  `weir_ws_connections_opened_total`: the gateway's WebSockets.
- `weir_gc_seconds_total{generation}`: every service, time spent in garbage collections
  once it had started (`weir_common.heap`; the default registry's `python_gc_*` count them).

`/metrics` needs the service credential (`Authorization: Bearer $WEIR_SERVICE_TOKEN`), like
the internal APIs: the gateway's port is public, and the series name models, topics and
traffic (the route and the HTTP middleware are in `weir_common.metrics.http`, so a model
caller importing these series pulls in no web framework). Prometheus sends the credential
with `authorization: {credentials_file: ...}` (deploy/prometheus.yml). `/health` and
`/ready` stay open for probes.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

_STEP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)

STEP_SECONDS = Histogram(
    "weir_step_duration_seconds",
    "Harness: time from a step's command to its result, per step type.",
    ["step", "outcome"],
    buckets=_STEP_BUCKETS,
)
RUNS = Counter("weir_runs", "Harness: runs closed, by outcome.", ["outcome"])
RESULTS_APPLIED = Counter(
    "weir_results_applied",
    "Harness: workers' results by how they were applied: optimistic (on the run as read, "
    "unlocked), again (the run changed meanwhile: decided again, locked), redelivered.",
    ["how"],
)
CONSUMER_LAG = Gauge(
    "weir_consumer_lag",
    "Messages not yet consumed (highwater - position) per assigned partition, at scrape.",
    ["group", "topic", "partition"],
)
DEAD_LETTERS = Counter(
    "weir_dead_letters", "Events parked on a dead-letter topic.", ["topic", "reason"]
)
LLM_TOKENS = Counter("weir_llm_tokens", "Model tokens, by model and kind.", ["model", "kind"])
LLM_CALLS = Counter(
    "weir_llm_calls",
    "Model calls, by model, operation and outcome.",
    ["model", "operation", "outcome"],
)
LLM_SECONDS = Histogram(
    "weir_llm_duration_seconds",
    "Model call duration.",
    ["model", "operation"],
    buckets=_STEP_BUCKETS,
)
HTTP_REQUESTS = Counter(
    "weir_http_requests", "HTTP requests answered.", ["method", "route", "status"]
)
HTTP_SECONDS = Histogram(
    "weir_http_request_duration_seconds", "HTTP request duration.", ["method", "route"]
)
WS_OPEN = Gauge("weir_ws_connections", "WebSocket connections open now.")
WS_OPENED = Counter("weir_ws_connections_opened", "WebSocket connections accepted.")
GC_SECONDS = Counter(
    "weir_gc_seconds",
    "Time the garbage collector held the process since it started, by generation.",
    ["generation"],
)


def record_usage(model: str, operation: str, input_tokens: int, output_tokens: int) -> None:
    """Count one successful model call and its tokens."""
    LLM_CALLS.labels(model, operation, "ok").inc()
    LLM_TOKENS.labels(model, "input").inc(input_tokens)
    LLM_TOKENS.labels(model, "output").inc(output_tokens)
