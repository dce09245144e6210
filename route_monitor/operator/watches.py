"""Every kind the operator watches (RouteMonitors, Routes, Services, Ingresses, HTTPRoutes,
Gateways), kept current by one :class:`~route_monitor.kube.reflector.Reflector` per kind and
namespace scope, fed to the supervisor.

The reflector lists (in pages) and watches from the list's version; objects that vanished while a
watch was down are observed as deleted. Any failure (API unreachable, 5xx, 429, RBAC, an API
answering 404 for the seconds after an apiserver restart) is tried again after 1, 2, 5, then every
10 s, forever: a watch never gives up and never ends the operator. A kind this cluster does not
serve (no Routes outside OpenShift, no Gateway API) answers 404 from the start: it is asked for
again every minute without a line (the start-up listing said it once), and watched from the
moment its CRD is installed.

Before, kopf watched all but RouteMonitors: a watch that kopf does not retry (a 404 after an
apiserver restart) ended kopf's whole operator, whose shutdown could then hang on its other
watches; the operator stayed up, blind (``tests/chaos/test_chaos_apiserver.py``). Its per-event
machinery (handler invocation, state, logger and body wrappers, a worker task per object) went
with it: annotation -> PrometheusRule p99 15-20 % shorter in a burst of 1,000 Routes, CPU per new
monitor unchanged within the noise (``benchmarks/RESULTS-operator.md``).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from alert_rules import names
from route_monitor.kube.patience import DELAYS
from route_monitor.kube.reflector import Reflector
from route_monitor.kube.rest import Rest
from route_monitor.kube.watched import Backoff, Change, Watched
from route_monitor.operator.world import KINDS, Key, Kind
from route_monitor.targets import sources

log = logging.getLogger(__name__)
NOT_SERVED_DELAY = 60.0
"""Seconds between two tries of a kind whose API has never been served during this run."""
Observe = Callable[[Kind, str | None, Any], None]


@dataclass(frozen=True)
class Api:
    """Where the objects of one kind live."""

    kind: Kind
    api_version: str
    kind_name: str
    plural: str


def api_of(kind: Kind) -> Api:
    if kind == "routemonitor":
        return Api(kind, names.API_VERSION, names.KIND, names.PLURAL)
    if kind in sources.BY_KIND:
        s = sources.BY_KIND[kind]
        return Api(kind, s.api_version, s.kind_name, s.plural)
    return Api(kind, *sources.DEPENDENCIES[kind])


class KindWatch:
    """One kind in every namespace scope: a reflector each, observing into the world."""

    def __init__(self, rest: Rest, api: Api, namespaces: Iterable[str], *, observe: Observe,
                 known: Callable[[], Iterable[Key]], delays: tuple[float, ...] = DELAYS,
                 not_served_delay: float = NOT_SERVED_DELAY) -> None:
        self.api, self._observe, self._known = api, observe, known
        backoff = Backoff(delays, not_served_delay)
        self.reflectors = tuple(
            Reflector(rest, Watched(api_version=api.api_version, kind=api.kind_name, plural=api.plural, namespace=ns),
                      self._changed, known=self._known_keys, backoff=backoff, log=log)
            for ns in tuple(namespaces) or (None,))

    def _known_keys(self) -> Iterable[Key]:
        """The world's keys as the reflector keys objects (a cluster-scoped one: no namespace)."""
        if self.api.kind in sources.CLUSTER_SCOPED:
            return [("", name) for _, name in self._known()]
        return self._known()

    def _changed(self, change: Change, obj: dict[str, Any]) -> None:
        """A listed object comes to the world without an event, one that vanished as deleted."""
        if change is Change.MODIFIED:  # by far the most frequent (status writes): compared first
            self._observe(self.api.kind, "MODIFIED", obj)
        else:
            self._observe(self.api.kind, None if change is Change.LISTED else
                          "DELETED" if change is Change.VANISHED else change.name, obj)

    async def prime(self) -> bool:
        """The start-up list of every scope, observed before the watches run, each tried again
        until the API answers; its watch later starts from its version (one list per kind at
        start, not two). False when the API is not served (404: no CRD yet); :meth:`run` then
        keeps asking."""
        served = [await reflector.prime() for reflector in self.reflectors]
        return all(served)

    async def run(self) -> None:
        await asyncio.gather(*(reflector.run() for reflector in self.reflectors))


def watch_all(rest: Rest, namespaces: Iterable[str], *, observe: Observe,
              known: Callable[[Kind], Iterable[Key]]) -> list[KindWatch]:
    """One watch per kind the world holds; cluster-scoped ones (IngressClasses) cluster-wide, and
    not at all when the operator is limited to some namespaces."""
    scopes = tuple(namespaces)
    return [KindWatch(rest, api_of(kind), () if kind in sources.CLUSTER_SCOPED else scopes, observe=observe,
                      known=functools.partial(known, kind))
            for kind in KINDS if not (scopes and kind in sources.CLUSTER_SCOPED)]
