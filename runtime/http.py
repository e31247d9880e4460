"""The probe and metrics endpoints every long-running process serves: /metrics (Prometheus),
/healthz (the main loop is alive) and /readyz (it can do its work, with the reasons when not).

A client that goes away before its answer is written (a scraper's timeout, a probe killed, a
load balancer's health check closing early) is not an error of the process: it is counted (the
caller's `on_disconnect`: `adr_probe_disconnects_total` of the consumer and the tier job) and
logged at debug level, never printed as a traceback. Anything
else that fails while serving a request is one JSON log line at error level, with the traceback
inside it (runtime/logs.py), and the server goes on.
"""

from __future__ import annotations

import logging
import socket
import sys
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from runtime._errors import ProbeServerError

log = logging.getLogger("adr.http")
DISCONNECTS_HELP: Final = (
    "probe and metrics requests whose client closed the connection before the answer was written"
)
"""The help text of each process's `adr_probe_disconnects` counter."""


def _nothing() -> None:
    pass


class _ProbeServer(ThreadingHTTPServer):
    daemon_threads = True
    on_disconnect: Callable[[], None] = staticmethod(_nothing)

    def handle_error(self, request: socket.socket | tuple[bytes, Any], client_address: Any) -> None:
        """socketserver prints a traceback to stderr here; a client gone early is counted and
        logged at debug level instead, anything else logged as one JSON line."""
        exc = sys.exc_info()[1]
        if isinstance(exc, ConnectionError):  # BrokenPipe, ConnectionReset, ConnectionAborted
            self.on_disconnect()
            log.debug(
                "probe client closed the connection early",
                extra={"client": str(client_address[0]), "error": type(exc).__name__},
            )
            return
        log.error("serving a probe request failed", exc_info=True)


def serve_probes(
    registry: CollectorRegistry,
    host: str,
    port: int,
    healthy: Callable[[], bool],
    ready: Callable[[], tuple[bool, str]],
    on_disconnect: Callable[[], None] = _nothing,
) -> ThreadingHTTPServer:
    """Serve the three endpoints on a daemon thread (port 0 picks a free one); `ready` returns
    whether the process is ready and a one-line detail shown by /readyz either way;
    `on_disconnect` is called for each client gone before its answer was written."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            path = self.path.split("?", 1)[0]
            if path == "/metrics":
                body, ctype, code = generate_latest(registry), CONTENT_TYPE_LATEST, 200
            elif path == "/healthz":
                ok = healthy()
                body, ctype = (b"ok\n" if ok else b"stalled\n"), "text/plain"
                code = 200 if ok else 503
            elif path == "/readyz":
                ok, detail = ready()
                body = f"{'ready' if ok else 'not ready'} {detail}\n".encode()
                ctype, code = "text/plain", 200 if ok else 503
            else:
                body, ctype, code = b"not found\n", "text/plain", 404
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass  # scrapes every few seconds would flood the JSON log

    try:
        server = _ProbeServer((host, port), Handler)
    except OSError as exc:  # e.g. EADDRINUSE: a clear error and exit code, not a traceback
        raise ProbeServerError(f"cannot serve /metrics on {host}:{port}: {exc}") from None
    server.on_disconnect = on_disconnect
    threading.Thread(target=server.serve_forever, name="probes", daemon=True).start()
    return server
