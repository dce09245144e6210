"""Serve ``/metrics`` from an injected registry, in a background thread.

Rendering a large exposition takes CPU time; doing it in a thread rather than on the event
loop keeps probe scheduling undisturbed while Prometheus scrapes. The collectors it calls
read the engine's state without locks; they take consistent snapshots of each series.
"""

from __future__ import annotations

import threading
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server


class MetricsServer:
    def __init__(self, registry: CollectorRegistry, host: str = "127.0.0.1", port: int = 8080) -> None:
        self.registry = registry
        self.host = host
        self.port = port
        self._server: WSGIServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind and serve; raises OSError when the address is taken. Port 0 picks a free port."""
        self._server, self._thread = start_http_server(self.port, addr=self.host, registry=self.registry)
        self.port = int(self._server.server_port)

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
