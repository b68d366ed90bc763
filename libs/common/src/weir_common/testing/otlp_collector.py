"""A real OTLP/HTTP trace receiver on loopback, for tests that follow a trace across processes.

Services export with the ordinary OTLP/HTTP exporter (`OTEL_EXPORTER_OTLP_ENDPOINT`); this
server decodes the protobuf requests and keeps the spans. With `forward_to` set it also
relays each request's bytes unchanged to another OTLP/HTTP receiver (a real trace viewer), so
one running product can be checked against a viewer without starting it again.
"""

from __future__ import annotations

import threading
import urllib.request
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass(frozen=True, slots=True)
class ReceivedSpan:
    """One span as a collector sees it."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    service: str
    kind: int


def _service_name(resource: Any) -> str:
    for attr in resource.attributes:
        if attr.key == "service.name":
            return str(attr.value.string_value)
    return ""


class OTLPCollector:
    """Receives `POST /v1/traces` and keeps every span; use as a context manager."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.spans: list[ReceivedSpan] = []
        #: base URL of an OTLP/HTTP receiver that gets a copy of every request, when set
        self.forward_to: str | None = None
        #: relays the receiver did not accept (status or error), for the test to assert on
        self.forward_failures: list[str] = []
        self._lock = threading.Lock()
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                collector._keep(request)
                collector._forward(body)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer((host, 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        """The value for `OTEL_EXPORTER_OTLP_ENDPOINT`."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def _keep(self, request: ExportTraceServiceRequest) -> None:
        received = [
            ReceivedSpan(
                trace_id=span.trace_id.hex(),
                span_id=span.span_id.hex(),
                parent_span_id=span.parent_span_id.hex(),
                name=span.name,
                service=_service_name(resource_spans.resource),
                kind=span.kind,
            )
            for resource_spans in request.resource_spans
            for scope_spans in resource_spans.scope_spans
            for span in scope_spans.spans
        ]
        with self._lock:
            self.spans.extend(received)

    def _forward(self, body: bytes) -> None:
        target = self.forward_to
        if target is None:
            return
        relay = urllib.request.Request(  # noqa: S310 - a loopback receiver of the test
            f"{target.rstrip('/')}/v1/traces",
            data=body,
            headers={"Content-Type": "application/x-protobuf"},
            method="POST",
        )
        try:
            with urllib.request.urlopen(relay, timeout=10) as response:  # noqa: S310
                if response.status != 200:
                    self.forward_failures.append(f"status {response.status}")
        except OSError as exc:
            self.forward_failures.append(f"{type(exc).__name__}: {exc}")

    def services_by_trace(self) -> dict[str, set[str]]:
        """For each trace id, the services that reported spans in it."""
        with self._lock:
            spans = list(self.spans)
        traces: dict[str, set[str]] = {}
        for span in spans:
            traces.setdefault(span.trace_id, set()).add(span.service)
        return traces

    def __enter__(self) -> OTLPCollector:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
