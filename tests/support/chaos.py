"""What the control-plane chaos tests check, in one place: that a namespace of annotated Routes
has converged (what a user would look at), that the operator's footprint came back to its
baseline, and a churn of Route creates, changes and deletes that goes on through a fault.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from lightkube import Client
from lightkube.types import PatchType

from alert_rules import names
from tests.support.operator import Operator, annotations, condition, route
from tests.support.resources import PrometheusRule, Route, RouteMonitor


def divergence(kube: Client, ns: str) -> list[str]:
    """Why ``ns`` has not converged; empty when it has: every annotated Route has exactly one
    RouteMonitor of its name, with the Route's SLO, status written for its current generation,
    Ready and probed successfully, and exactly one PrometheusRule ``route-monitor-<name>``;
    nothing for a deleted Route."""
    routes = {r.metadata.name: (r.metadata.annotations or {}) for r in kube.list(Route, namespace=ns)}
    wanted = {n for n, ann in routes.items() if names.ANN_SLO in ann}
    monitors = {m.metadata.name: m.to_dict() for m in kube.list(RouteMonitor, namespace=ns)}
    rules = sorted(r.metadata.name for r in kube.list(PrometheusRule, namespace=ns))
    problems = []
    if set(monitors) != wanted:
        problems.append(f"RouteMonitors missing {sorted(wanted - set(monitors))}, stale {sorted(set(monitors) - wanted)}")
    if rules != sorted(names.prometheus_rule_name(n) for n in wanted):
        problems.append(f"PrometheusRules {rules} for Routes {sorted(wanted)}")
    for name in sorted(wanted & set(monitors)):
        m: dict[str, Any] = monitors[name]
        status = m.get("status") or {}
        if m["spec"]["slo"]["availability"] != routes[name][names.ANN_SLO]:
            problems.append(f"{name}: spec not updated")
        elif status.get("observedGeneration") != m["metadata"]["generation"]:
            problems.append(f"{name}: status for generation {status.get('observedGeneration')}")
        elif condition(m, "Ready").get("status") != "True" or (status.get("lastProbe") or {}).get("result") != "success":
            problems.append(f"{name}: not Ready with a successful probe")
    return problems


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


@dataclass(frozen=True)
class Footprint:
    tasks: int
    """asyncio tasks (``route_monitor_asyncio_tasks``): the probes in flight and a few of the
    operator's own (watches, workers); an idle monitor holds a timer, not a task."""
    rss_kib: int


def footprint(op: Operator) -> Footprint:
    """The operator's asyncio tasks (counted when /metrics is read) and RSS."""
    assert op.proc is not None
    tasks = op.sample(names.ASYNCIO_TASKS)
    assert tasks is not None
    return Footprint(int(tasks), rss_kib(op.proc.pid))


@dataclass
class Churn:
    """Creates, changes and deletes annotated Routes in ``ns`` in a thread until stopped; a
    request the API fails (etcd down, apiserver refusing) is counted and the churn goes on:
    the API's own state at the end is what the operator must converge on."""

    kube: Client
    ns: str
    host: str
    pause: float = 0.2
    done: int = 0
    failed: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="churn", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(timeout=60)

    def _step(self, i: int) -> None:
        if i % 3 == 0:
            self.kube.create(route(self.ns, f"new{i}", self.host, annotations()))
        elif i % 3 == 1:
            self.kube.patch(Route, f"app{i % 10}", {"metadata": {"annotations": {names.ANN_SLO: f"99.{i % 9 + 1}"}}},
                            namespace=self.ns, patch_type=PatchType.MERGE)
        else:
            self.kube.delete(Route, f"new{i - 2}", namespace=self.ns)

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            try:
                self._step(i)
                self.done += 1
            except Exception:
                self.failed += 1
            i += 1
            time.sleep(self.pause)
