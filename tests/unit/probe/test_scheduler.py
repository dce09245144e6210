"""Scheduling on fake time (looptime): phases, drift-free ticks, skipped overdue runs, guards.

Covers: the per-monitor phase is stable and spreads monitors over the interval; ticks stay on
``offset + k * interval`` however long each run takes; a run that overruns its interval skips
the missed ticks and counts them instead of queueing them; many monitors under a concurrency
bound keep their interval; a crashing task is restarted and cancellation propagates.
"""

from __future__ import annotations

import asyncio
import itertools
import random
from collections import Counter
from dataclasses import replace

import pytest
from prometheus_client import CollectorRegistry

from alert_rules.model import Objective, parse_percent
from route_monitor.probe.engine import ProbeEngine
from route_monitor.probe.metrics import ProbeMetrics
from route_monitor.probe.prober import ProbeRequest
from route_monitor.probe.result import ProbeResult
from route_monitor.probe.scheduler import Schedule, Ticker, guard, hash_phase
from route_monitor.spec.monitor import MonitorSpec, ProbeSettings, UrlTarget
from route_monitor.targets.resolve import ResolvedTarget

pytestmark = [pytest.mark.timeout(10)]


@pytest.mark.parametrize(("offset", "now", "expected"), [
    pytest.param(3.0, 0.0, 3.0, id="before-the-first-phase"),
    pytest.param(3.0, 3.0, 3.0, id="exactly-on-a-tick"),
    pytest.param(3.0, 3.1, 13.0, id="just-after-a-tick-waits-a-whole-interval"),
    pytest.param(0.0, 25.0, 30.0, id="zero-phase"),
])
def test_first_tick(offset: float, now: float, expected: float) -> None:
    assert Schedule(10.0, offset).first_tick(now) == expected


@pytest.mark.parametrize(("tick", "now", "expected"), [
    pytest.param(10.0, 14.9, (10.0, 0), id="late-by-less-than-half-an-interval-runs-now"),
    pytest.param(10.0, 15.0, (20.0, 1), id="half-an-interval-late-waits-for-the-next-tick"),
    pytest.param(10.0, 20.0, (20.0, 1), id="a-whole-interval-late-runs-on-the-next-tick"),
    pytest.param(10.0, 45.5, (50.0, 4), id="three-and-a-half-intervals-late-skips-four"),
    pytest.param(10.0, 9.0, (10.0, 0), id="early-is-never-skipped"),
])
def test_catch_up(tick: float, now: float, expected: tuple[float, int]) -> None:
    assert Schedule(10.0, 0.0).catch_up(tick, now) == expected


def test_phase_is_stable_and_spreads_monitors() -> None:
    assert hash_phase(("shop", "checkout")) == hash_phase(("shop", "checkout"))  # crc32: same in every process
    offsets = [Schedule.for_monitor(("ns", f"m{i}"), 30.0).offset for i in range(3000)]
    assert all(0 <= o < 30 for o in offsets)
    per_second = Counter(int(o) for o in offsets)
    assert len(per_second) == 30 and max(per_second.values()) < 3 * 3000 / 30


def test_jitter_is_small_and_inside_the_interval() -> None:
    base = Schedule.for_monitor(("ns", "m"), 30.0).offset
    jittered = Schedule.for_monitor(("ns", "m"), 30.0, jitter=0.4).offset
    assert jittered == pytest.approx((base + 0.4) % 30)


@pytest.mark.looptime
@pytest.mark.parametrize("run_time", [0.0, 0.3, 0.99], ids=["instant", "30pct", "99pct"])
async def test_ticks_do_not_drift(run_time: float) -> None:
    loop = asyncio.get_running_loop()
    starts: list[float] = []
    skipped: list[int] = []

    async def run_once(tick: float) -> None:
        starts.append(loop.time())
        await asyncio.sleep(run_time)

    ticker = Ticker(Schedule(1.0, 0.25), run_once, on_skip=skipped.append)
    await asyncio.sleep(100.1)
    ticker.stop()
    assert len(starts) == 100 and not skipped
    assert all(s == pytest.approx(0.25 + i + round(starts[0] - 0.25), abs=1e-6) for i, s in enumerate(starts))


@pytest.mark.looptime
async def test_overdue_runs_are_skipped_not_queued() -> None:
    loop = asyncio.get_running_loop()
    starts: list[float] = []
    skipped: list[int] = []

    async def run_once(tick: float) -> None:
        starts.append(loop.time())
        await asyncio.sleep(2.5)  # each run overruns 1s interval

    ticker = Ticker(Schedule(1.0, 0.0), run_once, on_skip=skipped.append)
    await asyncio.sleep(30.5)
    ticker.stop()
    assert all(s == pytest.approx(round(s), abs=1e-6) for s in starts), "runs stay on the tick grid"
    assert all(b - a == pytest.approx(3.0) for a, b in itertools.pairwise(starts))
    assert sum(skipped) == pytest.approx(2 * len(starts), abs=2)


@pytest.mark.looptime
async def test_guard_restarts_a_crashed_task_and_propagates_cancellation() -> None:
    runs: list[float] = []

    async def crashy() -> None:
        runs.append(asyncio.get_running_loop().time())
        raise RuntimeError("boom")

    task = asyncio.create_task(guard("crashy", crashy, backoff=1.0))
    await asyncio.sleep(3.5)
    assert len(runs) == 4
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


class SlowFakeProber:
    """Takes ``seconds`` of (fake) time per probe and always succeeds."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.starts: dict[tuple[str, str], list[float]] = {}

    def request(self, key: tuple[str, str], url: str, settings: ProbeSettings,
                credentials: object = None) -> ProbeRequest:
        return ProbeRequest.build(key, url, settings)

    async def probe(self, req: ProbeRequest) -> ProbeResult:
        loop = asyncio.get_running_loop()
        self.starts.setdefault(req.key, []).append(loop.time())
        await asyncio.sleep(self.seconds)
        return ProbeResult(req.key, req.url, 0.0, True, None, self.seconds, 200, "ok")


def spec(i: int, interval_ms: int = 10_000) -> MonitorSpec:
    return MonitorSpec("load", f"m{i}", UrlTarget("http://127.0.0.1:9/"),
                       probe=ProbeSettings(interval_ms=interval_ms, timeout_ms=interval_ms // 2),
                       objective=Objective(availability=parse_percent("99", "")))


@pytest.mark.looptime
@pytest.mark.timeout(30)  # fake time, but a few thousand fake probes still cost real CPU
async def test_many_monitors_under_a_concurrency_bound_keep_their_interval() -> None:
    registry = CollectorRegistry()
    prober = SlowFakeProber(0.05)
    engine = ProbeEngine(metrics=ProbeMetrics(registry), max_concurrency=100, prober=prober,  # type: ignore[arg-type]
                         rng=random.Random(1))
    async with engine:
        for i in range(300):
            engine.set_monitor(spec(i), ResolvedTarget("http://127.0.0.1:9/", "url", ""))
        await asyncio.sleep(40.01)
    starts = prober.starts
    assert len(starts) == 300
    for times in starts.values():
        # the first probe may come early (a starting worker probes within 5 s), then the grid
        assert 5.0 - 1e-6 <= times[1] - times[0] <= 15.0 + 1e-6
        gaps = {round(b - a, 3) for a, b in itertools.pairwise(times[1:])}
        assert gaps == {10.0}
    # 300 monitors / 10 s at 50 ms each needs 1.5 concurrent probes: nobody waited
    assert registry.get_sample_value("route_monitor_probe_schedule_lag_seconds_bucket", {"le": "0.001"}) == \
        registry.get_sample_value("route_monitor_probe_schedule_lag_seconds_count")
    assert registry.get_sample_value("route_monitor_probes_skipped_total") == 0


@pytest.mark.looptime
@pytest.mark.timeout(30)
async def test_saturated_concurrency_shows_as_lag_and_skips() -> None:
    registry = CollectorRegistry()
    prober = SlowFakeProber(1.0)
    engine = ProbeEngine(metrics=ProbeMetrics(registry), max_concurrency=5, prober=prober,  # type: ignore[arg-type]
                         rng=random.Random(1))
    async with engine:
        for i in range(100):  # needs 10 probe-seconds per second, only 5 slots
            engine.set_monitor(spec(i, 10_000), ResolvedTarget("http://127.0.0.1:9/", "url", ""))
        await asyncio.sleep(60)
    assert registry.get_sample_value("route_monitor_probes_skipped_total") > 0
    assert registry.get_sample_value("route_monitor_probe_schedule_lag_seconds_sum") > 0
    assert sum(map(len, prober.starts.values())) == pytest.approx(5 * 60, rel=0.05)


@pytest.mark.looptime
async def test_changing_one_monitor_restarts_only_its_worker() -> None:
    registry = CollectorRegistry()
    engine = ProbeEngine(metrics=ProbeMetrics(registry), prober=SlowFakeProber(0.01))  # type: ignore[arg-type]
    target = ResolvedTarget("http://127.0.0.1:9/", "url", "")
    async with engine:
        engine.set_monitor(spec(1), target)
        engine.set_monitor(spec(2), target)
        tickers = {k: w.ticker for k, w in engine._workers.items()}
        engine.set_monitor(spec(1), target)  # identical: no-op
        assert engine._workers[("load", "m1")].ticker is tickers[("load", "m1")]
        engine.set_monitor(replace(spec(1), probe=ProbeSettings(interval_ms=20_000, timeout_ms=1000)), target)
        await asyncio.sleep(0)
        assert engine._workers[("load", "m1")].ticker is not tickers[("load", "m1")]
        old = tickers[("load", "m1")]
        assert old is not None and old._timer is None and (old.task is None or old.task.cancelling()), "stopped"
        assert engine._workers[("load", "m2")].ticker is tickers[("load", "m2")]


@pytest.mark.looptime
@pytest.mark.parametrize(("interval", "offset", "first_within", "expected_first"), [
    pytest.param(300.0, 150.0, 10.0, 5.0, id="5m-interval-probes-within-10s-at-its-phase"),
    pytest.param(30.0, 29.0, 10.0, 9.6667, id="30s-late-slot-pulled-into-the-window"),
    pytest.param(30.0, 4.0, 10.0, 4.0, id="slot-inside-the-window-runs-on-the-grid"),
    pytest.param(300.0, 150.0, None, 150.0, id="grid-only-without-first-within"),
])
async def test_a_starting_worker_probes_within_first_within(
        interval: float, offset: float, first_within: float | None, expected_first: float) -> None:
    loop = asyncio.get_running_loop()
    start = loop.time()
    starts: list[float] = []

    async def run_once(tick: float) -> None:
        starts.append(loop.time() - start)

    ticker = Ticker(Schedule(interval, (start + offset) % interval), run_once, on_skip=lambda n: None,
                    first_within=first_within)
    await asyncio.sleep(3 * interval + 1)
    ticker.stop()
    assert starts[0] == pytest.approx(expected_first, abs=1e-3)
    grid = [s for s in starts[1:]]
    assert all((s - offset) % interval == pytest.approx(0, abs=1e-6) or
               (s - offset) % interval == pytest.approx(interval, abs=1e-6) for s in grid), "then on the grid"
    assert all(b - a >= interval / 2 - 1e-6 for a, b in itertools.pairwise(starts)), "no burst after the early probe"
