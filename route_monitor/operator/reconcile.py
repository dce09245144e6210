"""One reconcile of one ``(namespace, name)`` key: make the cluster and the probe engine match
the world, with as few API writes as possible.

1. Annotated Route/Service -> generated RouteMonitor (apply, delete, or leave it), Warning
   events (each posted once while it holds).
2. RouteMonitor -> probe engine (add/replace/remove), PrometheusRule (applied when it changes),
   status (:mod:`route_monitor.operator.statuswriter`: written when it changes, never per probe).

Caches here only save writes; the truth is always recomputed from the world, so a restart
rebuilds everything and writes nothing that is already right.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from alert_rules import names
from alert_rules.model import InvalidSpec
from route_monitor.kube import ownership
from route_monitor.kube.apierrors import status_code
from route_monitor.kube.apply import Applied, Outcome, apply
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.kube.writer import KubeWriter
from route_monitor.operator import exclusion, locationstatus, plan, status
from route_monitor.operator.credentials import OperatorCredentials
from route_monitor.operator.outputs.rulesync import RulesOutcome, RuleSync
from route_monitor.operator.replicas.vantages import DEFAULT_LOCATION, Placed, shortfall, vantage_count
from route_monitor.operator.settings import OperatorSettings
from route_monitor.operator.statuswriter import StatusWriter
from route_monitor.operator.world import Key, World
from route_monitor.probe.result import ProbeResult
from route_monitor.slo.state import SloStatus
from route_monitor.spec import maintenance
from route_monitor.spec.monitor import MonitorSpec, parse_routemonitor
from route_monitor.spec.protocol import describe, probed_url
from route_monitor.targets.resolve import ResolvedTarget

log = logging.getLogger(__name__)


class Engine(Protocol):
    def set_monitor(self, spec: MonitorSpec, target: ResolvedTarget) -> None: ...
    def remove_monitor(self, key: tuple[str, str]) -> None: ...


def _fingerprint(spec: MonitorSpec, uid: str) -> int | None:
    """What a monitor's PrometheusRule is made from (its spec, its uid as owner), hashed; None if unhashable."""
    try:
        return hash((spec, uid))
    except TypeError:
        return None


class RetryLater(Exception):
    """The reconcile wrote what it could (status says what failed); try again after a backoff."""


class Reconciler:
    def __init__(self, *, world: World, settings: OperatorSettings, kube: KubeWriter, engine: Engine,
                 metrics: OperatorMetrics, schedule: Callable[[Key, float], None],
                 clock: Callable[[], float] = time.time, owns: Callable[[Key], bool] = lambda _: True,
                 member: str | None = None, unschedule: Callable[[Key], None] = lambda _: None,
                 placed: Callable[[Key, int], Placed] | None = None,
                 credentials: OperatorCredentials | None = None,
                 slo_of: Callable[[Key], SloStatus | None] | None = None) -> None:
        self.world, self.settings, self.kube, self.engine = world, settings, kube, engine
        self.metrics, self._clock = metrics, clock
        self._owns, self._member = owns, member
        self._placed = placed or (lambda key, _: ((member or "", DEFAULT_LOCATION),) if owns(key) else ())
        """Contract 12: (member, location) of the owners of a monitor asked for N vantages, first
        owner first (:func:`route_monitor.operator.vantages.of_shard`)."""
        self._locations_written: dict[Key, dict[str, Any]] = {}
        """This replica's ``status.locations`` entry last written, until the watch brings it back."""
        self.results: dict[Key, ProbeResult] = {}
        self._valid: set[Key] = set()
        """Monitors probed with a valid spec: an invalid edit keeps them probing with it."""
        self.rules = RuleSync(kube)
        self.status = StatusWriter(world=world, settings=settings, kube=kube, metrics=metrics, results=self.results,
                                   schedule=schedule, unschedule=unschedule, clock=clock)
        self._rule_input: dict[Key, int] = {}
        """Hash of (spec, monitor uid) each monitor's rule was last synced from: an unchanged spec
        skips rendering the PrometheusRule (~0.4 ms) on every later reconcile."""
        self._warned: dict[Key, set[plan.WarningEvent]] = {}
        self.credentials = credentials
        """Contract 8: reads and watches what monitors reference (None: nothing is referenced)."""
        self.slo_of = slo_of
        """When SLOs are read from Prometheus (``operator.slo_loop``): a monitor's last read."""

    def record(self, result: ProbeResult) -> ProbeResult | None:
        """Keep ``result`` as its monitor's latest (for the status); the one it follows, if any."""
        before = self.results.get(result.key)
        self.results[result.key] = result
        return before

    async def reconcile(self, key: Key, *, result_only: bool = False) -> None:
        """Only the replica that owns ``key`` acts on it (generated monitor, rules, probing, status,
        events); the others let it go. One replica owns everything.

        ``result_only``: only a probe result is new since the last reconcile (no watch event,
        reference or membership change): a first status held back for it is written with it."""
        if not self._owns(key):
            if self.probes(key):
                await self._vantage(key)
            else:
                self.release(key)
            return
        if result_only and await self._first_result(key):
            return
        await self._generated(key)
        await self._monitor(key)

    def locations_sent(self, key: Key) -> Mapping[str, Any]:
        """The ``status.locations`` entries this replica wrote for ``key`` (None: deleted)."""
        return self._locations_written.get(key, {})

    def probes(self, key: Key) -> bool:
        """This replica is one of the monitor's owners (its first, or another vantage)."""
        me = self._member or ""
        return any(m == me for m, _ in self._placed(key, vantage_count(self.world.monitors.get(key))))

    async def _vantage(self, key: Key) -> None:
        """An owner that is not the first: probe, and write only this location's status entry."""
        body = self.world.monitors.get(key)
        if body is None:
            self._forget(key)
            return
        try:
            spec = parse_routemonitor(body)
        except InvalidSpec:
            if key not in self._valid:
                self._stop(key)
            return  # the first owner says why in the status
        if not isinstance(await self._probe(key, spec), ResolvedTarget):
            self._stop(key)
        await self._location_entry(key, body, spec, first=False)

    async def _probe(self, key: Key, spec: MonitorSpec) -> ResolvedTarget | plan.Unresolved:
        """Resolve the monitor's target (credentials attached) and probe it, or stop probing it."""
        target = plan.resolve_target(spec, self.world, allow_url_targets=self.settings.allow_url_targets,
                                     cluster_domain=self.settings.cluster_domain)
        if self.credentials is not None:
            target = await self.credentials.attach(spec, target)
        if isinstance(target, ResolvedTarget):
            self.engine.set_monitor(spec, target)
            self._valid.add(key)
        else:
            self.engine.remove_monitor(key)
            self._valid.discard(key)
        return target

    async def _location_entry(self, key: Key, body: Mapping[str, Any], spec: MonitorSpec, *, first: bool) -> None:
        """Contract 12: this owner's ``status.locations`` entry; the first owner also drops the
        entries of locations that no longer probe; a monitor of one vantage has none (``lastProbe``
        says it all), so the first owner drops any left from when it had more."""
        placed = () if spec.probe.vantages.single else self._placed(key, spec.probe.vantages.count)
        if not placed and not first:
            return
        me = self._member or ""
        where = next((loc for m, loc in placed if m == me), None)
        current = {**(body.get("status") or {})}
        if key in self._locations_written:
            current[locationstatus.FIELD] = {**(current.get(locationstatus.FIELD) or {}),
                                             **self._locations_written[key]}
        patches = [locationstatus.prune_patch(current, [loc for _, loc in placed]) if first else None,
                   None if where is None else locationstatus.own_patch(current, where, me, self.results.get(key))]
        for patch in patches:
            if patch is None:
                continue
            try:
                await self.kube.patch_status(key[0], key[1], patch)
            except Exception as e:
                if status_code(e) != 404:
                    raise
                return
            self._locations_written[key] = {**self._locations_written.get(key, {}), **patch[locationstatus.FIELD]}

    async def _first_result(self, key: Key) -> bool:
        held, result, body = self.status.held(key), self.results.get(key), self.world.monitors.get(key)
        if held is None or result is None or body is None:
            return False
        obs = dataclasses.replace(held, last_result=result)
        await self.status.write(key, body, obs)
        await self.status.warn_not_ready(key, body, obs)
        if vantage_count(body) > 1:
            with contextlib.suppress(InvalidSpec):  # held only for a valid spec; an edit since: its reconcile
                await self._location_entry(key, body, parse_routemonitor(body), first=True)
        return True

    def release(self, key: Key) -> None:
        """Stop probing ``key`` and forget the status written for it: another replica owns it now,
        and when it comes back here, status is checked afresh. What is known of its PrometheusRule
        (uid, version, content) is kept: a later write is pinned to that version, so a stale entry
        costs one refused write, never a write over someone else's change."""
        self._stop(key)
        self._warned.pop(key, None)

    def start_probing(self, key: Key) -> None:
        """Probe a monitor this replica just took over at once, before its reconcile (API writes,
        status) comes round in the queue: a takeover of hundreds of monitors would otherwise leave
        the last ones unprobed for as long as the queue takes. Only what needs no I/O: monitors
        with credentials to read wait for their reconcile."""
        body = self.world.monitors.get(key)
        if body is None or not self.probes(key):
            return
        try:
            spec = parse_routemonitor(body)
        except InvalidSpec:
            return
        if spec.probe.request.references():
            return
        target = plan.resolve_target(spec, self.world, allow_url_targets=self.settings.allow_url_targets,
                                     cluster_domain=self.settings.cluster_domain)
        if isinstance(target, ResolvedTarget):
            self.engine.set_monitor(spec, target)
            self._valid.add(key)

    async def _generated(self, key: Key) -> None:
        """Apply or delete the generated RouteMonitor at ``key`` as its source says. Refused because
        the monitor changed since the world saw it (409: a status written while the watch lagged or
        was down, a retried write that had gone through, someone else's): read it afresh and plan
        again, once, instead of waiting for a watch event that may not come or change nothing."""
        for fresh in (False, True):
            done = await self._apply_generated(key)
            if done is None or done.outcome in (Outcome.CREATED, Outcome.REPLACED, Outcome.UNCHANGED):
                return
            if fresh:
                raise RetryLater(f"RouteMonitor {key[0]}/{key[1]} changed again while being updated; "
                                 "trying again") from None
            # foreign (as read) or gone: known already; changed: read it
            current = await self.kube.get_monitor(*key) if done.outcome is Outcome.CHANGED else done.stored
            self.world.observe("routemonitor", "MODIFIED" if current else "DELETED",
                               current or {"metadata": {"namespace": key[0], "name": key[1]}})

    async def _apply_generated(self, key: Key) -> Applied | None:
        """What became of the write, None when there was none to make."""
        decision = plan.plan_generated(self.world, key)
        active = set(decision.warnings)
        for w in active - self._warned.get(key, set()):
            log.warning("%s %s/%s: %s", w.reason, key[0], key[1], w.message)
            await self.kube.warn(dict(w.involved), w.reason, w.message)
        if active:
            self._warned[key] = active
        else:
            self._warned.pop(key, None)
        existing = self.world.monitors.get(key)
        if decision.action == "apply" and decision.manifest is not None:
            log.info("applying generated RouteMonitor %s/%s", *key)
            # none seen: a create (never overwrites); else that very object (plan checked it is
            # generated), replaced at the version seen
            done = await apply(self.kube.monitors, decision.manifest, found=existing, ours=plan.is_generated,
                               same=plan.same_monitor, body=ownership.replacement)
            if done.stored is not None and done.outcome is not Outcome.FOREIGN:
                # go on with the monitor at once; its watch event will find nothing new
                self.world.observe("routemonitor", "MODIFIED", done.stored)
            return done
        if decision.action == "delete" and existing is not None:
            log.info("deleting RouteMonitor %s/%s: its annotation was removed", *key)
            await self.kube.delete_monitor(key[0], key[1], ownership.uid_of(existing))
        return None

    def _stop(self, key: Key) -> None:
        """No probing, no credential watch, nothing remembered of what was written for ``key``."""
        self.engine.remove_monitor(key)
        self._valid.discard(key)
        if self.credentials is not None:
            self.credentials.forget(key)
        self.results.pop(key, None)
        self._locations_written.pop(key, None)
        self.status.forget(key)
        self.metrics.set_state(key, None)

    def _forget(self, key: Key) -> None:
        """The monitor is gone: also what is known of its PrometheusRule (garbage-collected with it)."""
        self._stop(key)
        self.rules.forget(key)
        self._rule_input.pop(key, None)

    async def _monitor(self, key: Key) -> None:
        body = self.world.monitors.get(key)
        if body is None:
            self._forget(key)
            return
        generation = int((body.get("metadata") or {}).get("generation") or 0)
        try:
            spec = parse_routemonitor(body)
        except InvalidSpec as e:
            # a monitor already running keeps probing with its last valid spec (a typo in, say, a
            # maintenance window must not blind its SLO); one never valid is not probed
            kept = key in self._valid
            if not kept:
                self.engine.remove_monitor(key)
                if self.credentials is not None:
                    self.credentials.forget(key)
            self.metrics.set_state(key, "invalid")
            obs = status.Observed(generation=generation, invalid=plan.invalid_message(e, kept=kept))
            await self.status.write(key, body, obs)
            await self.status.warn_not_ready(key, body, obs)
            return
        target = await self._probe(key, spec)
        rules = await self._apply_rules(key, spec, body)
        errors, warnings = plan.findings(spec, body)
        state = ("target_unresolved" if not isinstance(target, ResolvedTarget)
                 else "rules_failed" if rules.error or errors else "ready")
        self.metrics.set_state(key, state)
        if isinstance(target, ResolvedTarget):  # the status shows the URL probed, in its protocol's scheme
            target = dataclasses.replace(target, url=probed_url(target.url, spec.probe.protocol, target.protocol))
        now, last = self._clock(), self.results.get(key)
        obs = status.Observed(generation=generation, target=target, interval_ms=spec.probe.interval_ms,
                              rules_error=rules.error, rules_reason=rules.reason, rules_name=f"{key[0]}/{rules.name}",
                              finding_errors=errors, finding_warnings=warnings, last_result=last,
                              excluded_now=None if last is not None else
                              exclusion.known(spec, now, self.status.current(key, body)),
                              probed_by=self._member,
                              next_maintenance=maintenance.next_window_start(spec.maintenance, now),
                              slo=self.slo_of(key) if self.slo_of else None, slo_enabled=self.slo_of is not None,
                              protocol=describe(spec.probe.protocol, target.protocol)
                              if isinstance(target, ResolvedTarget) else None,
                              fewer_locations=shortfall(len(self._placed(key, spec.probe.vantages.count)),
                                                        spec.probe.vantages.count))
        await self.status.write(key, body, obs)
        await self.status.warn_not_ready(key, body, obs)
        await self._location_entry(key, body, spec, first=True)
        if rules.retry:
            raise RetryLater(rules.error)

    async def _apply_rules(self, key: Key, spec: MonitorSpec, body: Mapping[str, Any]) -> RulesOutcome:
        name = names.prometheus_rule_name(key[1])
        source = _fingerprint(spec, ownership.uid_of(body))
        if source is not None and self._rule_input.get(key) == source and self.rules.current(key, name):
            return RulesOutcome(name)
        self._rule_input.pop(key, None)
        try:
            rule = plan.rule_object(spec, body, self.settings.rules)
        except InvalidSpec as e:
            return RulesOutcome(name, f"no rules can be generated: {e}")
        outcome = await self.rules.sync(key, rule)
        if outcome.error is None and source is not None:
            self._rule_input[key] = source
        return outcome
