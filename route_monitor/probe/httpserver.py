"""The one HTTP endpoint of every route-monitor process (``operator``, ``standalone``, ``demo``):
``/metrics`` from an injected registry and, for the operator, ``/readyz``. Served from a
background thread.

Rendering a large exposition takes CPU time; doing it in a thread rather than on the event
loop keeps probe scheduling undisturbed while Prometheus scrapes. The collectors it calls
read the engine's state without locks; they take consistent snapshots of each series.

- ``render`` (e.g. :meth:`ProbeMetrics.exposition`, the fast path for thousands of monitors)
  produces the full page; a ``name[]`` filter falls back to client_python's rendering of just
  those metrics; ``namespace=NS`` (with ``render_namespace``) gives one namespace's probe series,
  for per-namespace scraping under user-workload monitoring;
- the body is gzip-compressed when the scraper accepts it (Prometheus always does);
- ``/readyz`` answers 200 once ``ready()`` is true, 503 before;
- ``/healthz`` answers 200 while ``healthy()`` is true (always, when not given), 503 after:
  ``standalone``'s liveness (the operator's is kopf's, on its own port).

Always the text format (0.0.4), which every Prometheus reads.
"""

from __future__ import annotations

import gzip
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")
GZIP_LEVEL = 1
"""Fast compression: an exposition of thousands of monitors shrinks ~10x even at level 1."""


def _accepts_gzip(header: str | None) -> bool:
    for part in (header or "").split(","):
        coding, _, params = part.strip().partition(";")
        if coding.strip().lower() == "gzip":
            return params.replace(" ", "") not in ("q=0", "q=0.0")
    return False


class MetricsServer:
    def __init__(self, registry: CollectorRegistry, host: str = "127.0.0.1", port: int = 8080, *,
                 render: Callable[[], bytes] | None = None, render_namespace: Callable[[str], bytes] | None = None,
                 ready: Callable[[], bool] | None = None, healthy: Callable[[], bool] | None = None) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self._render = render or (lambda: generate_latest(registry))
        self._render_namespace = render_namespace
        self._ready = ready
        self._healthy = healthy or (lambda: True)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def page(self, query: str) -> tuple[int, bytes]:
        """(status, body) of ``/metrics?<query>``."""
        params = parse_qs(query)
        wanted = params.get("name[]")
        namespace = params["namespace"][0] if "namespace" in params else None
        if wanted:
            return 200, generate_latest(self.registry.restricted_registry(wanted))
        if namespace is not None and self._render_namespace is not None:
            if not DNS_LABEL.fullmatch(namespace):
                return 400, f"namespace: {namespace[:63]!r} is not a namespace name\n".encode()
            return 200, self._render_namespace(namespace)
        return 200, self._render()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                url = urlsplit(self.path)
                if url.path in ("/metrics", "/"):
                    code, body = server.page(url.query)
                    self._send(code, body, CONTENT_TYPE_LATEST if code == 200 else "text/plain; charset=utf-8")
                elif url.path == "/readyz" and server._ready is not None:
                    ok = server._ready()
                    self._send(200 if ok else 503, b"ok\n" if ok else b"starting\n", "text/plain; charset=utf-8")
                elif url.path == "/healthz":
                    ok = server._healthy()
                    self._send(200 if ok else 503, b"ok\n" if ok else b"stalled\n", "text/plain; charset=utf-8")
                else:
                    self._send(404, b"not found: try /metrics\n", "text/plain; charset=utf-8")

            def _send(self, code: int, body: bytes, content_type: str) -> None:
                zipped = len(body) > 512 and _accepts_gzip(self.headers.get("Accept-Encoding"))
                if zipped:
                    body = gzip.compress(body, compresslevel=GZIP_LEVEL)
                self.send_response(code)
                self.send_header("Content-Type", content_type)
                if zipped:
                    self.send_header("Content-Encoding", "gzip")
                self.send_header("Vary", "Accept-Encoding")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:  # no access log on stderr
                pass

        return Handler

    def start(self) -> None:
        """Bind and serve; raises OSError when the address is taken. Port 0 picks a free port."""
        http = ThreadingHTTPServer((self.host, self.port), self._handler())
        http.daemon_threads = True
        self._server = http
        self.port = int(http.server_address[1])
        self._thread = threading.Thread(target=http.serve_forever, name="metrics-http", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{'127.0.0.1' if host in ('0.0.0.0', '') else host}:{self.port}/metrics"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
