"""`adr serve`'s Prometheus metrics: requests and their latency per route and status, and the
pool failures the error handlers count (docs/api.md, "Metrics")."""

from __future__ import annotations

import time
from typing import Any

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from prometheus_client import CollectorRegistry, Counter, Histogram

_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


class _LabelCounter:
    """A labelled counter with `labels_inc(label)`: a callback for one-label counts."""

    def __init__(self, counter: Counter) -> None:
        self.counter = counter

    def labels_inc(self, label: str) -> None:
        self.counter.labels(label).inc()


class Metrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.requests = Counter(
            "adr_serve_requests",
            "HTTP requests answered, by route template and status code",
            ["route", "code"],
            registry=registry,
        )
        self.seconds = Histogram(
            "adr_serve_request_seconds",
            "Seconds from a request's arrival to its answer's start, by route template",
            ["route"],
            buckets=_BUCKETS,
            registry=registry,
        )
        self.failures = Counter(
            "adr_serve_read_failures",
            "Reads that failed on the pool's side (redis: unreachable or an error; denied: "
            "NOPERM or a wrong password; layout: an unknown layout version; corrupt: a stored "
            "value that does not decode)",
            ["reason"],
            registry=registry,
        )
        for reason in ("redis", "denied", "layout", "corrupt"):
            self.failures.labels(reason)
        self.meta_unreadable = _LabelCounter(
            Counter(
                "adr_serve_meta_unreadable",
                "Stored metadata values left out of an answer (corrupt: breaks the layout's "
                "limits, written past `adr meta`; version: a metadata layout this release does "
                "not know)",
                ["reason"],
                registry=registry,
            )
        )
        for reason in ("corrupt", "version"):
            self.meta_unreadable.counter.labels(reason)

    def middleware(self, app: ASGIApp) -> ASGIApp:
        """Times every HTTP request of a route (its template, so ids make no new series)."""

        async def timed(scope: Scope, receive: Receive, send: Send) -> None:
            if scope["type"] != ScopeType.HTTP:
                await app(scope, receive, send)
                return
            start = time.perf_counter()
            route: str = scope.get("path_template") or "other"
            if route.startswith("/") and not route.startswith(("/v1/", "/livez", "/readyz")):
                route = "static" if route != "/metrics" else route

            async def send_timed(message: Message) -> None:
                if message["type"] == "http.response.start":
                    code: Any = message["status"]
                    self.requests.labels(route, str(code)).inc()
                    self.seconds.labels(route).observe(time.perf_counter() - start)
                await send(message)

            await app(scope, receive, send_timed)

        return timed
