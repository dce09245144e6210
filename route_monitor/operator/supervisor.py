"""The supervisor: watch events in, reconciles out, through a work queue of monitor keys.

Watch events (from :mod:`~route_monitor.operator.watches`) update the :class:`World` and enqueue the keys they
touch; probe results enqueue a key only when the result changed. A pool of workers reconciles
keys, one worker per key at a time (a key dirtied while it is being reconciled runs again
after). A failed reconcile is retried with backoff and counted; nothing is ever dropped.
No timers or daemons live on users' objects: this is the only loop.

While the API fails (unreachable, 5xx, 429), monitors waiting on it back off up to a minute,
but one of them is retried every :data:`API_SCOUT_SECONDS` (a scout); the first reconcile that
makes API requests and succeeds means the API answers again, and every monitor waiting on it
is reconciled at once. (Before, a 40 s run of 429/500 answers left changes made meanwhile
unapplied for up to 60 s after the API recovered: ``tests/chaos/test_chaos_apiserver.py``.)
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from route_monitor.kube.apierrors import status_code, unreachable
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.kube.writer import KubeWriter, requests_made
from route_monitor.logs import monitor_extra
from route_monitor.operator import priming, status
from route_monitor.operator.credentials import OperatorCredentials
from route_monitor.operator.outputs import rulesync
from route_monitor.operator.reconcile import Engine, Reconciler, RetryLater
from route_monitor.operator.replicas import vantages
from route_monitor.operator.replicas.sharding import Shard, moved
from route_monitor.operator.settings import OperatorSettings
from route_monitor.operator.trim import HeapTrimmer
from route_monitor.operator.watches import KindWatch
from route_monitor.operator.workqueue import WorkQueue
from route_monitor.operator.world import Key, Kind, World, key_of
from route_monitor.probe.result import ProbeResult
from route_monitor.slo.state import SloStatus

log = logging.getLogger(__name__)

API_SCOUT_SECONDS = 5.0
"""While the API is failing, one monitor waiting on it is retried this often."""
_API_DOWN = frozenset({"api_unavailable", "throttled"})
START_BATCH = 100
"""Monitors started (parsed, resolved, set in the engine) per event-loop turn on a takeover or
restart: ~10-20 ms of work on the shared 2-core machine."""


def error_reason(error: BaseException) -> str:
    """A bounded label for ``route_monitor_reconcile_errors_total``."""
    if isinstance(error, RetryLater):
        return "rules_not_applied"
    code = status_code(error)
    if code is not None:
        return {403: "forbidden", 404: "not_found", 409: "conflict", 422: "invalid",
                429: "throttled"}.get(code, "api_error" if code < 500 else "api_unavailable")
    if unreachable(error):
        return "api_unavailable"
    return "other"


class Supervisor:
    def __init__(self, *, settings: OperatorSettings, kube: KubeWriter, engine: Engine,
                 metrics: OperatorMetrics, member: str | None = None,
                 credentials: OperatorCredentials | None = None,
                 slo_of: Callable[[Key], SloStatus | None] | None = None) -> None:
        self.settings = settings
        self.world = World()
        self.metrics = metrics
        self._kube = kube
        self.shard = Shard(member or "", frozenset({member or ""}))
        """This replica and the live members; alone, it owns every monitor."""
        self.queue = WorkQueue()
        self.reconciler = Reconciler(world=self.world, settings=settings, kube=kube, engine=engine,
                                     metrics=metrics, schedule=self.queue.later, unschedule=self.queue.cancel_timer,
                                     owns=lambda key: self.shard.owns(key), member=member,
                                     placed=lambda key, n: vantages.placed(self.shard, key, n),
                                     credentials=credentials, slo_of=slo_of)
        self._failures: dict[Key, int] = {}
        self._trimmer = HeapTrimmer()
        self._waiting_api: set[Key] = set()
        """Monitors whose last reconcile failed because the API did (unreachable, 5xx, 429)."""
        self._scout: asyncio.TimerHandle | None = None
        self._starting: set[asyncio.Task[None]] = set()
        """Batches of :meth:`_start_probing` still running (held so they are not collected)."""

    # --- inputs -----------------------------------------------------------------------------
    def observe(self, kind: Kind, event_type: str | None, obj: Mapping[str, Any]) -> None:
        for key in self.world.observe(kind, event_type, obj):
            self.enqueue(key)
        if kind == "routemonitor":
            self.reconciler.status.seen(key_of(obj))

    async def prime(self, watches: Iterable[KindWatch]) -> None:
        """Fill the world from one list of each kind (``watches``, which ``observe`` into it)
        before any reconcile, so that a restart sees Routes and RouteMonitors together (no
        transient "Route not found" status, no needless writes); the watches then go on from
        those lists."""
        await priming.load(watches, self._kube, self.settings.namespaces, seed=self.reconciler.rules.seed,
                           keep=rulesync.slim)
        log.info("initial state: %s", ", ".join(f"{len(objs)} {kind}" for kind, objs in self.world.objects.items()))

    def membership_changed(self, before: Shard, after: Shard) -> None:
        """Replicas came or went: reconcile exactly the monitors that move to or from this one
        (they start or stop here within one reconcile; the others are not touched)."""
        self.shard = after
        keys = set(self.world.monitors) | self.world.opted_in_keys()
        gained, lost = moved(keys, before, after)
        self.metrics.ownership_changes.labels(change="gained").inc(len(gained))
        self.metrics.ownership_changes.labels(change="lost").inc(len(lost))
        log.info("%d live replicas: this one gains %d monitors and hands over %d", len(after.members),
                 len(gained), len(lost))
        several = {k: vantages.vantage_count(self.world.monitors.get(k)) for k in self.world.monitors}
        changed = {k for k, n in several.items() if n > 1
                   and vantages.placed(before, k, n) != vantages.placed(after, k, n)}
        for key in lost:  # stop at once: the new owner may already be probing (nothing else to do for them)
            if key not in changed or not self.reconciler.probes(key):
                self.reconciler.release(key)
            else:
                self.reconciler.status.forget(key)  # another vantage now: the first owner writes the status
        for key in changed:  # another vantage: start or stop probing; the first owner rewrites the status
            if not self.reconciler.probes(key):
                self.reconciler.release(key)
        started = sorted(gained | {k for k in changed if self.reconciler.probes(k)})
        self._start_probing(started)
        for key in sorted(set(started) | changed):
            self.enqueue(key)

    def start_owned(self) -> None:
        """Start probing every monitor this replica owns before the first reconcile (a restart or a
        new replica then probes within seconds, not once the whole queue has been worked off)."""
        self._start_probing(list(self.world.monitors))

    def _start_probing(self, keys: list[Key]) -> None:
        """``start_probing`` for each key: at once for a few, in batches of :data:`START_BATCH`
        that yield to the event loop for more (a takeover or restart of thousands must not hold
        the probes this replica already runs; ``benchmarks/burst.py``)."""
        if len(keys) <= START_BATCH:
            for key in keys:
                self.reconciler.start_probing(key)
            return
        task = asyncio.get_running_loop().create_task(self._start_in_batches(keys), name="start probing")
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    async def _start_in_batches(self, keys: list[Key]) -> None:
        for i, key in enumerate(keys, 1):
            self.reconciler.start_probing(key)  # checks ownership when it runs: a later change wins
            if i % START_BATCH == 0:
                await asyncio.sleep(0)

    def on_result(self, result: ProbeResult) -> None:
        """Probe engine callback: remember the result; reconcile only if the outcome changed."""
        key = result.key
        before = self.reconciler.record(result)
        now = status.result_outcome(result)
        if before is None or status.result_outcome(before) != now:
            if before is not None or not result.success:  # a first success is not news
                log.info("%s/%s probe: %s%s%s", *key, now[0] if now else "?",
                         f" ({now[1]}: {result.detail})" if now and now[1] else "",
                         f" (not counted: {now[2]})" if now and now[2] else "", extra=monitor_extra(key))
            self.queue.put(key, full=False)

    def enqueue(self, key: Key) -> None:
        self.queue.put(key)

    def enqueue_later(self, key: Key, delay: float) -> None:
        self.queue.later(key, delay)

    @property
    def idle(self) -> bool:
        return self.queue.idle

    # --- the loop ---------------------------------------------------------------------------
    async def run(self) -> None:
        workers = [asyncio.create_task(self._worker(), name=f"reconcile worker {i}")
                   for i in range(self.settings.workers)]
        try:
            await asyncio.gather(*workers)
        finally:
            for w in workers:
                w.cancel()
            self.queue.close()
            if self._scout is not None:
                self._scout.cancel()

    async def _worker(self) -> None:
        while True:
            key, result_only = await self.queue.take()
            try:
                asked = requests_made()
                await self.reconciler.reconcile(key, result_only=result_only)
                self._succeeded(key, answered=requests_made() > asked)
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self._failed(key, e)
            finally:
                self.queue.done(key)
            self._trimmer.done()
            if self.idle:
                self._trimmer.idle()

    def _succeeded(self, key: Key, *, answered: bool) -> None:
        """``answered``: the reconcile made API requests, so the API answers (again)."""
        self._failures.pop(key, None)
        self._waiting_api.discard(key)
        if not self._waiting_api:
            return
        if not answered:
            self._arm_scout()
            return
        waiting, self._waiting_api = self._waiting_api, set()
        log.info("the Kubernetes API answers again: reconciling the %d monitors waiting on it now", len(waiting))
        for other in sorted(waiting):
            self._failures.pop(other, None)  # a failure after the outage backs off from the start
            self.queue.now(other)

    def _arm_scout(self) -> None:
        if self._scout is None:
            self._scout = asyncio.get_running_loop().call_later(API_SCOUT_SECONDS, self._send_scout)

    def _send_scout(self) -> None:
        self._scout = None
        if self._waiting_api:
            self.queue.now(min(self._waiting_api))

    def _failed(self, key: Key, error: Exception) -> None:
        reason = error_reason(error)
        if reason not in _API_DOWN and key in self._waiting_api:
            self._failures.pop(key, None)  # the API answers: its outage's backoff is not this error's
        n = self._failures[key] = self._failures.get(key, 0) + 1
        delay = self.settings.retry_backoff[min(n, len(self.settings.retry_backoff)) - 1]
        if reason in _API_DOWN:
            self._waiting_api.add(key)
            self._arm_scout()
        else:
            self._waiting_api.discard(key)
        self.metrics.reconcile_errors.labels(reason=reason).inc()
        log.warning("reconcile of %s/%s failed (%s, attempt %d), retrying in %.0fs: %s",
                    key[0], key[1], reason, n, delay, error, exc_info=reason == "other")
        self.enqueue_later(key, delay)
