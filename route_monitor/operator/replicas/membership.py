"""Replicas find each other through Kubernetes Leases (Contract 6).

Each replica holds its own ``coordination.k8s.io/v1`` Lease ``route-monitor-<member>``, labelled
``routemonitor.io/member: "true"``, in the operator's namespace, renewed every ``renew`` seconds
with a ``duration`` of three renewals. It watches the others' Leases (list, then watch from the
list's resourceVersion; relist whenever the watch breaks) and recomputes the live set on every
change and at every expiry deadline (:class:`LeaseTable`); the watch is a
:class:`~route_monitor.kube.reflector.Reflector`, whose failures are tried again after 0.5, 1, 1.5 s
and so on up to one renewal period. When the set changes,
``on_change(before, after)`` gets the old and new :class:`Shard`.

Leaving cleanly (SIGTERM) deletes the Lease first, so the others take this replica's monitors at
once; a replica that dies is dropped when its Lease expires. Leases of dead replicas are deleted
(uid precondition) once they have been expired for a minute.

A blind replica (Contract 11: its canary is unreachable, :meth:`Membership.set_blind`) annotates
its Lease ``routemonitor.io/blind: "true"`` at once and with every renewal until it is told it
sees again; every replica, itself included once the API has the mark, then ranks the others first
(:class:`Shard`). A replica that cannot reach the API server cannot write the mark: its Lease
expires instead and the others take its monitors over as from a dead replica, while it keeps
probing its own share (its network failures excluded as ``blind``; its view of the others is
held while it is blind, :meth:`LeaseTable.hold`, so it does not take every monitor as if alone);
back, it renews with the mark until its canary has succeeded three times in a row, then takes its
share back.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from alert_rules import names
from route_monitor.kube.apierrors import status_code
from route_monitor.kube.leaseapi import LeaseRequests
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.kube.watched import Backoff, Change
from route_monitor.operator.replicas.leases import LeaseTable
from route_monitor.operator.replicas.sharding import Shard
from route_monitor.waits import wait_event

log = logging.getLogger("route_monitor.operator.replicas.membership")  # the logger name in earlier versions' logs
SELECTOR = {names.LABEL_MEMBER: "true"}


@dataclass(frozen=True, kw_only=True)
class MembershipSettings:
    member: str
    """This replica's name (``--member-name``; default ``$POD_NAME``)."""
    namespace: str
    """Where the Leases live (``--lease-namespace``; default ``$POD_NAMESPACE``, else ``route-monitor``)."""
    renew: float = 5.0
    """Seconds between two renewals of this replica's Lease."""
    duration: float = 15.0
    """``leaseDurationSeconds``: a replica not renewed for this long is taken for dead."""
    abandoned_after: float = 60.0
    """Seconds after expiry before another replica deletes a dead replica's Lease."""
    location: str = ""
    """Where this replica probes from (Contract 12), annotated on its Lease; empty: the default."""

    @property
    def lease_name(self) -> str:
        return f"{names.LEASE_PREFIX}{self.member}"[:253]


def _blind_note(blind: frozenset[str]) -> str:
    return f"; blind: {', '.join(sorted(blind))}" if blind else ""


def micro_time(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Membership:
    def __init__(self, *, leases: LeaseRequests, settings: MembershipSettings, metrics: OperatorMetrics,
                 on_change: Callable[[Shard, Shard], None], clock: Callable[[], float] = time.monotonic,
                 wall: Callable[[], float] = time.time) -> None:
        self.settings = settings
        self._leases, self._metrics, self._on_change, self._wall = leases, metrics, on_change, wall
        self._table = LeaseTable(settings.member, clock)
        self._clock = clock
        self.shard = Shard(settings.member, frozenset({settings.member}))
        self._uid = ""
        self._wake = asyncio.Event()
        self._blind = False
        """Whether this replica's Lease should carry the blind mark."""
        self._mark_now = asyncio.Event()
        self._leaving = False
        """Set by :meth:`leave`: no renewal from then on (one answered 404 would join again)."""
        self._listed: list[dict[str, Any]] = []
        """The Leases of the list under way."""
        renewals = Backoff(tuple(min(0.5 * n, settings.renew) for n in range(1, math.ceil(settings.renew / 0.5) + 1)))
        self._reflector = leases.reflector(settings.namespace, SELECTOR, self._changed, on_synced=self._synced,
                                           backoff=renewals, log=log)

    def _spec(self) -> dict[str, object]:
        return {"holderIdentity": self.settings.member, "leaseDurationSeconds": int(self.settings.duration),
                "renewTime": micro_time(self._wall())}

    def _annotations(self) -> dict[str, str | None]:
        marks: dict[str, str | None] = {names.ANN_BLIND: "true" if self._blind else None}
        if self.settings.location:
            marks[names.ANN_LOCATION] = self.settings.location
        return marks

    def set_blind(self, blind: bool) -> None:
        """Mark (or unmark) this replica's Lease as blind now, and with every renewal after."""
        if blind != self._blind:
            self._blind = blind
            self._table.hold(blind)
            self._mark_now.set()
            self._wake.set()  # recompute: members that expired meanwhile go when the hold ends

    async def join(self) -> None:
        """Hold this replica's Lease and learn the others before anything is owned. Any failure
        propagates: the operator's start tries it again (:mod:`patience`), so does the renewal."""
        s = self.settings
        spec = {**self._spec(), "acquireTime": micro_time(self._wall())}
        meta: dict[str, object] = {"name": s.lease_name, "namespace": s.namespace, "labels": dict(SELECTOR)}
        annotations = {k: v for k, v in self._annotations().items() if v is not None}
        if annotations:
            meta["annotations"] = annotations
        lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": meta, "spec": spec}
        try:
            created = await self._leases.create_lease(lease)
        except Exception as e:
            if status_code(e) != 409:
                raise
            # a Lease of this name exists (this member's previous run): take it. Deleted meanwhile
            # (as abandoned, by another replica): 404, and the caller tries the whole join again
            created = await self._leases.patch_lease(s.namespace, s.lease_name, spec, self._annotations())
        self._uid = str(created["metadata"].get("uid") or "")
        await self._reflector.list()  # the watch goes on from this list
        log.info("member %s joined: lease %s/%s, live members %s", s.member, s.namespace, s.lease_name,
                 ", ".join(sorted(self.shard.members)))

    async def run(self) -> None:
        tasks = [asyncio.create_task(coro, name=name) for name, coro in (
            ("lease renewal", self._renew()), ("lease watch", self._reflector.run()), ("lease expiry", self._expire()))]
        try:
            await asyncio.gather(*tasks)
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def leave(self) -> None:
        """Delete this replica's Lease so the others take its monitors at once. Renewals stop
        first: one in flight that reached the API after the delete answered 404, and joined
        again, so the Lease of a replica gone stayed live for its whole duration (its monitors
        unprobed until it expired)."""
        self._leaving = True
        s = self.settings
        try:
            await self._leases.delete_lease(s.namespace, s.lease_name, self._uid)
            log.info("member %s left: lease %s/%s deleted", s.member, s.namespace, s.lease_name)
        except Exception as e:  # the others will see it expire instead
            log.warning("member %s could not delete its lease (%s); it will expire in %.0fs", s.member, e,
                        s.duration)

    def _recompute(self) -> None:
        live, blind, where = self._table.live(), self._table.blind(), self._table.locations()
        self._metrics.members.set(len(live))
        if live == self.shard.members and blind == self.shard.blind and where == self.shard.locations:
            return
        before, self.shard = self.shard, Shard(self.settings.member, live, blind, where)
        log.info("live members: %s%s (were %s%s)", ", ".join(sorted(live)), _blind_note(blind),
                 ", ".join(sorted(before.members)), _blind_note(before.blind))
        self._on_change(before, self.shard)

    async def _renew(self) -> None:
        s = self.settings
        while True:
            await wait_event(self._mark_now, s.renew)  # a renewal, or the blind mark changed
            self._mark_now.clear()
            if self._leaving:
                return
            try:
                try:
                    written = await self._leases.patch_lease(s.namespace, s.lease_name, self._spec(),
                                                             self._annotations())
                    if written.get("metadata"):
                        self._table.observe(written)  # this replica's own mark counts once the API has it
                        self._recompute()
                except Exception as e:
                    if status_code(e) != 404:
                        raise
                    if self._leaving:
                        return  # deleted by leave() while this renewal was on its way
                    await self.join()  # deleted by someone: take it again
            except asyncio.CancelledError:
                raise
            except Exception as e:
                self._metrics.lease_renew_failures.inc()
                log.warning("member %s could not renew its lease: %s", s.member, e)

    def _changed(self, change: Change, lease: dict[str, Any]) -> None:
        if change is Change.LISTED:
            self._listed.append(lease)
            return
        if change is Change.VANISHED:
            return  # the list's replace_all forgets it
        if change is Change.DELETED:
            self._table.remove(str(lease["metadata"]["name"]))
        else:
            self._table.observe(lease)
        self._recompute()
        self._wake.set()

    def _synced(self) -> None:
        """After a (re)list: the table holds what it listed."""
        listed, self._listed = self._listed, []
        self._table.replace_all(listed)
        self._recompute()

    async def _expire(self) -> None:
        while True:
            deadline = self._table.next_deadline()
            wait = self.settings.renew if deadline is None else max(deadline - self._clock(), 0.0) + 0.01
            self._wake.clear()
            await wait_event(self._wake, wait)
            self._recompute()
            for name, uid in self._table.abandoned(self.settings.abandoned_after):
                self._table.remove(name)
                try:
                    await self._leases.delete_lease(self.settings.namespace, name, uid)
                    log.info("deleted lease %s of a replica that stopped renewing it", name)
                except Exception as e:
                    log.debug("could not delete abandoned lease %s: %s", name, e)
