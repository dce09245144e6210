"""The probe engine: one schedule per monitor (a timer while idle, a task while probing), a global
concurrency bound.

``set_monitor`` adds or replaces one monitor (an identical spec and target is a no-op) and
restarts only that monitor's schedule; ``remove_monitor`` stops it at once (a probe in progress stops at its next
await, well within a second) and removes its series. Each result passes the
monitor's :class:`~route_monitor.probe.gate.Gate` (Contract 9: counted, or excluded for a
maintenance window, a pause or warm-up), then, if it counts but failed for a network reason, the
member's :class:`~route_monitor.probe.canary.Canary` (Contract 11: excluded as ``blind`` while the
member is blind, its canary unreachable too), then goes to the metrics and, if given, to ``on_result`` (the
operator's status, the demo's live view) with ``excluded`` set. The engine runs the canary's
periodic checks while it runs.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import gc
import logging
import random
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from alert_rules import params
from route_monitor.probe.canary import Canary, unreachable
from route_monitor.probe.gate import Gate, Policy
from route_monitor.probe.metrics import MonitorSeries, ProbeMetrics, TargetInfo
from route_monitor.probe.prober import Prober, ProbeRequest
from route_monitor.probe.result import Exclusion, ProbeResult
from route_monitor.probe.scheduler import Schedule, Ticker, default_jitter, guard, watch_loop_lag
from route_monitor.probe.tls.contexts import TLSContexts
from route_monitor.spec.monitor import MonitorSpec
from route_monitor.spec.protocol import discovered, url_for

if TYPE_CHECKING:
    from route_monitor.targets.resolve import ResolvedTarget

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Worker:
    spec: MonitorSpec
    target: ResolvedTarget
    request: ProbeRequest
    series: MonitorSeries
    schedule: Schedule
    gate: Gate
    ticker: Ticker | None = None


_CRASH_BACKOFF = 1.0
SET_BATCH = 200
""":meth:`ProbeEngine.set_monitors` yields to the event loop after this many monitors (~10-20 ms
of work on the shared 2-core machine): a restart burst of 5,000 must not hold running probes."""


def settle_heap(*, full: bool = True) -> None:
    """Collect once, then freeze what is alive (monitors, workers, parsed specs) out of the
    garbage collector's view. For the process owner to call after loading monitors: with 5,000
    monitors a full (generation 2) collection otherwise walks ~200,000 long-lived objects and
    stalls the event loop for ~0.3 s a few times a minute, which shows up as schedule lag.
    ``full=False`` after monitors were only added (nothing frozen became garbage): only the young
    generations are collected (recent probes' garbage) and the rest frozen as it is, so a burst of
    5,000 new monitors does not stall the loop for a walk over all of them (60 ms -> ~1 ms,
    ``benchmarks/burst.py``); the next full settle (a reload that removes or changes monitors)
    collects whatever cyclic garbage got frozen with them."""
    if full:
        gc.unfreeze()
        gc.collect()
    else:
        gc.collect(1)
    gc.freeze()


class ProbeEngine:
    def __init__(self, *, metrics: ProbeMetrics, max_concurrency: int = 500,
                 on_result: Callable[[ProbeResult], None] | None = None,
                 clock: Callable[[], float] | None = None, prober: Prober | None = None,
                 tls: TLSContexts | None = None, rng: random.Random | None = None,
                 max_jitter_seconds: float = 1.0, loop_lag_every: float = 0.5,
                 first_probe_within: float | None = 5.0, wall_clock: Callable[[], float] = time.time,
                 canary: Canary | None = None) -> None:
        self.metrics = metrics
        self.canary = canary
        """Judges network failures (``blind``); None: every result the gate counts, counts."""
        self._wall = wall_clock
        """Wall-clock time, for warm-up starts (a new monitor without a creation time, a new URL)."""
        self.prober = prober if prober is not None else Prober(tls=tls)
        self._on_result = on_result
        self._clock = clock
        self._rng = rng if rng is not None else random.Random()
        self._max_jitter = max_jitter_seconds
        self._first_within = first_probe_within
        """A starting worker probes within this many seconds, not only at its grid slot (None: grid only)."""
        self._loop_lag_every = loop_lag_every
        self._semaphore = asyncio.Semaphore(max_concurrency)
        self._workers: dict[tuple[str, str], _Worker] = {}
        self._started = False
        self._lag_task: asyncio.Task[None] | None = None
        self._canary_task: asyncio.Task[None] | None = None
        self._run_bound, self._on_skip = self._run_once, metrics.skipped.inc
        """Bound once, not per worker (each worker's task holds them)."""

    async def start(self) -> None:
        self._started = True
        self._lag_task = asyncio.create_task(guard("event-loop lag watcher", lambda: watch_loop_lag(
            self.metrics.event_loop_lag.observe, every=self._loop_lag_every)))
        self.metrics.count_tasks_of(asyncio.get_running_loop())
        if self.canary is not None:
            self._canary_task = asyncio.create_task(guard("canary", self.canary.run))
        for worker in self._workers.values():
            self._launch(worker)

    async def close(self) -> None:
        self._started = False
        tasks = [w.ticker.task for w in self._workers.values() if w.ticker and w.ticker.task]
        for w in self._workers.values():
            if w.ticker is not None:
                w.ticker.stop()
                w.ticker = None
        for task in (self._lag_task, self._canary_task):
            if task is not None:
                task.cancel()
                tasks.append(task)
        await asyncio.gather(*tasks, return_exceptions=True)

    async def __aenter__(self) -> ProbeEngine:
        await self.start()
        return self

    async def __aexit__(self, et: type[BaseException] | None, e: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    def keys(self) -> set[tuple[str, str]]:
        return set(self._workers)

    def set_monitor(self, spec: MonitorSpec, target: ResolvedTarget) -> None:
        key = spec.key
        old = self._workers.get(key)
        if old is not None and old.spec == spec and old.target == target:
            return
        if old is not None and old.ticker is not None:
            old.ticker.stop()
        latency = spec.objective.latency
        settings = spec.probe
        if target.protocol is not None and not settings.protocol.explicit:
            settings = dataclasses.replace(settings, protocol=discovered(settings.protocol, target.protocol[0]))
        url = url_for(target.url, settings.protocol)
        series = self.metrics.add(key, TargetInfo(url, target.kind, target.name, target.paths),
                                  latency.threshold_seconds if latency else None,
                                  params.values(spec.objective, spec.probe.interval_ms))
        interval = spec.probe.interval_ms / 1000
        worker = _Worker(spec, target, self.prober.request(key, url, settings, target.credentials), series,
                         Schedule.for_monitor(key, interval, jitter=default_jitter(interval, self._rng,
                                                                                    self._max_jitter)),
                         self._gate(spec, target, old))
        series.warming_up = int(worker.gate.warm_until > self._wall())
        self._workers[key] = worker
        if self._started:
            self._launch(worker)

    async def set_monitors(self, monitors: Iterable[tuple[MonitorSpec, ResolvedTarget]], *,
                           batch: int = SET_BATCH) -> None:
        """:meth:`set_monitor` for each, yielding to the event loop after every ``batch``: the
        monitors already running keep their schedule while thousands are set (a restart, a
        reload, a takeover), and the new workers' first steps run batch by batch."""
        for i, (spec, target) in enumerate(monitors, 1):
            self.set_monitor(spec, target)
            if i % batch == 0:
                await asyncio.sleep(0)

    def _gate(self, spec: MonitorSpec, target: ResolvedTarget, old: _Worker | None) -> Gate:
        """Contract 9: warm-up runs from the monitor's creation (or from when this engine first
        sees it, when no creation time is known) and restarts when its URL changes; other
        changes keep the warm-up state."""
        policy = Policy(spec.maintenance, spec.paused, spec.probe.warmup_ms / 1000)
        if old is not None and old.target.url == target.url:
            return old.gate if old.gate.policy == policy else old.gate.with_policy(policy)
        since = spec.created if old is None and spec.created is not None else self._wall()
        return Gate(policy, warming_since=since if policy.warmup_seconds > 0 else None)

    def remove_monitor(self, key: tuple[str, str]) -> None:
        worker = self._workers.pop(key, None)
        if worker is not None and worker.ticker is not None:
            worker.ticker.stop()
        self.metrics.remove(key)

    def _launch(self, worker: _Worker) -> None:
        """A timer per idle monitor, a task only while it probes (``benchmarks/RESULTS-operator.md``,
        memory per monitor); :meth:`_run_once` keeps a failing probe from ending it."""
        worker.ticker = Ticker(worker.schedule, functools.partial(self._run_bound, worker), on_skip=self._on_skip,
                               clock=self._clock, first_within=self._first_within)

    async def _run_once(self, worker: _Worker, tick: float) -> None:
        try:
            now = self._clock or asyncio.get_running_loop().time
            canary = self.canary
            started = canary.now() if canary is not None else 0.0
            async with self._semaphore:
                self.metrics.schedule_lag.observe(max(0.0, now() - tick))
                self.metrics.in_flight += 1
                try:
                    result = await self.prober.probe(worker.request)
                finally:
                    self.metrics.in_flight -= 1
            why = worker.gate.decide(result.timestamp, result.success)
            worker.series.warming_up = 1 if worker.gate.warm_until else 0
            if why is None and canary is not None and unreachable(result) and await canary.blind_since(started):
                why = Exclusion.BLIND
            if why is None:
                worker.series.record(result)
                worker.series.maintenance = 0
            else:
                worker.series.record_excluded(result, why)
                worker.series.maintenance = int(why in (Exclusion.MAINTENANCE, Exclusion.PAUSED))
                result = dataclasses.replace(result, excluded=why)
            if self._on_result is not None:
                try:
                    self._on_result(result)
                except Exception:
                    log.exception("on_result callback failed for %s/%s", *worker.spec.key)
        except Exception:  # a bug, never a probe's failure: log it, and go on at the next tick
            log.exception("probe worker %s/%s crashed; going on in %.1fs", *worker.spec.key, _CRASH_BACKOFF)
            await asyncio.sleep(_CRASH_BACKOFF)
