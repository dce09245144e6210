"""``standalone`` as someone watching it sees it: its log, /healthz, /readyz and /metrics over real HTTP.

Covers: /healthz and /readyz answer 200 once it probes; /metrics carries ``process_*`` and, per
monitor, the last probe's phase durations and status code (what a blackbox_exporter user looks
for); a failing target during warm-up is visible at once (a log line, ``route_monitor_warming_up``
1, ``probe_success`` 0) though its failures do not count; ``--log-format json`` lines carry an
RFC 3339 time and the monitor's namespace and name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from alert_rules import names
from tests.support import servers, standalone
from tests.support.net import free_port, wait_for
from tests.support.servers import Targets
from tests.support.standalone import Running

targets = servers.targets
pytestmark = pytest.mark.timeout(60)
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")


def routemonitor(name: str, url: str, warmup: str = "0s") -> str:
    return standalone.routemonitor(name, url, probe=f"interval: 1s, timeout: 500ms, warmup: {warmup}")


@pytest.fixture
def running(tmp_path: Path) -> Iterator[list[Running]]:
    started: list[Running] = []
    yield started
    for r in started:
        if r.proc.poll() is None:
            r.stop()


def start(folder: Path, running: list[Running], *extra: str) -> Running:
    r = Running(folder, *extra)
    running.append(r)
    return r.start()


def test_health_endpoints_process_metrics_and_the_last_probes_phases(targets: Targets, tmp_path: Path,
                                                                     running: list[Running]) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "m.yaml").write_text(routemonitor("web", targets.http()))
    proc = start(folder, running)
    assert proc.get("/healthz") == (200, "ok\n")
    assert proc.get("/readyz") == (200, "ok\n")
    web = {"namespace": "shop", "monitor": "web"}
    wait_for(lambda: proc.value(names.PROBE_HTTP_STATUS_CODE, **web) == 200, timeout=15, what="the first probe")
    phases = {p: proc.value(names.PROBE_PHASE_DURATION_SECONDS, **web, phase=p) for p in names.PHASES}
    assert all(v is not None and 0 <= v < 1 for v in phases.values()), phases
    assert phases["tls"] == 0, "plain HTTP has no handshake"
    assert (phases["connect"] or 0) + (phases["processing"] or 0) > 0
    assert proc.value(names.WARMING_UP, **web) == 0
    assert (proc.value("process_resident_memory_bytes") or 0) > 0
    assert (proc.value("process_open_fds") or 0) > 0
    assert proc.value("process_cpu_seconds_total") is not None
    assert proc.stop() == 0


def test_a_failing_target_warming_up_is_visible_at_once(tmp_path: Path, running: list[Running]) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "m.yaml").write_text(routemonitor("down", f"http://127.0.0.1:{free_port()}/", warmup="10m"))
    proc = start(folder, running)
    down = {"namespace": "shop", "monitor": "down"}
    assert re.search(r" INFO route_monitor\.standalone: monitoring shop/down: http://127\.0\.0\.1:\d+/ every 1s, "
                     r"warm-up 10m \(failures count after it or the first success\)\n", proc.log), proc.log
    wait_for(lambda: ": shop/down: warming up: " in proc.log, timeout=15, what="the warm-up line")
    [line] = [ln for ln in proc.log.splitlines() if ": shop/down: warming up: " in ln]
    assert line.endswith(" WARNING route_monitor.standalone: shop/down: warming up: failing probes are not "
                         "counted until one succeeds or the warm-up (spec.probe.warmup) has passed"), line
    assert re.search(r"DOWN \(connection_refused: .*\)  http://127\.0\.0\.1:\d+/  \(not counted: warmup\)", proc.log)
    assert proc.value(names.WARMING_UP, **down) == 1
    assert proc.value(names.PROBE_SUCCESS, **down) == 0
    assert proc.value(names.PROBE_HTTP_STATUS_CODE, **down) == 0
    assert proc.value(names.PROBES_TOTAL, **down, result="failure") == 0, "warm-up failures do not count"
    assert (proc.value(names.PROBES_EXCLUDED_TOTAL, **down, reason="warmup") or 0) >= 1
    assert proc.stop() == 0


def test_json_logs_carry_an_rfc3339_time_and_the_monitor(targets: Targets, tmp_path: Path,
                                                         running: list[Running]) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "m.yaml").write_text(routemonitor("web", targets.http()))
    (folder / "bad.yaml").write_text(routemonitor("bad", "http://bad.example/").replace('"99.5"', '"101"'))
    proc = start(folder, running, "--log-format", "json")
    wait_for(lambda: "shop/web: UP" in proc.log, timeout=15, what="the first transition")
    assert proc.stop() == 0
    records = [json.loads(line) for line in proc.log.splitlines()]
    assert all(RFC3339.match(r["time"]) and r["logger"] == "route_monitor.standalone" for r in records), records
    [up] = [r for r in records if "shop/web: UP" in r["message"]]
    assert (up["level"], up["namespace"], up["monitor"]) == ("INFO", "shop", "web")
    assert records[-1]["message"] == "stopped"
    [bad] = [r for r in records if "RouteMonitor/shop/bad" in r["message"]]
    assert bad["message"].startswith(f"{folder / 'bad.yaml'}:7: error: RouteMonitor/shop/bad: spec.slo.availability: ")
    assert bad["level"] == "ERROR" and "finding" not in bad


def test_problems_in_the_files_read_as_check_prints_them(targets: Targets, tmp_path: Path,
                                                          running: list[Running]) -> None:
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "m.yaml").write_text(routemonitor("web", targets.http()))
    (folder / "bad.yaml").write_text(routemonitor("bad", "http://bad.example/").replace('"99.5"', '"101"'))
    proc = start(folder, running)
    [line] = [ln for ln in proc.log.splitlines() if "RouteMonitor/shop/bad" in ln]
    assert line.startswith(f"{folder / 'bad.yaml'}:7: error: RouteMonitor/shop/bad: spec.slo.availability: "), line
    assert proc.stop() == 0
