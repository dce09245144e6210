"""``route-monitor demo`` as a user runs it: no arguments beyond a bounded ``--duration``.

Covers: it prints where metrics, rules and manifests are and how to run Prometheus on them;
``/metrics`` serves all six demo monitors (the gRPC and TCP ones succeeding) while it runs (the untrusted certificate fails as
``certificate_invalid`` with its expiry exported); the rules and ``prometheus.yml`` it writes
pass ``promtool check config``; it exits 0; a busy metrics port falls back to a free one; the
live view's burn rates (error ratio / budget, availability and latency); colours only on a
terminal and never with ``NO_COLOR``; ``--clean`` removes its files, else the last line says where
they stay.
"""

from __future__ import annotations

import os
import pty
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from alert_rules.model import LatencyObjective, Objective, parse_percent
from route_monitor.cli.liveview import Tracker, render
from route_monitor.probe.result import FailureReason, ProbeResult
from route_monitor.spec.monitor import MonitorSpec, UrlTarget
from tests.support.net import free_port, wait_for

pytestmark = pytest.mark.timeout(60)


def scrape(port: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for f in text_string_to_metric_families(text) for s in f.samples}


DEMO = {"healthy", "flaky", "slow", "untrusted-tls", "grpc-health", "redis-ping"}


def test_demo_runs_shows_where_things_are_and_exits_0(tmp_path: Path) -> None:
    port = free_port()
    p = subprocess.Popen([sys.executable, "-m", "route_monitor.cli.main", "demo", "--duration", "6",
                          "--metrics-address", f"127.0.0.1:{port}"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)

    def has_all() -> bool:
        samples = scrape(port)
        monitors = {dict(k[1]).get("monitor") for k in samples if k[0] == "route_monitor_probes_total"}
        succeeded = {dict(k[1]).get("monitor") for k, v in samples.items()
                     if k[0] == "route_monitor_probes_total" and dict(k[1]).get("result") == "success" and v > 0}
        return monitors >= DEMO and succeeded >= {"grpc-health", "redis-ping"} and any(
            k[0] == "route_monitor_probe_failures_total" and ("reason", "certificate_invalid") in k[1]
            for k in samples)

    try:
        wait_for(has_all, timeout=15, what="all six demo monitors on /metrics")
        samples = scrape(port)
        expiry = samples[("route_monitor_tls_certificate_expiry_timestamp_seconds",
                          (("monitor", "untrusted-tls"), ("namespace", "demo")))]
        assert 9 * 86400 < expiry - time.time() < 11 * 86400
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, err
    assert f"http://127.0.0.1:{port}/metrics" in out
    folder = Path(re.search(r"rules:\s+(\S+)/rules/\*\.rules\.yml", out).group(1))  # type: ignore[union-attr]
    assert "prometheus --config.file=" in out
    assert set(re.findall(r"^(\S+)\s+\d+\.\d+%", out, re.M)) >= DEMO
    assert len(list((folder / "rules").glob("*.rules.yml"))) == 6 + 1  # one per monitor, and the shared rules
    if shutil.which("promtool"):
        check = subprocess.run(["promtool", "check", "config", str(folder / "prometheus.yml")],
                               capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr
    shutil.rmtree(folder)


def test_busy_metrics_port_falls_back_to_a_free_one() -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "route_monitor.cli.main", "demo", "--duration", "1",
                               "--metrics-address", f"127.0.0.1:{port}"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert f"127.0.0.1:{port} is busy" in done.stdout
    assert re.search(r"metrics:\s+http://127\.0\.0\.1:\d+/metrics", done.stdout)
    shutil.rmtree(re.search(r"stay in (\S+)", done.stdout).group(1))  # type: ignore[union-attr]


def test_clean_removes_the_files_and_says_so() -> None:
    done = subprocess.run([sys.executable, "-m", "route_monitor.cli.main", "demo", "--duration", "1s", "--clean",
                           "--metrics-address", "127.0.0.1:0"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    folder = Path(re.search(r"manifests:\s+(\S+)/monitors\.yaml", done.stdout).group(1))  # type: ignore[union-attr]
    assert done.stdout.rstrip("\n").splitlines()[-1] == f"stopped; removed {folder}"
    assert not folder.exists()
    assert "\x1b[" not in done.stdout, "no colours or redraws when not on a terminal"


def _on_a_terminal(env: dict[str, str]) -> str:
    """The demo's output when its stdout is a terminal (a pseudo-terminal read until it exits)."""
    primary, secondary = pty.openpty()
    p = subprocess.Popen([sys.executable, "-m", "route_monitor.cli.main", "demo", "--duration", "2500ms", "--clean",
                          "--metrics-address", "127.0.0.1:0"], stdout=secondary, stderr=subprocess.DEVNULL,
                         env={**os.environ, **env})
    os.close(secondary)
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(primary, 65536)
            except OSError:  # EIO: the demo closed the terminal
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read)
    reader.start()
    assert p.wait(timeout=30) == 0
    reader.join(timeout=10)
    os.close(primary)
    return b"".join(chunks).decode(errors="replace")


@pytest.mark.parametrize(("env", "coloured"), [({"NO_COLOR": ""}, True), ({"NO_COLOR": "1"}, False)])
def test_colours_on_a_terminal_unless_no_color(env: dict[str, str], coloured: bool) -> None:
    out = _on_a_terminal(env)
    assert "healthy" in out and "stopped; removed" in out
    assert ("\x1b[2m" in out) is coloured, out[-2000:]  # the dimmed columns of the live view


def _spec(availability: str, latency_ms: int | None = None) -> MonitorSpec:
    lat = LatencyObjective(latency_ms, parse_percent("90", "")) if latency_ms else None
    return MonitorSpec("demo", "m", UrlTarget("http://127.0.0.1/"),
                       objective=Objective(availability=parse_percent(availability, ""), latency=lat))


@pytest.mark.parametrize(("availability", "outcomes", "burn"), [
    pytest.param("99", [True] * 100, 0.0, id="no-errors-no-burn"),
    pytest.param("99", [True] * 99 + [False], 1.0, id="spending-exactly-the-budget"),
    pytest.param("99.9", [True] * 90 + [False] * 10, 100.0, id="10pct-errors-on-99.9"),
    pytest.param("99", [False] * 10, 100.0, id="hard-down"),
])
def test_live_view_burn_rate(availability: str, outcomes: list[bool], burn: float) -> None:
    now = 10_000.0
    tracker = Tracker([(_spec(availability), "http://127.0.0.1/")], clock=lambda: now)
    for i, ok in enumerate(outcomes):
        tracker(ProbeResult(("demo", "m"), "http://127.0.0.1/", now - 200 + i, ok, None if ok else FailureReason.TIMEOUT,
                            0.01, 200 if ok else None, "x"))
    view = tracker.views[("demo", "m")]
    assert view.burn(300, now) == pytest.approx(burn)
    assert view.burn(50, now) is None, "nothing in the last 50 s: no burn rate rather than 0"
    table = render(tracker, color=False)
    assert "m " in table and "http://127.0.0.1/" in table


def test_live_view_latency_burn_counts_slow_probes() -> None:
    now = 1000.0
    tracker = Tracker([(_spec("99", latency_ms=100), "u")], clock=lambda: now)
    for i, d in enumerate([0.05] * 8 + [0.2] * 2):
        tracker(ProbeResult(("demo", "m"), "u", now - 10 + i, True, None, d, 200, "x"))
    assert tracker.views[("demo", "m")].burn(60, now, latency=True) == pytest.approx(2.0)  # 20% slow / 10% budget
