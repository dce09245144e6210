"""The shared SLI groups (:mod:`alert_rules.shared`) as one PrometheusRule the operator owns.

Every monitor's alerts read records that only the shared groups write. Shipped as a file beside
the operator, an install that skipped it (or an image upgraded without it) would page for
nothing, silently; so the operator writes them itself, from its own image: one PrometheusRule
:data:`~alert_rules.names.SHARED_RULE_NAME` in its own namespace, carrying the object labels of the
monitors' rules (``--rule-label``) and our managed-by label, so the Prometheus whose
``ruleSelector`` picks the monitors' rules picks it too. With ``--scrape-per-namespace`` the same
object is kept in each namespace with monitors instead
(:mod:`~route_monitor.operator.outputs.scrapesync`: a namespace-enforcing Prometheus scopes each
rule to its namespace), and this one is not written: never two writers of one series.

Written as every generated object (:mod:`~route_monitor.operator.outputs.kept`): create; 409 ->
read -> ours and different -> replace pinned to the version read; a foreign object at the name
is left untouched, with a Warning Event on it and one log line. A pass reads the object (one GET)
and writes only when it is missing, or differs from what this image generates: an image
upgrade replaces it once, a reconcile never touches it.

One writer: the replica owning the key ``(namespace, "")`` in the replicas' rendezvous hashing
(as for the per-namespace objects). Every replica would write the same content, but during a
rolling upgrade old and new images differ and would replace each other's rule at every pass.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Any

from alert_rules import names
from route_monitor.kube import ownership
from route_monitor.kube.apierrors import status_code
from route_monitor.kube.apply import Outcome
from route_monitor.kube.writer import KubeWriter
from route_monitor.operator.outputs import scrapes
from route_monitor.operator.outputs.kept import KeptObjects
from route_monitor.waits import wait_event

log = logging.getLogger("route_monitor.operator.outputs.sharedrule")
INTERVAL = 60.0
"""Seconds between two passes (each one GET): a removed or edited rule is back within a minute."""


class SharedRule:
    def __init__(self, kube: KubeWriter, *, namespace: str, labels: Mapping[str, str],
                 owns: Callable[[], bool], interval: float = INTERVAL) -> None:
        self._kube = kube
        self.desired = scrapes.shared_rule(namespace, labels)
        self._key = (namespace, names.SHARED_RULE_NAME)
        self._kept = KeptObjects(scrapes.up_to_date)
        self._owns = owns
        self._interval = interval
        self._kicked = asyncio.Event()
        self._refused: int | None = None

    def kick(self) -> None:
        """Replicas changed: this one may own the rule now."""
        self._kicked.set()

    async def run(self) -> None:
        while True:
            self._kicked.clear()
            if self._owns():
                try:
                    await self.sync_once()
                except asyncio.CancelledError:
                    raise
                except Exception as e:
                    log.warning("shared rule %s/%s not synced (retrying in %.0fs): %s", *self._key,
                                self._interval, e)
            await wait_event(self._kicked, self._interval)

    async def sync_once(self) -> Outcome | None:
        """Read the rule and put this image's content in place; None when it already is."""
        namespace, name = self._key
        try:
            existing = await self._kube.get_rule(namespace, name)
            if existing is None or ownership.version_of(existing) != self._kept.version(self._key):
                self._kept.forget(self._key)
            done = await self._kept.write(self._key, self.desired, self._kube.rules, found=existing)
        except Exception as e:
            if status_code(e) in (403, 404):
                self._refused_once(status_code(e), e)
                return None
            raise
        self._refused = None
        if done.outcome is Outcome.FOREIGN and done.first_report and done.stored is not None:
            await self._foreign(done.stored)
        elif done.outcome in (Outcome.CREATED, Outcome.REPLACED):
            log.info("shared rule %s/%s %s (the groups every monitor's alerts read)", namespace, name,
                     done.outcome.value)
        return done.outcome

    def _refused_once(self, code: int | None, error: Exception) -> None:
        if self._refused == code:
            return
        self._refused = code
        hint = ("the PrometheusRule API (monitoring.coreos.com/v1) is not installed; a Prometheus without "
                "prometheus-operator loads them from route-monitor rules --operator --format prometheus"
                if code == 404 else "check the operator's RBAC (prometheusrules in its own namespace)")
        log.warning("shared rule %s/%s not written (%s): the monitors' alerts read records only it writes; %s",
                    *self._key, error, hint)

    async def _foreign(self, existing: Mapping[str, Any]) -> None:
        message = (f"PrometheusRule {self._key[0]}/{self._key[1]} exists and was not created by route-monitor "
                   f"(no {names.LABEL_MANAGED_BY}={names.MANAGED_BY} label): left untouched; the shared SLI "
                   "groups every monitor's alerts read are not written until it is renamed or removed")
        log.warning("%s", message)
        involved = {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule", "name": self._key[1],
                    "namespace": self._key[0], "uid": ownership.uid_of(existing)}
        try:
            await self._kube.warn(involved, ownership.NAME_CONFLICT, message)
        except Exception as e:  # the log line above says it already
            log.debug("event on %s/%s not written: %s", *self._key, e)


def for_operator(kube: KubeWriter, *, namespace: str, labels: Mapping[str, str],
                 owns: Callable[[tuple[str, str]], bool]) -> SharedRule:
    """The shared rule of a cluster-scrape operator, written by the owner of ``(namespace, "")``."""
    return SharedRule(kube, namespace=namespace, labels=labels, owns=lambda: owns((namespace, "")))
