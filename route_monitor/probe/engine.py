"""The probe engine: one guarded asyncio worker per monitor, a global concurrency bound.

``set_monitor`` adds or replaces one monitor (an identical spec and target is a no-op) and
restarts only that monitor's worker; ``remove_monitor`` cancels its worker at once (it stops at
its next await, well within a second) and removes its series. Results go to the metrics and,
if given, to ``on_result`` (the operator's status, the demo's live view).
"""

from __future__ import annotations

import asyncio
import gc
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING

from route_monitor.probe.metrics import MonitorSeries, ProbeMetrics, TargetInfo
from route_monitor.probe.prober import Prober, ProbeRequest
from route_monitor.probe.result import ProbeResult
from route_monitor.probe.scheduler import Schedule, default_jitter, guard, run_schedule, watch_loop_lag
from route_monitor.probe.tls import TLSContexts
from route_monitor.spec import MonitorSpec

if TYPE_CHECKING:
    from route_monitor.resolve import ResolvedTarget

log = logging.getLogger(__name__)


@dataclass
class _Worker:
    spec: MonitorSpec
    target: ResolvedTarget
    request: ProbeRequest
    series: MonitorSeries
    schedule: Schedule
    task: asyncio.Task[None] | None = None


def settle_heap() -> None:
    """Collect once, then freeze what is alive (monitors, workers, parsed specs) out of the
    garbage collector's view. For the process owner to call after loading monitors: with 5,000
    monitors a full (generation 2) collection otherwise walks ~200,000 long-lived objects and
    stalls the event loop for ~0.3 s a few times a minute, which shows up as schedule lag."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class ProbeEngine:
    def __init__(self, *, metrics: ProbeMetrics, max_concurrency: int = 500,
                 on_result: Callable[[ProbeResult], None] | None = None,
                 clock: Callable[[], float] | None = None, prober: Prober | None = None,
                 tls: TLSContexts | None = None, rng: random.Random | None = None,
                 max_jitter_seconds: float = 1.0, loop_lag_every: float = 0.5,
                 first_probe_within: float | None = 5.0) -> None:
        self.metrics = metrics
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

    async def start(self) -> None:
        self._started = True
        self._lag_task = asyncio.create_task(guard("event-loop lag watcher", lambda: watch_loop_lag(
            self.metrics.event_loop_lag.observe, every=self._loop_lag_every)))
        for worker in self._workers.values():
            self._launch(worker)

    async def close(self) -> None:
        self._started = False
        tasks = [w.task for w in self._workers.values() if w.task] + ([self._lag_task] if self._lag_task else [])
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for w in self._workers.values():
            w.task = None

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
        if old is not None and old.task is not None:
            old.task.cancel()
        latency = spec.objective.latency
        series = self.metrics.add(key, TargetInfo(target.url, target.kind, target.name),
                                  latency.threshold_seconds if latency else None)
        interval = spec.probe.interval_ms / 1000
        worker = _Worker(spec, target, self.prober.request(key, target.url, spec.probe, target.credentials), series,
                         Schedule.for_monitor(key, interval, jitter=default_jitter(interval, self._rng,
                                                                                    self._max_jitter)))
        self._workers[key] = worker
        if self._started:
            self._launch(worker)

    def remove_monitor(self, key: tuple[str, str]) -> None:
        worker = self._workers.pop(key, None)
        if worker is not None and worker.task is not None:
            worker.task.cancel()
        self.metrics.remove(key)

    def _launch(self, worker: _Worker) -> None:
        name = f"probe worker {worker.spec.namespace}/{worker.spec.name}"
        worker.task = asyncio.create_task(guard(name, lambda: run_schedule(
            worker.schedule, lambda tick: self._run_once(worker, tick),
            on_skip=self.metrics.skipped.inc, clock=self._clock,
            first_within=self._first_within)), name=name)

    async def _run_once(self, worker: _Worker, tick: float) -> None:
        now = self._clock or asyncio.get_running_loop().time
        async with self._semaphore:
            self.metrics.schedule_lag.observe(max(0.0, now() - tick))
            self.metrics.in_flight += 1
            try:
                result = await self.prober.probe(worker.request)
            finally:
                self.metrics.in_flight -= 1
        worker.series.record(result)
        if self._on_result is not None:
            try:
                self._on_result(result)
            except Exception:
                log.exception("on_result callback failed for %s/%s", *worker.spec.key)
