"""The operator's first view of the cluster: one list of each kind it watches (and of its own
PrometheusRules) before any reconcile, each list tried again until the API answers
(:mod:`~route_monitor.kube.patience`). A kind this cluster does not serve is said once.
The kinds' lists are the watches' own (:meth:`KindWatch.prime`), which then watch from them."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from route_monitor.kube.patience import until_answered
from route_monitor.kube.writer import KubeWriter
from route_monitor.operator.watches import KindWatch
from route_monitor.targets import sources

log = logging.getLogger("route_monitor.operator.supervisor")


async def load(watches: Iterable[KindWatch], kube: KubeWriter, namespaces: tuple[str, ...], *,
               seed: Callable[[list[dict[str, Any]]], None],
               keep: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Each watch's first list (observed as it comes, into the world), then ``seed`` the rule
    cache with route-monitor's PrometheusRules, ``keep(rule)`` of each as each page arrives."""
    for watch in watches:
        if not await watch.prime():
            log.warning("%s: logged once; watched for, and used once its CRD is installed",
                        _not_served(watch.api.kind))
    rules = await until_answered("listing route-monitor's PrometheusRules",
                                 lambda: kube.list_our_rules(namespaces, keep=keep))
    if rules is not None:
        seed(rules)


def _not_served(kind: str) -> str:
    """What it means that this cluster does not serve ``kind``'s API (no Routes outside OpenShift...)."""
    if kind in sources.BY_KIND:
        source = sources.BY_KIND[kind]
        return (f"{source.kind_name} ({source.api_version}) is not served by this cluster: {source.kind_name}s are "
                f"not monitored and {source.kind_name} targets cannot resolve")
    if kind in sources.DEPENDENCIES:
        api_version, kind_name, _ = sources.DEPENDENCIES[kind]
        readers = ", ".join(s.kind_name for s in sources.SOURCES if kind in s.reads)
        return f"{kind_name} ({api_version}) is not served by this cluster: {readers} targets cannot resolve"
    return f"the {kind} API is not served by this cluster"
