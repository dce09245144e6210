"""The one ``/metrics`` server of every route-monitor process (issue 12 section 3):

- gzip when the scraper accepts it (as Prometheus always does), plain otherwise, same content;
- ``?namespace=NS`` renders one namespace's series, a bad name is a 400; ``name[]`` filters;
- ``/readyz`` follows the ready flag; unknown paths are 404;
- a real ``standalone`` process exports no ``_created`` series and passes ``promtool check metrics``.
"""

from __future__ import annotations

import gzip
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, Counter

from route_monitor.probe.httpserver import MetricsServer
from tests.support.net import wait_for
from tests.unit.cli.test_standalone import Proc


@pytest.fixture
def served() -> Iterator[tuple[MetricsServer, list[bool]]]:
    registry = CollectorRegistry()
    c = Counter("route_monitor_things_total", "things", ["namespace"], registry=registry)
    for i in range(50):
        c.labels(namespace=f"ns{i}").inc()
    ready = [False]
    server = MetricsServer(registry, "127.0.0.1", 0, ready=lambda: ready[0],
                           render_namespace=lambda ns: f'route_monitor_things_total{{namespace="{ns}"}} 1\n'.encode())
    server.start()
    yield server, ready
    server.stop()


def test_gzip_when_accepted_plain_otherwise(served: tuple[MetricsServer, list[bool]]) -> None:
    server, _ = served
    plain = httpx.get(server.url, headers={"Accept-Encoding": "identity"})
    raw = httpx.get(server.url, headers={"Accept-Encoding": "gzip"})  # httpx decodes; check the wire header
    assert "content-encoding" not in plain.headers
    assert raw.headers["content-encoding"] == "gzip"
    assert raw.text == plain.text and 'route_monitor_things_total{namespace="ns7"} 1.0' in plain.text
    with httpx.stream("GET", server.url, headers={"Accept-Encoding": "gzip"}) as r:
        wire = b"".join(r.iter_raw())
    assert gzip.decompress(wire).decode() == plain.text and len(wire) < len(plain.content)
    refused = httpx.get(server.url, headers={"Accept-Encoding": "gzip;q=0"})
    assert "content-encoding" not in refused.headers


def test_namespace_filter_readyz_and_404(served: tuple[MetricsServer, list[bool]]) -> None:
    server, ready = served
    base = server.url.removesuffix("/metrics")
    assert httpx.get(server.url + "?namespace=shop").text == 'route_monitor_things_total{namespace="shop"} 1\n'
    assert httpx.get(server.url + "?namespace=Not_A_Namespace").status_code == 400
    assert "ns3" in httpx.get(server.url + "?name[]=route_monitor_things_total").text
    assert httpx.get(base + "/readyz").status_code == 503
    ready[0] = True
    assert httpx.get(base + "/readyz").status_code == 200
    assert httpx.get(base + "/nope").status_code == 404


def test_standalone_exports_no_created_series(tmp_path: Path) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "m.yaml").write_text("""apiVersion: routemonitor.io/v1alpha1
kind: RouteMonitor
metadata: {name: web, namespace: shop}
spec:
  target: {url: "http://127.0.0.1:9/"}
  probe: {interval: 1s, timeout: 500ms, warmup: 0s}
  slo: {availability: "99.9"}
""")
    proc = Proc(folder)
    try:
        wait_for(lambda: (proc.value("route_monitor_probes_total", namespace="shop", monitor="web",
                                     result="failure") or 0) >= 1, timeout=20, what="a probe")
        time.sleep(0.5)
        text = httpx.get(f"http://127.0.0.1:{proc.port}/metrics").text
    finally:
        proc.stop()
    assert "_created" not in text
    assert "route_monitor_probe_schedule_lag_seconds_bucket" in text and "route_monitor_build_info" in text
    if shutil.which("promtool"):
        check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True)
        assert check.returncode == 0, check.stdout + check.stderr
