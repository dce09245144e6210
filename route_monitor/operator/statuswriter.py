"""Writing a RouteMonitor's status: only when it changes, within bounds, never per probe.

- A status is patched only when its significant part changes (``status.significant``).
- A change of the probe outcome alone is written at most every ``status_min_interval`` seconds per
  monitor (a later reconcile is scheduled for the rest); all status writes share one global rate
  (``status_writes_per_second``, a token bucket).
- A new monitor that is probing and has no result yet waits up to ``first_status_within``
  seconds for its first result, so the result rides on the first write (one write, not two).
- One log line and one Warning event when a monitor's Ready condition changes, not per write.

What was written is kept only until the watch brings it back (then the world's copy is the one).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from route_monitor.kube.apierrors import status_code
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.kube.writer import KubeWriter
from route_monitor.logs import monitor_extra
from route_monitor.operator import plan, status
from route_monitor.operator.settings import OperatorSettings
from route_monitor.operator.world import Key, World
from route_monitor.probe.result import ProbeResult
from route_monitor.targets.resolve import ResolvedTarget

log = logging.getLogger("route_monitor.operator.reconcile")


def _ready(status_: Mapping[str, Any] | None) -> tuple[str, str, str] | None:
    for c in (status_ or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return (str(c.get("status")), str(c.get("reason")), str(c.get("message")))
    return None


def _log_ready_transition(key: Key, before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> None:
    """One line when a monitor's Ready condition changes (status or reason), never per probe."""
    old, new = _ready(before), _ready(after)
    if new is not None and (old is None or old[:2] != new[:2]):
        log.info("%s/%s Ready=%s (%s): %s", *key, *new, extra=monitor_extra(key))


def _result_text(obs: status.Observed) -> str:
    """The probe result a status was computed with, for the debug lines: ``success``,
    ``failure/refused/warmup``, or ``none yet``."""
    outcome = status.result_outcome(obs.last_result)
    return "/".join(part for part in outcome if part) if outcome else "none yet"


class TokenBucket:
    """At most ``rate`` acquisitions per second on average, bursts of up to ``rate``."""

    def __init__(self, rate: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._rate, self._clock = rate, clock
        self._tokens, self._at = rate, clock()

    async def acquire(self) -> None:
        while True:
            now = self._clock()
            self._tokens = min(self._rate, self._tokens + (now - self._at) * self._rate)
            self._at = now
            if self._tokens >= 1 - 1e-9:  # float sums of elapsed time fall just short of 1
                self._tokens -= 1
                return
            await asyncio.sleep(max((1 - self._tokens) / self._rate, 0.001))


class StatusWriter:
    def __init__(self, *, world: World, settings: OperatorSettings, kube: KubeWriter, metrics: OperatorMetrics,
                 results: Mapping[Key, ProbeResult], schedule: Callable[[Key, float], None],
                 clock: Callable[[], float], unschedule: Callable[[Key], None] = lambda _: None) -> None:
        self.world, self.settings, self.kube, self.metrics = world, settings, kube, metrics
        self._results, self._schedule, self._unschedule, self._clock = results, schedule, unschedule, clock
        self.written: dict[Key, dict[str, Any]] = {}
        self._written_at: dict[Key, float] = {}
        self._first_wait: dict[Key, float] = {}
        """New monitors whose first status waits for their first probe result: since when."""
        self._held: dict[Key, status.Observed] = {}
        """What those monitors' first status will say, but for the result (:meth:`held`)."""
        self._warned: dict[Key, tuple[str, str]] = {}
        self._bucket = TokenBucket(settings.status_writes_per_second)

    def forget(self, key: Key) -> None:
        for cache in (self.written, self._written_at, self._first_wait, self._held, self._warned):
            cache.pop(key, None)

    def seen(self, key: Key) -> None:
        """The watch brought the monitor back with the status last written: keep that one copy (the
        world's), not a second one here (a few KiB per monitor)."""
        written = self.written.get(key)
        body = self.world.monitors.get(key)
        if written is not None and body is not None and \
                status.significant(body.get("status")) == status.significant(written):
            del self.written[key]

    def current(self, key: Key, body: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """``key``'s status as last written: what this replica wrote, until the watch brings it
        back in ``body``."""
        written: Mapping[str, Any] | None = self.written.get(key) or body.get("status")
        return written

    async def write(self, key: Key, body: Mapping[str, Any], obs: status.Observed) -> None:
        """Patch ``key``'s status to what ``obs`` says, if that changes anything significant."""
        written = self.current(key, body)
        now = self._clock()
        if self._await_first_result(key, written, obs, now):
            return
        self._first_wait.pop(key, None)
        if self._held.pop(key, None) is not None:
            self._unschedule(key)  # the held first status is being written: its deadline is moot
        new = status.build(obs, written, now, self._probe_to_write(key, written, now))
        if status.significant(new) == status.significant(written):
            log.debug("%s/%s status up to date (probe result: %s)", *key, _result_text(obs), extra=monitor_extra(key))
            return
        await self._bucket.acquire()
        try:
            await self.kube.patch_status(key[0], key[1], status.merge_patch(written, new))
        except Exception as e:
            if status_code(e) == 404:
                return  # deleted meanwhile; its DELETED event follows
            raise
        self._written_at[key] = now
        log.debug("%s/%s status written (probe result: %s)", *key, _result_text(obs), extra=monitor_extra(key))
        _log_ready_transition(key, written, new)
        self.written[key] = new
        self.seen(key)  # the watch may have brought it back before the patch's answer came

    async def warn_not_ready(self, key: Key, body: Mapping[str, Any], obs: status.Observed) -> None:
        """A Warning event on the RouteMonitor when it is not Ready, once per reason and message
        (``kubectl describe rmon`` shows why next to the status)."""
        ready = status.conditions(obs)[0]
        if ready["status"] == "True":
            self._warned.pop(key, None)
            return
        why = (ready["reason"], ready["message"])
        if self._warned.get(key) == why:
            return
        await self.kube.warn(dict(plan.reference("routemonitor", body)), *why)
        self._warned[key] = why

    def _probe_to_write(self, key: Key, written: Mapping[str, Any] | None, now: float) -> Mapping[str, Any] | None:
        """lastProbe to write: the newest result if its outcome changed and the rate bound allows,
        else what is already written (and a later reconcile is scheduled)."""
        old: Mapping[str, Any] | None = (written or {}).get("lastProbe")
        new = status.last_probe(self._results.get(key))
        if new is None or status.outcome(new) == status.outcome(old):
            return old
        wait = self._written_at.get(key, 0.0) + self.settings.status_min_interval - now
        if old is None or wait <= 0:
            return new
        self.metrics.status_deferred.inc()
        self._schedule(key, wait)
        return old

    def _await_first_result(self, key: Key, written: Mapping[str, Any] | None, obs: status.Observed,
                            now: float) -> bool:
        """Hold back the first status of a new monitor that is probing and has no result yet, until
        its first result (which enqueues it) or ``first_status_within`` seconds: the result then
        rides on the one write. Anything else (no target, rules failed, invalid) is written at once."""
        if (written or obs.last_result is not None or not isinstance(obs.target, ResolvedTarget)
                or obs.rules_error is not None or obs.finding_errors):
            self._first_wait.pop(key, None)
            return False
        wait = self._first_wait.setdefault(key, now) + self.settings.first_status_within - now
        if wait <= 0:
            return False
        self._schedule(key, wait)
        self._held[key] = obs
        return True

    def held(self, key: Key) -> status.Observed | None:
        """The first status held back for ``key``'s first probe result: when the result comes and
        nothing else changed meanwhile, the reconciler writes it with the result (no second pass
        over the spec, target and rules it was built from)."""
        return self._held.get(key)
