"""The loop that reads each owned monitor's SLO back from Prometheus (``--prometheus-url``).

Every ``interval`` (5 minutes by default) one pass runs a fixed set of instant queries for all
monitors at once (``alert_rules.readback``: failed and all probes over the period, one pair per
distinct SLO period and, for monitors of several vantages, their reachability over it, the
recorded 1h error ratio and, for monitors of several vantages, the 1h reachability ratio), one
after another, so the load on
Prometheus does not grow with the number of monitors' passes. Each owned monitor's
:class:`~route_monitor.slo.state.SloStatus` is advanced; a monitor whose status changed
beyond the tolerance is handed to ``on_change`` (the supervisor enqueues a reconcile, which
writes the status through the rate-limited status path). A failed pass keeps the last values
with reason ``SLOUnknown``; probing never waits on any of this.

``route_monitor_slo_budget_remaining_ratio{namespace, monitor}`` exports what was read, for
gating tools that read metrics (Argo Rollouts' AnalysisTemplate).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Protocol

from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import GaugeMetricFamily, Metric

from alert_rules import durations, names, readback
from alert_rules.model import InvalidSpec, Objective
from route_monitor.operator.settings import OperatorSettings
from route_monitor.operator.supervisor import Supervisor
from route_monitor.operator.world import Key
from route_monitor.slo import state as slo_state
from route_monitor.slo.promapi import PrometheusAPI, PrometheusError, Sample
from route_monitor.spec.monitor import parse_routemonitor

log = logging.getLogger(__name__)
DEFAULT_INTERVAL = 300.0


class Querier(Protocol):
    async def query(self, expr: str, *, at: float | None = None) -> list[Sample]: ...


def _always(_: Key) -> bool:
    return True


def objectives(monitors: Mapping[Key, Mapping[str, object]]) -> dict[Key, Objective]:
    """The objective of every RouteMonitor whose spec parses (the others have no SLO to read)."""
    out: dict[Key, Objective] = {}
    for key, body in monitors.items():
        try:
            out[key] = parse_routemonitor(body).objective
        except InvalidSpec:
            continue
    return out


def _by_monitor(samples: list[Sample]) -> dict[Key, float]:
    return {(s.labels.get(names.LABEL_NAMESPACE, ""), s.labels.get(names.LABEL_MONITOR, "")): s.value
            for s in samples}


_Sums = tuple[dict[Key, float], dict[Key, float], dict[Key, float]]
"""Of one period, by monitor: failed probes, all probes, and (several vantages) the error ratio of
every probe of every location."""


class SloLoop:
    """Reads the SLOs of the monitors ``owns`` says are this replica's; ``states`` holds the last status of each."""

    def __init__(self, *, api: Querier, monitors: Callable[[], Mapping[Key, Objective]],
                 on_change: Callable[[Key], None], registry: CollectorRegistry,
                 interval: float = DEFAULT_INTERVAL, owns: Callable[[Key], bool] = _always,
                 clock: Callable[[], float] = time.time,
                 states: dict[Key, slo_state.SloStatus] | None = None) -> None:
        self._api, self._monitors, self._on_change = api, monitors, on_change
        self._interval, self._owns, self._clock = interval, owns, clock
        self.states: dict[Key, slo_state.SloStatus] = {} if states is None else states
        """Shared with the reconciler, which reads each monitor's last status for ``status.slo``."""
        self.read_errors = Counter(names.SLO_READ_ERRORS_TOTAL, "Passes reading SLOs from Prometheus that failed "
                                   "(last values kept, BudgetExhausted reason SLOUnknown)", registry=registry)
        registry.register(_BudgetCollector(self))

    async def run(self) -> None:
        while True:
            try:
                await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("reading SLOs from Prometheus failed; next pass in %.0fs", self._interval)
            await asyncio.sleep(self._interval)

    async def _read(self, periods: Iterable[int]) -> tuple[dict[int, _Sums], dict[Key, float], dict[Key, float]]:
        """:data:`_Sums` for each period (seconds), the 1h error ratio by monitor and the 1h
        reachability ratio by monitor (monitors of several vantages only)."""
        sums = {}
        for seconds in sorted(set(periods)):
            failed = _by_monitor(await self._api.query(readback.failed_over_period(seconds)))
            probes = _by_monitor(await self._api.query(readback.probes_over_period(seconds)))
            reach = _by_monitor(await self._api.query(readback.reachability_over_period(seconds)))
            sums[seconds] = (failed, probes, reach)
        ratio_1h = _by_monitor(await self._api.query(readback.error_ratio_1h()))
        return sums, ratio_1h, _by_monitor(await self._api.query(readback.reachability_ratio_1h()))

    async def run_once(self) -> None:
        """One pass: query, advance every owned monitor, report the changed ones."""
        owned = {k: o for k, o in self._monitors().items() if self._owns(k)}
        for gone in set(self.states) - set(owned):
            del self.states[gone]
        if not owned:
            return
        error: str | None = None
        try:
            sums, ratio_1h, reach_1h = await self._read(o.period_ms // 1000 for o in owned.values())
        except PrometheusError as e:
            error, sums, ratio_1h, reach_1h = str(e), {}, {}, {}
            self.read_errors.inc()
            log.warning("cannot read SLOs from Prometheus (last values kept): %s", e)
        now = self._clock()
        for key, objective in owned.items():
            failed, probes, reach = sums.get(objective.period_ms // 1000, ({}, {}, {}))
            reading = (slo_state.Reading(failed.get(key, 0.0), probes[key], ratio_1h.get(key), reach_1h.get(key),
                                         reach.get(key))
                       if key in probes else None)
            before = self.states.get(key)
            after = slo_state.advance(before, window=durations.format_ms(objective.period_ms),
                                      objective=objective.availability, reading=reading, now=now, error=error)
            if after is not before:
                self.states[key] = after
                self._on_change(key)


class _BudgetCollector:
    def __init__(self, loop: SloLoop) -> None:
        self._loop = loop

    def _family(self) -> GaugeMetricFamily:
        return GaugeMetricFamily(names.SLO_BUDGET_REMAINING_RATIO, "Share of the SLO period's error budget left, "
                                 "as last read from Prometheus (1 untouched, 0 or less spent)",
                                 labels=list(names.IDENTITY_LABELS))

    def describe(self) -> Iterable[Metric]:
        return [self._family()]

    def collect(self) -> Iterable[Metric]:
        family = self._family()
        for (namespace, monitor), s in self._loop.states.copy().items():  # a scrape runs in another thread
            if s.values is not None:
                family.add_metric([namespace, monitor], s.values.budget_remaining)
        yield family


class Reader:
    """The loop as the operator runs it: started after the first reconciles, stopped with the rest."""

    def __init__(self, loop: SloLoop | None = None, api: PrometheusAPI | None = None) -> None:
        self.loop, self._api = loop, api
        self._task: asyncio.Task[None] | None = None

    def begin(self) -> None:
        if self.loop is not None and self._task is None:
            self._task = asyncio.create_task(self.loop.run(), name="slo reader")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._api is not None:
            await self._api.aclose()


def start(settings: OperatorSettings, supervisor: Supervisor, registry: CollectorRegistry,
          states: dict[Key, slo_state.SloStatus]) -> Reader:
    """Wire the loop to the supervisor: only the monitors this replica owns (its shard, read at
    every pass, so a monitor moving to another replica is left to it), their statuses kept in
    ``states`` (which the supervisor's reconciler reads); nothing without ``--prometheus-url``."""
    if settings.prometheus is None:
        return Reader()
    api = PrometheusAPI(settings.prometheus)
    loop = SloLoop(api=api, monitors=lambda: objectives(supervisor.world.monitors), on_change=supervisor.enqueue,
                   registry=registry, interval=settings.slo_interval, owns=lambda key: supervisor.shard.owns(key),
                   states=states)
    log.info("reading SLOs from %s every %.0fs", settings.prometheus.url, settings.slo_interval)
    return Reader(loop, api)
