"""Several operator replicas sharing the monitors through Leases (Contract 6, issue 9), as real
processes against the real control plane, each with its own member name and ports:

- three replicas: every monitor is probed and exported by exactly one (read from each process's
  ``/metrics``), shares within +-50% of even, ``status.probedBy`` names the owner, each replica's
  Lease is there and ``route_monitor_members`` says 3;
- SIGTERM one: its Lease is deleted and its monitors are probed by the others within seconds;
- SIGKILL one: its monitors are probed again within the Lease duration + 10 s;
- restarting it: it takes back its share, and the others stop probing what moved back;
- a rolling update (start a new replica, stop an old one, one at a time) leaves no monitor
  unprobed for longer than its interval + 15 s (measured from the target's own request log).
"""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Namespace
from prometheus_client.parser import text_string_to_metric_families

from alert_rules import names
from route_monitor.operator.replicas.sharding import owner_of
from tests.support.cluster import Cluster
from tests.support.net import wait_for
from tests.support.operator import Operator, Target, annotations, route
from tests.support.resources import RouteMonitor

pytestmark = pytest.mark.cluster

MONITORS = 24
INTERVAL = 2.0
LEASE_NS = "route-monitor"
_runs = itertools.count(1)


class Replicas:
    def __init__(self, cluster: Cluster, workdir: Path, ns: str) -> None:
        self.cluster, self.workdir, self.ns = cluster, workdir, ns
        self.running: dict[str, Operator] = {}

    def start(self, member: str) -> Operator:
        op = Operator(self.cluster, self.workdir / f"{member}-{time.monotonic_ns()}.log",
                      ("--member-name", member, "--lease-namespace", LEASE_NS))
        op.start()
        self.running[member] = op
        return op

    def stop(self, member: str, sig: int = signal.SIGTERM) -> float:
        """Stop a replica; returns when the signal was sent."""
        op = self.running.pop(member)
        sent = time.monotonic()
        op.stop(sig)
        return sent

    def exported(self) -> dict[str, set[str]]:
        """Per replica, the monitors (of the test namespace) whose probe series it exports."""
        out: dict[str, set[str]] = {}
        for member, op in self.running.items():
            monitors: set[str] = set()
            for family in text_string_to_metric_families(op.metrics_text()):
                if family.name == names.PROBE_SUCCESS:
                    monitors |= {s.labels["monitor"] for s in family.samples if s.labels["namespace"] == self.ns}
            out[member] = monitors
        return out

    def close(self) -> None:
        for member in list(self.running):
            self.stop(member)


@pytest.fixture
def ns(kube: Client) -> Iterator[str]:
    name = f"replicas-{next(_runs)}"
    kube.create(Namespace(metadata=ObjectMeta(name=name)))
    yield name
    kube.delete(Namespace, name)  # the namespace controller removes the Routes: later tests probe less


@pytest.fixture
def replicas(cluster: Cluster, tmp_path: Path, ns: str) -> Iterator[Replicas]:
    r = Replicas(cluster, tmp_path, ns)
    try:
        yield r
    finally:
        r.close()


@pytest.fixture
def monitors(kube: Client, target: Target, ns: str) -> list[str]:
    names_ = [f"app-{i}" for i in range(MONITORS)]
    for name in names_:
        kube.create(route(ns, name, target.host, annotations(interval=f"{INTERVAL:.0f}s", path=f"/{name}")))
    return names_


def exactly_once(replicas: Replicas, monitors: list[str]) -> bool:
    exported = replicas.exported()
    counts = {m: sum(m in s for s in exported.values()) for m in monitors}
    return all(c == 1 for c in counts.values())


def probed_since(target: Target, monitors: list[str], since: float) -> set[str]:
    """Monitors whose path was requested after ``since`` (wall clock)."""
    with target._lock:
        return {path.lstrip("/") for path, at in target.hits if at >= since} & set(monitors)


def first_probe(target: Target, monitor: str, since: float) -> float:
    """When ``monitor``'s path was first requested after ``since`` (wall clock)."""
    with target._lock:
        return min(at for path, at in target.hits if path == f"/{monitor}" and at >= since)


def max_gap(target: Target, monitor: str, start: float, end: float) -> float:
    with target._lock:
        times = sorted(at for path, at in target.hits if path == f"/{monitor}" and start <= at <= end)
    edges = [start, *times, end]
    return max(b - a for a, b in itertools.pairwise(edges))


def test_three_replicas_share_the_monitors_and_take_over(kube: Client, replicas: Replicas, monitors: list[str],
                                                         target: Target, ns: str) -> None:
    for member in ("alpha", "bravo", "charlie"):
        replicas.start(member)
    wait_for(lambda: exactly_once(replicas, monitors), timeout=30, what="each monitor exported by exactly one replica")
    exported = replicas.exported()
    even = MONITORS / 3
    for member, owned in exported.items():
        assert abs(len(owned) - even) <= even * 0.5, exported
        assert owned == {m for m in monitors if owner_of((ns, m), ["alpha", "bravo", "charlie"]) == member}
    for op in replicas.running.values():
        assert op.sample(names.MEMBERS) == 3

    def owned_add_up() -> bool:  # every RouteMonitor in the cluster (other tests' too) owned exactly once
        total = sum(op.sample(names.OWNED_MONITORS) or 0 for op in replicas.running.values())
        return total == len(list(kube.list(RouteMonitor, namespace="*")))

    wait_for(owned_add_up, timeout=20, what="route_monitor_owned_monitors of the replicas to add up to all monitors")
    leases = {x.metadata.name for x in kube.list(Lease, namespace=LEASE_NS, labels={names.LABEL_MEMBER: "true"})}
    assert {"route-monitor-alpha", "route-monitor-bravo", "route-monitor-charlie"} <= leases

    def probed_by_matches() -> bool:
        current = replicas.exported()
        owner = {m: member for member, owned in current.items() for m in owned}
        return all((kube.get(RouteMonitor, m, namespace=ns).get("status") or {}).get("probedBy") == owner.get(m)
                   for m in monitors)

    wait_for(probed_by_matches, timeout=20, what="status.probedBy naming each monitor's owner")

    # SIGTERM: the Lease goes first, the others take over within seconds
    moved = exported["charlie"]
    sent_wall = time.time()
    replicas.stop("charlie")
    assert "route-monitor-charlie" not in {x.metadata.name for x in kube.list(Lease, namespace=LEASE_NS)}
    wait_for(lambda: exactly_once(replicas, monitors) and probed_since(target, monitors, sent_wall) >= moved,
             timeout=8, what="charlie's monitors probed by the others after SIGTERM")
    took = time.time() - sent_wall
    assert took < 8, took

    # SIGKILL: the Lease expires (15 s), then the others take over; measured from bravo's last
    # renewal (the Lease's renewTime) to the first probe of each of its monitors by another
    # replica (the target's request log), not from when this test got to look
    moved = replicas.exported()["bravo"]
    killed_wall = time.time()
    replicas.stop("bravo", signal.SIGKILL)
    wait_for(lambda: exactly_once(replicas, monitors) and probed_since(target, monitors, killed_wall + 1) >= moved,
             timeout=60, what="bravo's monitors probed again after SIGKILL")
    renewed = kube.get(Lease, "route-monitor-bravo", namespace=LEASE_NS).spec.renewTime.timestamp()
    took = max(first_probe(target, m, killed_wall + 1) for m in moved) - renewed
    assert took <= 15 + 10 + 2, f"bravo's monitors probed again {took:.1f} s after its last renewal"

    # restart: bravo takes back its share; alpha lets it go
    replicas.start("bravo")
    wait_for(lambda: exactly_once(replicas, monitors) and replicas.exported().get("bravo", set()) == {
        m for m in monitors if owner_of((ns, m), ["alpha", "bravo"]) == "bravo"}, timeout=20,
        what="bravo to take back its share")
    time.sleep(1)
    assert exactly_once(replicas, monitors)


def test_a_rolling_update_leaves_no_monitor_unprobed(replicas: Replicas, monitors: list[str],
                                                     target: Target) -> None:
    replicas.start("old-1")
    replicas.start("old-2")
    wait_for(lambda: exactly_once(replicas, monitors), timeout=30, what="two replicas sharing")
    start = time.time()
    for old, new in (("old-1", "new-1"), ("old-2", "new-2")):  # maxSurge 1, maxUnavailable 0
        replicas.start(new)
        time.sleep(2)
        replicas.stop(old)
        time.sleep(3)
    wait_for(lambda: exactly_once(replicas, monitors), timeout=15, what="the new replicas sharing")
    time.sleep(INTERVAL * 2)
    end = time.time()
    gaps = {m: max_gap(target, m, start, end) for m in monitors}
    worst = max(gaps.values())
    assert worst <= INTERVAL + 15, gaps
    assert set(replicas.running) == {"new-1", "new-2"}


def test_one_named_replica_owns_everything(replicas: Replicas, monitors: list[str]) -> None:
    op = replicas.start("solo")
    wait_for(lambda: replicas.exported()["solo"] >= set(monitors), timeout=30, what="the lone replica to own all")
    assert op.sample(names.MEMBERS) == 1
