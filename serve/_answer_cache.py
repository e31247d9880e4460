"""A short-lived in-process cache of the API's answers (docs/api.md, "The answer cache").

The hot reads of a leaderboard are few and the same for everyone (the first page of `top`, the
tier table, a star player's rank): under load most requests ask what another asked a moment ago.
This ASGI middleware keeps each `200` answer of a `/v1/` route for `ttl_s` seconds, keyed by its
path and query string, and answers a request for the same key from memory: no parameter parsing,
no worker thread, no Redis round trip, no encoding. An answer served from it is at most `ttl_s`
older than the pool; its `Age` header says how old (whole seconds), so an HTTP cache in front
shortens its own `max-age` by as much, and `If-None-Match` still gets a `304` against its ETag.

Concurrent misses of one key wait for the first one's answer (one read, not one per request:
the first page of `top` expiring under a thousand requests per second reads Redis once). Only
whole `200` answers are kept (an error, a `304`, a streamed body are not), and the entries'
bodies together stay under `max_bytes` (the oldest entries go first).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from litestar.enums import ScopeType
from litestar.types import ASGIApp, Message, Receive, Scope, Send
from prometheus_client import CollectorRegistry, Counter

_PREFIX = "/v1/"


@dataclass(frozen=True, slots=True)
class _Answer:
    born: float
    body: bytes
    headers: list[tuple[bytes, bytes]]
    """Those of the answer as the app gave them, without content-length (sent anew)."""
    etag: bytes | None


class AnswerCache:
    """The cache of one app: `middleware` wraps the app's routes (after routing)."""

    def __init__(self, ttl_s: float, max_bytes: int, registry: CollectorRegistry) -> None:
        if ttl_s < 0 or max_bytes < 0:
            raise ValueError("an answer cache's ttl and size are >= 0")
        self.ttl_s = ttl_s
        self.max_bytes = max_bytes
        self._answers: OrderedDict[tuple[str, bytes], _Answer] = OrderedDict()
        self._bytes = 0
        self._pending: dict[tuple[str, bytes], asyncio.Event] = {}
        self.lookups = Counter(
            "adr_serve_answer_cache_lookups",
            "GET requests of /v1/ routes by how the answer cache served them (hit: from memory; "
            "miss: read from Redis; waited: after another request's read of the same key)",
            ["outcome"],
            registry=registry,
        )
        for outcome in ("hit", "miss", "waited"):
            self.lookups.labels(outcome)
        self._hit = self.lookups.labels("hit")
        self._miss = self.lookups.labels("miss")
        self._waited = self.lookups.labels("waited")

    @property
    def enabled(self) -> bool:
        return self.ttl_s > 0 and self.max_bytes > 0

    def middleware(self, app: ASGIApp) -> ASGIApp:
        if not self.enabled:
            return app

        async def cached(scope: Scope, receive: Receive, send: Send) -> None:
            path: str = scope.get("path", "")
            if (
                scope["type"] != ScopeType.HTTP
                or scope.get("method") != "GET"
                or not path.startswith(_PREFIX)
            ):
                await app(scope, receive, send)
                return
            key = (path, scope.get("query_string", b""))
            now = time.monotonic()
            answer = self._fresh(key, now)
            if answer is None:
                pending = self._pending.get(key)
                if pending is not None:
                    await pending.wait()
                    answer = self._fresh(key, time.monotonic())
                    if answer is not None:
                        self._waited.inc()
                        await self._send(answer, scope, send)
                        return
                else:
                    await self._read(app, key, scope, receive, send)
                    return
                self._miss.inc()
                await app(scope, receive, send)  # the first read was not kept: read again
                return
            self._hit.inc()
            await self._send(answer, scope, send)

        return cached

    def _fresh(self, key: tuple[str, bytes], now: float) -> _Answer | None:
        answer = self._answers.get(key)
        if answer is None or now - answer.born >= self.ttl_s:
            return None
        return answer

    async def _read(
        self, app: ASGIApp, key: tuple[str, bytes], scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Run the app for a missed key, keep its answer if whole and 200, wake the waiters."""
        self._miss.inc()
        event = self._pending[key] = asyncio.Event()
        born = time.monotonic()
        start: Any = None
        parts: list[bytes] = []
        whole = True

        async def capture(message: Message) -> None:
            nonlocal start, whole
            if message["type"] == "http.response.start":
                start = message
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))
                if message.get("more_body", False):
                    whole = False
            await send(message)

        try:
            await app(scope, receive, capture)
            if start is not None and start["status"] == 200 and whole:
                self._keep(key, born, start, b"".join(parts))
        finally:
            del self._pending[key]
            event.set()

    def _keep(self, key: tuple[str, bytes], born: float, start: Any, body: bytes) -> None:
        if len(body) > self.max_bytes:
            return
        headers = [(n, v) for n, v in start.get("headers", ()) if n.lower() != b"content-length"]
        etag = next((v for n, v in headers if n.lower() == b"etag"), None)
        old = self._answers.pop(key, None)
        if old is not None:
            self._bytes -= len(old.body)
        self._answers[key] = _Answer(born, body, headers, etag)
        self._bytes += len(body)
        while self._bytes > self.max_bytes:
            _, evicted = self._answers.popitem(last=False)
            self._bytes -= len(evicted.body)

    async def _send(self, answer: _Answer, scope: Scope, send: Send) -> None:
        age = str(int(time.monotonic() - answer.born)).encode()
        headers = [*answer.headers, (b"age", age)]
        if answer.etag is not None and _matches(scope, answer.etag):
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
            return
        headers.append((b"content-length", str(len(answer.body)).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer.body, "more_body": False})


def _matches(scope: Scope, etag: bytes) -> bool:
    """Whether the request's If-None-Match names `etag` (or is `*`)."""
    for name, value in scope.get("headers", ()):
        if name.lower() == b"if-none-match":
            tags = {t.strip().removeprefix(b"W/") for t in value.split(b",")}
            return b"*" in tags or etag in tags
    return False
