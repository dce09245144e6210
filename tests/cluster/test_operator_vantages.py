"""A monitor probed from several locations (Contract 12), with three real operator processes
(``--location a``, ``b``, ``c``) sharing the monitors through Leases on the real control plane:

- ``vantages: 3``: all three probe it and export its series with their own ``location``, the
  first owner names itself in ``status.probedBy``, and ``status.locations`` holds one entry per
  location (member and last result) written by the replica probing from there;
- a monitor of one vantage is probed by one replica only, and has no ``status.locations``;
- one replica stops: the monitor is probed from the two locations left, its entry is dropped, and
  ``Probing`` says how many locations probe out of how many asked;
- a replica without ``--location`` takes its Node's ``topology.kubernetes.io/zone``;
- the replica probing from a location is killed: another replica of that location takes its
  place within the Lease's duration plus 10 s.
"""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Namespace, Node
from prometheus_client.parser import text_string_to_metric_families

from alert_rules import names
from tests.support.cluster import Cluster
from tests.support.net import wait_for
from tests.support.operator import Operator, Target, condition, route, wait_monitor
from tests.support.resources import RouteMonitor

pytestmark = pytest.mark.cluster

LOCATIONS = {"member-a": "a", "member-b": "b", "member-c": "c"}
_runs = itertools.count(1)


@pytest.fixture
def ns(kube: Client) -> Iterator[str]:
    name = f"vantages-{next(_runs)}"
    kube.create(Namespace(metadata=ObjectMeta(name=name)))
    yield name
    kube.delete(Namespace, name)


@pytest.fixture
def operators(cluster: Cluster, tmp_path: Path) -> Iterator[dict[str, Operator]]:
    running: dict[str, Operator] = {}
    try:
        for member, where in LOCATIONS.items():
            op = Operator(cluster, tmp_path / f"{member}.log",
                          ("--member-name", member, "--lease-namespace", "route-monitor", "--location", where))
            op.start()
            running[member] = op
        yield running
    finally:
        for op in running.values():
            op.stop()


def monitor(ns: str, name: str, probe: dict[str, Any]) -> Any:
    return RouteMonitor.from_dict({
        "apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": name, "namespace": ns},
        "spec": {"target": {"route": {"name": name}}, "path": f"/{name}", "probe": {"interval": "1s", **probe},
                 "slo": {"availability": "99"}}})


def exported(operators: dict[str, Operator], ns: str, name: str) -> dict[str, str]:
    """member -> the location label of its probes_total series of the monitor."""
    out = {}
    for member, op in operators.items():
        for family in text_string_to_metric_families(op.metrics_text()):
            for s in family.samples:
                if (s.name == names.PROBES_TOTAL and s.labels.get("namespace") == ns
                        and s.labels.get("monitor") == name):
                    out[member] = s.labels.get(names.LABEL_LOCATION, "")
    return out


def test_three_locations_probe_a_monitor_and_each_writes_its_entry(kube: Client, operators: dict[str, Operator],
                                                                   ns: str, target: Target) -> None:
    kube.create(route(ns, "everywhere", target.host))
    kube.create(route(ns, "once", target.host))
    kube.create(monitor(ns, "everywhere", {"vantages": 3}))
    kube.create(monitor(ns, "once", {}))
    wait_for(lambda: exported(operators, ns, "everywhere") == LOCATIONS, timeout=30,
             what="all three replicas exporting the monitor, each with its location")
    m = wait_monitor(kube, ns, "everywhere", lambda m: set((m.get("status") or {}).get("locations") or {}) ==
                     {"a", "b", "c"}, "an entry per location", timeout=30)
    entries = m["status"]["locations"]
    assert {loc: e["member"] for loc, e in entries.items()} == {v: k for k, v in LOCATIONS.items()}
    assert {e["result"] for e in entries.values()} == {"success"}
    assert m["status"]["probedBy"] in LOCATIONS
    assert condition(m, "Probing")["reason"] == "Probing"
    wait_for(lambda: len(exported(operators, ns, "once")) == 1, timeout=30, what="one replica probing 'once'")
    assert len(exported(operators, ns, "once")) == 1
    once = wait_monitor(kube, ns, "once", lambda m: condition(m, "Ready").get("status") == "True", "Ready")
    assert "locations" not in once["status"]

    # a result change is written by the replica that saw it, in its own entry only
    target.status = 503
    failing = wait_monitor(kube, ns, "everywhere", lambda m: {e["result"] for e in m["status"]["locations"].values()}
                           == {"failure"}, "every location's entry to say failure", timeout=30)
    assert {e.get("reason") for e in failing["status"]["locations"].values()} == {"http_status"}
    target.status = 200

    # one replica stops: two locations left, its entry dropped, Probing says so
    gone = m["status"]["probedBy"]
    operators.pop(gone).stop()
    left = {k: v for k, v in LOCATIONS.items() if k != gone}
    wait_for(lambda: exported(operators, ns, "everywhere") == left, timeout=30,
             what="the two replicas left exporting the monitor")
    m = wait_monitor(kube, ns, "everywhere", lambda m: set(m["status"].get("locations") or {}) == set(left.values())
                     and "2 of 3 locations" in condition(m, "Probing").get("message", ""),
                     "the gone location's entry dropped and Probing saying 2 of 3", timeout=30)
    assert condition(m, "Probing")["reason"] == "FewerLocations"
    assert m["status"]["probedBy"] in left
    started = time.time()
    wait_for(lambda: any(at > started and path == "/everywhere" for path, at in list(target.hits)), timeout=10,
             what="probing to go on")


def test_a_replica_without_location_takes_its_nodes_zone(kube: Client, cluster: Cluster, tmp_path: Path,
                                                           ns: str, target: Target) -> None:
    """``NODE_NAME`` (the downward API in ``deploy/``) names a Node labelled with a zone: that zone is
    the replica's location, on its Lease and its series, read through the operator's own RBAC."""
    node = f"node-{ns}"
    kube.create(Node(metadata=ObjectMeta(name=node, labels={names.NODE_ZONE_LABEL: "zone-x"})))
    op = Operator(cluster, tmp_path / "zoned.log", ("--member-name", "zoned", "--lease-namespace", "route-monitor"),
                  env={"NODE_NAME": node})
    try:
        op.start()
        lease = kube.get(Lease, "route-monitor-zoned", namespace="route-monitor")
        assert (lease.metadata.annotations or {}).get(names.ANN_LOCATION) == "zone-x"
        kube.create(route(ns, "zoned", target.host))
        kube.create(monitor(ns, "zoned", {}))
        wait_for(lambda: exported({"zoned": op}, ns, "zoned") == {"zoned": "zone-x"}, timeout=30,
                 what="the replica's series labelled with its Node's zone")
        assert "location: zone-x (Node " in op.log(200)
    finally:
        op.stop()
        kube.delete(Node, node)


def test_a_killed_vantage_is_replaced_in_its_location(kube: Client, cluster: Cluster, tmp_path: Path, ns: str,
                                                      target: Target) -> None:
    """Four replicas, two of them in location ``a``: SIGKILL the one probing from ``a``, and the
    other takes its place within the Lease's duration plus 10 s: three locations again."""
    members = {**LOCATIONS, "member-a2": "a"}
    running: dict[str, Operator] = {}
    try:
        for member, where in members.items():
            running[member] = Operator(cluster, tmp_path / f"{member}.log", (
                "--member-name", member, "--lease-namespace", "route-monitor", "--location", where))
            running[member].start()
        kube.create(route(ns, "kept", target.host))
        kube.create(monitor(ns, "kept", {"vantages": 3}))
        wait_for(lambda: sorted(exported(running, ns, "kept").values()) == ["a", "b", "c"], timeout=30,
                 what="three locations probing")
        [in_a] = [m for m, where in exported(running, ns, "kept").items() if where == "a"]
        killed = time.monotonic()
        running.pop(in_a).stop(signal.SIGKILL)
        other = "member-a2" if in_a == "member-a" else "member-a"
        wait_for(lambda: exported(running, ns, "kept").get(other) == "a", timeout=40,
                 what=f"{other} probing from a after {in_a} was killed")
        took = time.monotonic() - killed
        assert took <= 15 + 10 + 5, f"took {took:.1f}s"  # the Lease's duration + 10 s (+ the scrape)
        assert sorted(exported(running, ns, "kept").values()) == ["a", "b", "c"]
        wait_monitor(kube, ns, "kept", lambda m: (m["status"].get("locations") or {}).get("a", {}).get("member")
                     == other, f"status.locations.a naming {other}", timeout=30)
    finally:
        for op in running.values():
            op.stop()
