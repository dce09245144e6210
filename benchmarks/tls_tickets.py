"""How many TLS 1.3 session tickets a server with OpenSSL's default (two, as nginx and HAProxy)
sends to each client: Python's ``ssl`` (OpenSSL 3.0, always offers resumption) and Debian's
blackbox_exporter (Go's crypto/tls without a session cache, which offers none).

    python -m benchmarks.tls_tickets

Counted on the server with ``SSLContext._msg_callback`` (CPython's hook for every handshake
message written); prints one JSON line of tickets per connection for each client.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks import blackbox, measure

CONNECTIONS = 3


def main() -> int:
    import trustme

    work = Path(tempfile.mkdtemp(prefix="route-monitor-tickets-"))
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(work / "ca.pem"))
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.num_tickets = 2
    ca.issue_cert("127.0.0.1").configure_cert(server_ctx)
    sent: list[int] = []

    def on_message(conn: Any, direction: str, version: Any, content_type: Any, msg_type: Any, data: Any) -> None:
        if direction == "write" and msg_type == ssl._TLSMessageType.NEWSESSION_TICKET:  # type: ignore[attr-defined]
            sent.append(1)

    server_ctx._msg_callback = on_message  # type: ignore[attr-defined]
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        while True:
            conn, _ = listener.accept()
            try:
                with server_ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(65536)
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
            except OSError:
                continue

    threading.Thread(target=serve, daemon=True).start()
    counts: dict[str, float] = {}
    client_ctx = ssl.create_default_context(cafile=str(work / "ca.pem"))
    for _ in range(CONNECTIONS):
        with client_ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1") as tls:
            tls.sendall(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            while tls.recv(65536):
                pass
    time.sleep(0.2)
    counts["python_ssl"], sent[:] = len(sent) / CONNECTIONS, []
    config = work / "blackbox.yml"
    config.write_text("modules:\n  h:\n    prober: http\n    timeout: 5s\n    http:\n      preferred_ip_protocol: ip4\n")
    bb_port = measure.free_port()
    exporter = subprocess.Popen([blackbox.EXPORTER, f"--config.file={config}", f"--web.listen-address=127.0.0.1:{bb_port}"],
                                env=dict(os.environ, SSL_CERT_FILE=str(work / "ca.pem")), stderr=subprocess.DEVNULL)
    try:
        measure.wait_http(f"http://127.0.0.1:{bb_port}/metrics", 30.0)
        for _ in range(CONNECTIONS):
            url = f"http://127.0.0.1:{bb_port}/probe?module=h&target=https://127.0.0.1:{port}/"
            with urllib.request.urlopen(url) as answer:
                assert b"probe_success 1" in answer.read()
        time.sleep(0.2)
        counts["blackbox_exporter"] = len(sent) / CONNECTIONS
    finally:
        exporter.terminate()
        exporter.wait()
    print(json.dumps({"tickets_per_connection": counts}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
