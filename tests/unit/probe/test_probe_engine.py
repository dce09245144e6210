"""The engine against real loopback targets, read through a fresh registry.

Covers: Contract 3's names and labels; both ``result`` series at 0 as soon as a monitor is
set; failures by reason; the latency threshold as a bucket boundary (``names.le_label``);
certificate expiry on a broken certificate; ``target_info``; set/replace/remove semantics
(removal stops probing within a second and removes every series); the concurrency bound;
``promtool check metrics`` on the real exposition served over HTTP (and ``name[]`` filtering).
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
import urllib.request
from dataclasses import replace

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from alert_rules import names
from alert_rules.model import LatencyObjective, Objective, parse_percent
from route_monitor.cli.demo_targets import Reply
from route_monitor.probe.engine import ProbeEngine
from route_monitor.probe.httpserver import MetricsServer
from route_monitor.probe.metrics import ProbeMetrics
from route_monitor.probe.prober import Prober, ProbeRequest
from route_monitor.probe.result import ProbeResult
from route_monitor.probe.tls.contexts import TLSContexts
from route_monitor.spec.monitor import MonitorSpec, ProbeSettings, UrlTarget
from route_monitor.targets.resolve import ResolvedTarget
from tests.support import servers
from tests.support.servers import Targets, hang, status

targets = servers.targets
pytestmark = pytest.mark.timeout(30)


def monitor(name: str, url: str, *, interval_ms: int = 200, threshold_ms: int | None = None,
            ns: str = "shop", **probe: object) -> tuple[MonitorSpec, ResolvedTarget]:
    latency = LatencyObjective(threshold_ms, parse_percent("99", "")) if threshold_ms else None
    probe.setdefault("warmup_ms", 0)  # these tests count every result from the first (warm-up: test_gate.py)
    probe.setdefault("timeout_ms", interval_ms // 2)
    spec = MonitorSpec(ns, name, UrlTarget(url),
                       probe=ProbeSettings(interval_ms=interval_ms, **probe),  # type: ignore[arg-type]
                       objective=Objective(availability=parse_percent("99.9", ""), latency=latency))
    return spec, ResolvedTarget(url, "url", "")


class Run:
    def __init__(self, targets: Targets, **kw: object) -> None:
        self.registry = CollectorRegistry()
        self.results: list[ProbeResult] = []
        self.engine = ProbeEngine(metrics=ProbeMetrics(self.registry), on_result=self.results.append,
                                  tls=TLSContexts(verify=targets.client_context()), **kw)  # type: ignore[arg-type]

    def value(self, metric: str, /, **labels: str) -> float | None:
        return self.registry.get_sample_value(metric, labels)

    async def until(self, predicate: object, timeout: float = 5) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():  # type: ignore[operator]
                await asyncio.sleep(0.02)


@pytest.fixture
async def run(targets: Targets) -> Run:
    r = Run(targets)
    await r.engine.start()
    yield r  # type: ignore[misc]
    await r.engine.close()


async def test_both_result_series_exist_at_zero_before_the_first_probe(run: Run, targets: Targets) -> None:
    spec, target = monitor("checkout", targets.http(), interval_ms=60_000)
    run.engine.set_monitor(spec, target)
    for result in ("success", "failure"):
        assert run.value(names.PROBES_TOTAL, namespace="shop", monitor="checkout", result=result) == 0
    assert run.value(names.TARGET_INFO, namespace="shop", monitor="checkout", url=target.url, kind="url", name="") == 1
    assert run.value(names.PROBE_SUCCESS, namespace="shop", monitor="checkout") is None, "no result yet: no 0/1"


async def test_successes_failures_and_reasons_are_counted(run: Run, targets: Targets) -> None:
    run.engine.set_monitor(*monitor("ok", targets.http()))
    run.engine.set_monitor(*monitor("broken", targets.http(status(503))))
    await run.until(lambda: len([r for r in run.results if r.key == ("shop", "broken")]) >= 2
                    and len([r for r in run.results if r.key == ("shop", "ok")]) >= 2)
    ok = {"namespace": "shop", "monitor": "ok"}
    broken = {"namespace": "shop", "monitor": "broken"}
    assert run.value(names.PROBES_TOTAL, **ok, result="success") >= 2
    assert run.value(names.PROBES_TOTAL, **ok, result="failure") == 0
    assert run.value(names.PROBE_SUCCESS, **ok) == 1
    assert run.value(names.PROBE_SUCCESS, **broken) == 0
    failures = run.value(names.PROBES_TOTAL, **broken, result="failure")
    assert failures >= 2 and run.value(names.PROBE_FAILURES_TOTAL, **broken, reason="http_status") == failures
    assert run.value(names.PROBE_DURATION_SECONDS + "_count", **broken) == 0, "failures are not in the histogram"
    assert run.value(names.PROBE_DURATION_SECONDS + "_count", **ok) >= 2


@pytest.mark.parametrize("threshold_ms", [300, 1000, 1234], ids=["300ms", "1s", "1234ms"])
async def test_latency_threshold_is_a_bucket_boundary(run: Run, targets: Targets, threshold_ms: int) -> None:
    run.engine.set_monitor(*monitor("slowish", targets.http(lambda m, p: Reply(delay=0.01)),
                                    interval_ms=2000, threshold_ms=threshold_ms))
    le = names.le_label(threshold_ms / 1000)
    assert run.value(names.PROBE_DURATION_SECONDS + "_bucket", namespace="shop", monitor="slowish", le=le) == 0
    await run.until(lambda: run.results)
    assert run.value(names.PROBE_DURATION_SECONDS + "_bucket", namespace="shop", monitor="slowish", le=le) == 1
    assert run.value(names.PROBE_DURATION_SECONDS + "_bucket", namespace="shop", monitor="slowish", le="0.005") == 0


async def test_certificate_expiry_is_exported_for_a_broken_certificate(run: Run, targets: Targets) -> None:
    run.engine.set_monitor(*monitor("expired", targets.https(cert="expired")))
    await run.until(lambda: run.results)
    assert run.results[0].reason and run.results[0].reason.value == "certificate_invalid"
    assert run.value(names.TLS_CERT_EXPIRY, namespace="shop", monitor="expired") == \
        pytest.approx(targets.not_after("expired"), abs=1)
    assert run.value(names.PROBE_FAILURES_TOTAL, namespace="shop", monitor="expired",
                     reason="certificate_invalid") >= 1


async def test_removal_stops_probing_within_a_second_and_removes_every_series(run: Run, targets: Targets) -> None:
    asked = threading.Event()

    def hang_once_asked(method: str, target: str) -> Reply:
        asked.set()
        return hang(method, target)

    # the hanging probe times out after 0.9 s: it is still in flight when removed, even on a loaded machine
    run.engine.set_monitor(*monitor("gone", targets.http(hang_once_asked), interval_ms=1000, timeout_ms=900,
                                    threshold_ms=100))
    run.engine.set_monitor(*monitor("stays", targets.http()))

    def gone_probe() -> asyncio.Task[None] | None:
        ticker = run.engine._workers[("shop", "gone")].ticker
        return ticker.task if ticker is not None else None

    # "gone" is mid-probe: its target has its request and hangs (a task alone may not have started yet)
    await run.until(asked.is_set)
    task = gone_probe()
    assert task is not None and run.engine.metrics.in_flight >= 1
    run.engine.remove_monitor(("shop", "gone"))
    assert run.engine.keys() == {("shop", "stays")}
    async with asyncio.timeout(1):
        await asyncio.gather(task, return_exceptions=True)
    text = generate_latest(run.registry).decode()
    assert 'monitor="gone"' not in text and 'monitor="stays"' in text
    seen = len([r for r in run.results if r.key == ("shop", "gone")])
    await asyncio.sleep(1.1)  # past the next tick it would have had
    assert len([r for r in run.results if r.key == ("shop", "gone")]) == seen == 0


class _CrashesOnce(Prober):
    """A prober with a bug that shows on its first probe only (a probe itself never raises)."""

    crashed = False

    async def probe(self, req: ProbeRequest) -> ProbeResult:
        if not self.crashed:
            self.crashed = True
            raise RuntimeError("a bug")
        return await super().probe(req)


async def test_a_crash_in_a_probe_is_logged_and_the_monitor_goes_on_probing(
        targets: Targets, caplog: pytest.LogCaptureFixture) -> None:
    run = Run(targets, prober=_CrashesOnce(tls=TLSContexts(verify=targets.client_context())))
    await run.engine.start()
    try:
        run.engine.set_monitor(*monitor("buggy", targets.http()))
        await run.until(lambda: len(run.results) >= 2)
        ticker = run.engine._workers[("shop", "buggy")].ticker
        assert ticker is not None and (ticker._timer is not None or ticker.task is not None), "still scheduled"
    finally:
        await run.engine.close()
    assert "probe worker shop/buggy crashed" in caplog.text and "RuntimeError: a bug" in caplog.text
    assert run.value(names.PROBES_TOTAL, namespace="shop", monitor="buggy", result="success") == len(run.results)


async def test_url_change_updates_target_info_and_keeps_counters(run: Run, targets: Targets) -> None:
    spec, target = monitor("moving", targets.http())
    run.engine.set_monitor(spec, target)
    await run.until(lambda: run.results)
    other = targets.http()
    run.engine.set_monitor(spec, ResolvedTarget(other, "url", ""))
    text = generate_latest(run.registry).decode()
    assert f'url="{other}"' in text and f'url="{target.url}"' not in text
    assert run.value(names.PROBES_TOTAL, namespace="shop", monitor="moving", result="success") >= 1


async def test_concurrency_bound_holds(targets: Targets) -> None:
    r = Run(targets, max_concurrency=2)
    seen: list[int] = []
    async with r.engine:
        for i in range(6):
            r.engine.set_monitor(*monitor(f"h{i}", targets.http(hang), interval_ms=1000))
        for _ in range(40):
            seen.append(r.engine.metrics.in_flight)
            await asyncio.sleep(0.025)
    assert max(seen) == 2
    assert r.value(names.PROBES_IN_FLIGHT) == 0


async def test_engine_health_metrics_are_exported(run: Run, targets: Targets) -> None:
    run.engine.set_monitor(*monitor("ok", targets.http()))
    await run.until(lambda: len(run.results) >= 2)
    await asyncio.sleep(0.6)
    assert run.value(names.SCHEDULE_LAG_SECONDS + "_count") >= 2
    assert run.value(names.EVENT_LOOP_LAG_SECONDS + "_count") >= 1
    assert run.value(names.PROBES_SKIPPED_TOTAL) == 0
    assert run.value(names.PROBES_IN_FLIGHT) is not None
    tasks = run.value(names.ASYNCIO_TASKS)
    assert tasks is not None and 2 <= tasks < 20  # the monitor's worker, the lag watcher, the test itself


@pytest.mark.skipif(not shutil.which("promtool"), reason="promtool not installed (scripts/bootstrap.sh installs it)")
async def test_exposition_passes_promtool_check_metrics(run: Run, targets: Targets) -> None:
    run.engine.set_monitor(*monitor("ok", targets.http(), threshold_ms=250))
    run.engine.set_monitor(*monitor("bad", targets.http(status(500)), ns="other"))
    run.engine.set_monitor(*monitor("tls", targets.https(cert="wrong-host")))
    run.engine.set_monitor(*monitor("quoted", targets.http() + '/?q="x"\\y'))
    await run.until(lambda: {r.key for r in run.results} >= {("shop", "ok"), ("other", "bad"), ("shop", "tls")})
    server = MetricsServer(run.registry, "127.0.0.1", 0, render=run.engine.metrics.exposition)
    server.start()
    try:
        text = await asyncio.to_thread(lambda: urllib.request.urlopen(server.url, timeout=5).read())
        only = await asyncio.to_thread(lambda: urllib.request.urlopen(
            server.url + f"?name[]={names.PROBES_TOTAL}", timeout=5).read().decode())
    finally:
        server.stop()
    assert names.PROBES_TOTAL in only and names.TARGET_INFO not in only
    check = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, timeout=30)
    assert check.returncode == 0, check.stdout.decode() + check.stderr.decode()
    assert b"route_monitor_probes_total{" in text and b"# TYPE route_monitor_probe_duration_seconds histogram" in text


async def test_replaced_threshold_changes_the_bucket_set(run: Run, targets: Targets) -> None:
    spec, target = monitor("t", targets.http(), interval_ms=60_000, threshold_ms=300)
    run.engine.set_monitor(spec, target)
    lat = LatencyObjective(700, parse_percent("99", ""))
    run.engine.set_monitor(replace(spec, objective=replace(spec.objective, latency=lat)), target)
    labels = {"namespace": "shop", "monitor": "t"}
    assert run.value(names.PROBE_DURATION_SECONDS + "_bucket", **labels, le="0.7") == 0
    assert run.value(names.PROBE_DURATION_SECONDS + "_bucket", **labels, le="0.3") is None


async def test_set_monitors_yields_to_running_work_between_batches_and_sets_them_all(targets: Targets) -> None:
    """A restart burst (``set_monitors``) lets the event loop run between batches, so monitors
    already running are not held until thousands are set; every monitor ends up probed."""
    run = Run(targets)
    seen: list[int] = []

    async def running_work() -> None:  # stands for the probes already running
        while len(seen) < 100:
            seen.append(len(run.engine.keys()))
            await asyncio.sleep(0)

    async with run.engine:
        other = asyncio.create_task(running_work())
        await asyncio.sleep(0)
        await run.engine.set_monitors([monitor(f"m{i}", targets.http(), interval_ms=500) for i in range(10)],
                                      batch=3)
        other.cancel()
        assert {n for n in seen if 0 < n < 10} >= {3, 6, 9}, seen
        assert len(run.engine.keys()) == 10
        await run.until(lambda: {r.key[1] for r in run.results} == {f"m{i}" for i in range(10)})
