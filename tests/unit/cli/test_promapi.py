"""The Prometheus API client (``route_monitor.slo.promapi``) against real HTTP(S) servers on loopback
that answer like Prometheus' ``/api/v1/query`` (a scripted sequence of answers, every request
recorded):

- the bearer token is read from its file for every query (a rotated token is picked up) and
  never appears in an error; the CA file is trusted for HTTPS (and an unknown CA is refused);
- 503/429 and connection failures are retried a bounded number of times, then
  ``PrometheusUnavailable`` naming the URL; a rejected query (400) is not retried;
- options are checked at the boundary, naming the option (credentials in the URL refused
  without repeating them), and the operator refuses them before starting.
"""

from __future__ import annotations

import asyncio
import json
import re
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest
import trustme

from route_monitor.cli.main import main
from route_monitor.slo.promapi import (
    InvalidSettings,
    PrometheusAPI,
    PrometheusUnavailable,
    PromSettings,
    QueryRejected,
    parse_settings,
)

VECTOR = {"status": "success", "data": {"resultType": "vector", "result": [
    {"metric": {"namespace": "shop", "monitor": "checkout"}, "value": [1795000000, "0.25"]},
    {"metric": {"namespace": "shop", "monitor": "cart"}, "value": [1795000000, "NaN"]}]}}


class FakePrometheus:
    """Answers each POST /api/v1/query with the next scripted (status, body); records requests."""

    def __init__(self, tls: ssl.SSLContext | None = None) -> None:
        self.script: list[tuple[int, Any]] = []
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                owner.requests.append({"path": self.path, "auth": self.headers.get("Authorization"), "form": form})
                code, body = owner.script.pop(0) if owner.script else (200, VECTOR)
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *_: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if tls is not None:
            self.server.socket = tls.wrap_socket(self.server.socket, server_side=True)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://{'localhost' if tls else '127.0.0.1'}:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def prom() -> Iterator[FakePrometheus]:
    p = FakePrometheus()
    yield p
    p.close()


def query(settings: PromSettings, expr: str = "up", at: float | None = None) -> list[Any]:
    async def go() -> list[Any]:
        async with PrometheusAPI(settings) as api:
            return await api.query(expr, at=at)
    return asyncio.run(go())


def test_samples_token_read_per_query_and_time(prom: FakePrometheus, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first-token\n")
    settings = PromSettings(url=prom.url, bearer_token_file=token)
    samples = query(settings, "sum(x)", at=1795000000.5)
    assert (dict(samples[0].labels), samples[0].value) == ({"namespace": "shop", "monitor": "checkout"}, 0.25)
    assert samples[1].value != samples[1].value, "NaN stays NaN"
    token.write_text("rotated-token\n")
    query(settings)
    assert [r["auth"] for r in prom.requests] == ["Bearer first-token", "Bearer rotated-token"]
    assert prom.requests[0]["form"] == {"query": ["sum(x)"], "time": ["1795000000.500"]}
    assert prom.requests[0]["path"] == "/api/v1/query"


def test_unavailable_is_retried_a_bounded_number_of_times(prom: FakePrometheus, tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("s3cr3t-token")
    prom.script = [(503, {"status": "error"}), (429, {"status": "error"})]
    assert query(PromSettings(url=prom.url, bearer_token_file=token, backoff=0.01))
    assert len(prom.requests) == 3
    prom.script = [(503, {"status": "error"})] * 5
    with pytest.raises(PrometheusUnavailable) as e:
        query(PromSettings(url=prom.url, bearer_token_file=token, attempts=2, backoff=0.01))
    assert len(prom.requests) == 5 and "HTTP 503" in str(e.value) and prom.url in str(e.value)
    assert "s3cr3t" not in str(e.value)


def test_a_rejected_query_is_not_retried(prom: FakePrometheus) -> None:
    prom.script = [(400, {"status": "error", "errorType": "bad_data", "error": "parse error at char 3"})]
    with pytest.raises(QueryRejected, match="parse error at char 3"):
        query(PromSettings(url=prom.url, backoff=0.01))
    assert len(prom.requests) == 1


def test_connection_refused_is_unavailable() -> None:
    with pytest.raises(PrometheusUnavailable, match="unreachable after 2 attempts"):
        query(PromSettings(url="http://127.0.0.1:9", attempts=2, backoff=0.01, timeout=2))


def test_https_with_the_ca_file(tmp_path: Path) -> None:
    ca = trustme.CA()
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("localhost").configure_cert(server_ctx)
    cafile = tmp_path / "ca.pem"
    ca.cert_pem.write_to_path(str(cafile))
    p = FakePrometheus(tls=server_ctx)
    try:
        assert query(PromSettings(url=p.url, ca_file=cafile))
        with pytest.raises(PrometheusUnavailable, match=r"CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
            query(PromSettings(url=p.url, attempts=1))
    finally:
        p.close()


@pytest.mark.parametrize(("kwargs", "message"), [
    pytest.param({"url": "prometheus:9090"}, "--prometheus-url: expected an http(s) URL", id="no-scheme"),
    pytest.param({"url": "https://admin:hunter2@thanos:9091"}, "must not contain credentials", id="credentials"),
    pytest.param({"url": "http://p:9090", "timeout": 0}, "--prometheus-timeout", id="zero-timeout"),
    pytest.param({"url": "http://p:9090", "bearer_token_file": "/nonexistent/token"},
                 "--prometheus-bearer-token-file: /nonexistent/token", id="missing-token-file"),
    pytest.param({"url": "http://p:9090", "ca_file": "/nonexistent/ca.pem"}, "--prometheus-ca-file", id="missing-ca"),
])
def test_options_are_checked_naming_the_option(kwargs: dict[str, Any], message: str) -> None:
    options = dict(kwargs)
    url = options.pop("url")
    with pytest.raises(InvalidSettings, match=re.escape(message)) as e:
        parse_settings(url, **options)
    assert "hunter2" not in str(e.value)


def test_good_options() -> None:
    s = parse_settings("https://thanos-querier.openshift-monitoring.svc:9091/", timeout=10)
    assert (s.url, s.timeout, s.bearer_token_file) == ("https://thanos-querier.openshift-monitoring.svc:9091", 10, None)


@pytest.mark.parametrize(("argv", "message"), [
    pytest.param(["--prometheus-url", "https://admin:hunter2@thanos:9091"], "--prometheus-url:", id="credentials"),
    pytest.param(["--prometheus-url", "http://p:9090", "--prometheus-interval", "0"], "--prometheus-interval",
                 id="zero-interval"),
    pytest.param(["--prometheus-url", "http://p:9090", "--prometheus-ca-file", "/nonexistent"],
                 "--prometheus-ca-file", id="missing-ca"),
])
def test_operator_refuses_bad_prometheus_options_before_starting(capsys: pytest.CaptureFixture[str],
                                                                 argv: list[str], message: str) -> None:
    assert main(["operator", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"route-monitor operator: error: {message}") and "hunter2" not in err
