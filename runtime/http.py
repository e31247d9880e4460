"""The probe and metrics endpoints every long-running process serves: /metrics (Prometheus),
/healthz (the main loop is alive) and /readyz (it can do its work, with the reasons when not)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from runtime._errors import ProbeServerError


def serve_probes(
    registry: CollectorRegistry,
    host: str,
    port: int,
    healthy: Callable[[], bool],
    ready: Callable[[], tuple[bool, str]],
) -> ThreadingHTTPServer:
    """Serve the three endpoints on a daemon thread (port 0 picks a free one); `ready` returns
    whether the process is ready and a one-line detail shown by /readyz either way."""

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
        server = ThreadingHTTPServer((host, port), Handler)
    except OSError as exc:  # e.g. EADDRINUSE: a clear error and exit code, not a traceback
        raise ProbeServerError(f"cannot serve /metrics on {host}:{port}: {exc}") from None
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="probes", daemon=True).start()
    return server
