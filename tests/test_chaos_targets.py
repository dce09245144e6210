"""Chaos on the target side (issue 15): a hung server, a slowloris response, a 100 MB body, a
TLS handshake that stalls, a name that does not resolve, all probed at once beside healthy
monitors on one engine. Each bad probe ends within its timeout with its reason, the 100 MB body
is read only up to ``maxBodyBytes`` (and the probe succeeds), and the healthy monitors keep
their schedule.
"""

from __future__ import annotations

import asyncio
import random
import resource
from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry

from route_monitor.probe.engine import ProbeEngine
from route_monitor.probe.metrics import ProbeMetrics
from route_monitor.probe.result import FailureReason as R
from route_monitor.probe.result import ProbeResult
from route_monitor.resolve import ResolvedTarget
from route_monitor.spec import MonitorSpec, parse_routemonitor
from tests.support import servers
from tests.support.hostile import TRICKLE, Hostile, Script
from tests.test_bodyregex import LATE, p99

targets = servers.targets
pytestmark = pytest.mark.timeout(60)

TIMEOUT_S = 0.8
HEAD_100MB = b"HTTP/1.1 200 OK\r\nContent-Length: 104857600\r\n\r\n"


@pytest.fixture(scope="module")
def hostiles() -> Iterator[dict[str, Hostile]]:
    made = {name: Hostile() for name in ("slowloris", "huge", "stalled-tls")}
    yield made
    for h in made.values():
        h.close()


def spec(name: str, url: str) -> MonitorSpec:
    return parse_routemonitor({"metadata": {"name": name, "namespace": "chaos"},
                               "spec": {"target": {"url": url}, "slo": {"availability": "99"},
                                        "probe": {"interval": "1s", "timeout": "800ms", "warmup": "0s"}}})


async def test_bad_targets_fail_in_time_with_their_reason_and_others_keep_schedule(
        targets: servers.Targets, hostiles: dict[str, Hostile]) -> None:
    slowloris = hostiles["slowloris"].serve(Script((b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",), TRICKLE))
    huge = hostiles["huge"].serve(Script((HEAD_100MB,), "close", repeat=(b"x" * 65536, 1600)))
    stalled = hostiles["stalled-tls"].serve(Script((), "hang", read_request=False)).replace("http://", "https://")
    bad = {"hung": (targets.http(servers.hang), R.TIMEOUT), "slowloris": (slowloris, R.TIMEOUT),
           "stalled-tls": (stalled, R.CONNECTION_TIMEOUT),
           "no-dns": ("http://no-such-host.invalid/", R.DNS_ERROR)}
    good = targets.http()
    registry = CollectorRegistry()
    results: list[ProbeResult] = []
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    engine = ProbeEngine(metrics=ProbeMetrics(registry), rng=random.Random(1), first_probe_within=0.5,
                         loop_lag_every=0.05, on_result=results.append)
    async with engine:
        for name, (url, _) in bad.items():
            engine.set_monitor(spec(name, url), ResolvedTarget(url, "url", ""))
        engine.set_monitor(spec("huge-body", huge), ResolvedTarget(huge, "url", ""))
        for i in range(20):
            engine.set_monitor(spec(f"good-{i}", good), ResolvedTarget(good, "url", ""))
        await asyncio.sleep(5)
    by_name: dict[str, list[ProbeResult]] = {}
    for r in results:
        by_name.setdefault(r.key[1], []).append(r)
    for name, (_, reason) in bad.items():
        assert by_name.get(name), f"{name} was never probed"
        assert {r.reason for r in by_name[name]} == {reason}, (name, [r.detail for r in by_name[name]])
        assert max(r.duration_seconds for r in by_name[name]) < TIMEOUT_S + LATE, name
    assert by_name.get("huge-body") and all(r.success for r in by_name["huge-body"])
    # 1 MiB read per probe, not 100 MB: the process did not grow by the body's size
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss_before < 50 * 1024  # KiB
    assert all(r.success for i in range(20) for r in by_name[f"good-{i}"])
    assert sum(len(by_name[f"good-{i}"]) for i in range(20)) >= 20 * 4
    assert p99(registry, "route_monitor_probe_schedule_lag_seconds") <= 0.25  # see test_bodyregex on the bound
