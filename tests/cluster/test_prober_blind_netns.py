"""A prober whose own network is cut (Contract 11), as real processes in a network namespace the
test controls (``tests/support/netns.py``): the process reaches the targets and its canary through
one veth link ("data") and, for the operator, the API server through another ("api", a relay to
the test apiserver); cutting a link takes its namespace end down, so connects fail at once.

- ``standalone``, data link cut: no failure is counted (``route_monitor_probes_total{result="failure"}``
  stays 0, no ``probe_failures_total``), every probe is excluded as ``blind``,
  ``route_monitor_prober_blind`` is 1; the link back: 0 after three canary successes, successes
  count again; then a target that really stops (connection refused, canary fine) counts.
- three operator replicas, one in the namespace with a canary on the data link (``--canary-url``),
  data link cut (the API server still reachable): its Lease is marked ``routemonitor.io/blind``,
  ``prober_blind`` is 1, its monitors are probed by the two others within the takeover time
  (Lease duration + 10 s) and no replica counts a failure; the link back: the mark goes and it
  takes exactly its share back.
- the same with the default canary (the API server, through the api link) and both links cut:
  the replica cannot mark its Lease, which expires, so the others take its monitors over as from
  a dead replica; meanwhile it keeps probing its own share only (not every monitor, as a replica
  that merely lost the API server would) and counts no failure, only ``blind`` exclusions; the
  links back, it takes exactly its share back.
"""

from __future__ import annotations

import itertools
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Namespace
from prometheus_client.parser import text_string_to_metric_families

from alert_rules import names
from route_monitor.operator.replicas.sharding import owner_of
from tests.support.cluster import OPERATOR_TOKEN, OPERATOR_USER, Cluster, kubeconfig
from tests.support.net import free_port, wait_for
from tests.support.netns import Link, NetNS, Relay
from tests.support.operator import VENV_BIN, Operator, Target, annotations, route

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None,
                                reason="needs root and iproute2 (ip netns) to cut a prober's network")
MONITORS = 12
LEASE_NS = "route-monitor"
TAKEOVER = 15 + 10
"""Contract 6: every monitor is probed again within the Lease duration + 10 s."""
_runs = itertools.count(1)


def samples(text: str, name: str, **labels: str) -> list[tuple[dict[str, str], float]]:
    return [(s.labels, s.value) for f in text_string_to_metric_families(text) for s in f.samples
            if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]


def total(text: str, name: str, **labels: str) -> float:
    return sum(v for _, v in samples(text, name, **labels))


@pytest.fixture
def netns() -> Iterator[NetNS]:
    ns = NetNS()
    try:
        yield ns
    finally:
        ns.close()


# --- standalone ---------------------------------------------------------------------------------

def test_standalone_cut_off_counts_no_failure_and_says_it_is_blind(netns: NetNS, tmp_path: Path) -> None:
    data = netns.link()
    targets, canary = Target(address=data.host_address), Target(address=data.host_address)
    port = free_port()
    docs = [{"apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": f"app-{i}", "namespace": "shop"},
             "spec": {"target": {"url": f"http://{targets.host}/app-{i}"}, "slo": {"availability": "99.9"},
                      "probe": {"interval": "1s", "timeout": "800ms", "warmup": "0s"}}} for i in range(3)]
    (tmp_path / "monitors.yaml").write_text(yaml.safe_dump_all(docs))
    log = open(tmp_path / "standalone.log", "wb")  # noqa: SIM115 - owned by the process
    proc = subprocess.Popen(netns.command(sys.executable, "-m", "route_monitor.cli.main", "standalone",
                                          str(tmp_path / "monitors.yaml"), "--metrics-address", f"127.0.0.1:{port}",
                                          "--canary-url", f"http://{canary.host}/readyz"),
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    log.close()

    def metrics() -> str:
        assert proc.poll() is None, (tmp_path / "standalone.log").read_text()
        return netns.fetch(f"http://127.0.0.1:{port}/metrics")

    def successes() -> float:
        return total(metrics(), names.PROBES_TOTAL, namespace="shop", result="success")

    try:
        wait_for(lambda: successes() >= 6, timeout=30, what="standalone probing through the data link")
        assert total(metrics(), names.PROBER_BLIND) == 0

        data.cut()
        wait_for(lambda: total(metrics(), names.PROBES_EXCLUDED_TOTAL, reason="blind") >= 12, timeout=20,
                 what="probes excluded as blind")
        text = metrics()
        assert total(text, names.PROBER_BLIND) == 1
        assert total(text, names.PROBES_TOTAL, result="failure") == 0
        assert samples(text, names.PROBE_FAILURES_TOTAL) == []
        assert {labels["monitor"] for labels, v in samples(text, names.PROBES_EXCLUDED_TOTAL, reason="blind")
                if v > 0} == {"app-0", "app-1", "app-2"}
        assert total(text, names.MAINTENANCE) == 0

        data.restore()
        before = successes()
        wait_for(lambda: total(metrics(), names.PROBER_BLIND) == 0, timeout=20, what="prober_blind back to 0")
        wait_for(lambda: successes() >= before + 6, timeout=20, what="successes counted again")
        assert total(metrics(), names.PROBES_TOTAL, result="failure") == 0

        targets.close()  # a real outage of the targets, the canary still answering: it counts
        wait_for(lambda: total(metrics(), names.PROBE_FAILURES_TOTAL, reason="connection_refused") >= 6, timeout=20,
                 what="refused probes counted while the canary answers")
        assert total(metrics(), names.PROBER_BLIND) == 0
        assert "canary" in (tmp_path / "standalone.log").read_text()
    finally:
        proc.terminate()
        proc.wait(20)
        canary.close()


# --- operator replicas --------------------------------------------------------------------------

@dataclass
class NamespacedOperator(Operator):
    """An operator process inside ``netns``; its /metrics read from inside the namespace."""

    netns: NetNS | None = None

    def spawn(self) -> None:
        assert self.netns is not None
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig or self.cluster.operator_kubeconfig), **self.env}
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the process
        self.proc = subprocess.Popen(self.netns.command(
            str(VENV_BIN / "route-monitor"), "operator", "--metrics-port", str(self.metrics_port),
            "--health-port", str(self.health_port), *self.args),
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        log.close()

    def ready(self) -> bool:
        assert self.proc is not None and self.netns is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"operator exited with {self.proc.returncode}:\n{self.log(60)}")
        try:
            self.netns.fetch(f"http://127.0.0.1:{self.metrics_port}/readyz", timeout=2)
            return True
        except OSError:
            return False

    def metrics_text(self) -> str:
        assert self.netns is not None
        return self.netns.fetch(f"http://127.0.0.1:{self.metrics_port}/metrics")


class Replicas:
    def __init__(self, cluster: Cluster, workdir: Path, ns: str) -> None:
        self.cluster, self.workdir, self.ns = cluster, workdir, ns
        self.running: dict[str, Operator] = {}

    def start(self, op: Operator) -> Operator:
        op.start(timeout=60)
        self.running[op.args[op.args.index("--member-name") + 1]] = op
        return op

    def host(self, member: str, *args: str) -> Operator:
        return self.start(Operator(self.cluster, self.workdir / f"{member}.log",
                                   ("--member-name", member, "--lease-namespace", LEASE_NS, *args)))

    def exported(self) -> dict[str, set[str]]:
        return {member: {labels["monitor"] for labels, _ in samples(op.metrics_text(), names.PROBE_SUCCESS,
                                                                    namespace=self.ns)}
                for member, op in self.running.items()}

    def close(self) -> None:
        for op in self.running.values():
            op.stop()


@pytest.fixture
def namespace(kube: Client) -> Iterator[str]:
    name = f"blind-{next(_runs)}"
    kube.create(Namespace(metadata=ObjectMeta(name=name)))
    yield name
    kube.delete(Namespace, name)


@dataclass
class Setup:
    replicas: Replicas
    targets: Target
    monitors: list[str]
    share: set[str]
    """The monitors charlie owns among three replicas that all see."""
    charlie: NamespacedOperator


@pytest.fixture
def setup(cluster: Cluster, kube: Client, netns: NetNS, namespace: str, tmp_path: Path,
          request: pytest.FixtureRequest) -> Iterator[Setup]:
    """alpha and bravo on the host, charlie in ``netns`` (api link: a relay to the apiserver; data
    link: the targets and a canary), twelve Routes at 1 s, each probed by exactly one replica."""
    api, data = netns.link(), netns.link()
    relay = Relay(api.host_address, int(cluster.server.rsplit(":", 1)[1]))
    targets, canary = Target(address=data.host_address), Target(address=data.host_address)
    config = tmp_path / "charlie.kubeconfig"
    config.write_text(yaml.safe_dump(kubeconfig(f"https://{relay.address}:{relay.port}", OPERATOR_TOKEN,
                                                OPERATOR_USER)))
    monitors = [f"app-{i}" for i in range(MONITORS)]
    for name in monitors:
        kube.create(route(namespace, name, targets.host, annotations(interval="1s", path=f"/{name}")))
    replicas = Replicas(cluster, tmp_path, namespace)
    canary_args = request.param if hasattr(request, "param") else ()
    try:
        replicas.host("alpha")
        replicas.host("bravo")
        charlie = NamespacedOperator(cluster, tmp_path / "charlie.log",
                                     ("--member-name", "charlie", "--lease-namespace", LEASE_NS,
                                      *[a.format(canary=canary.host) for a in canary_args]),
                                     kubeconfig=config, netns=netns)
        replicas.start(charlie)
        share = {m for m in monitors if owner_of((namespace, m), ["alpha", "bravo", "charlie"]) == "charlie"}
        assert share, "charlie owns some of the monitors"
        wait_for(lambda: exactly_once(replicas, monitors) and replicas.exported()["charlie"] == share, timeout=40,
                 what="the three replicas sharing, charlie its share")
        yield Setup(replicas, targets, monitors, share, charlie)
    finally:
        replicas.close()
        relay.close()
        targets.close()
        canary.close()


def exactly_once(replicas: Replicas, monitors: list[str]) -> bool:
    exported = replicas.exported()
    return all(sum(m in s for s in exported.values()) == 1 for m in monitors)


def others_export(s: Setup) -> set[str]:
    exported = s.replicas.exported()
    return exported["alpha"] | exported["bravo"]


def failures_counted(s: Setup, *members: str) -> dict[str, float]:
    """The failures these members count in the test's namespace, by member, monitor and reason
    (empty: none), so that a failing assertion says who counted what."""
    out: dict[str, float] = {}
    for m in members:
        text = s.replicas.running[m].metrics_text()
        out.update({f"{m} {labels['monitor']} {labels.get('reason', '')}": v
                    for labels, v in samples(text, names.PROBE_FAILURES_TOTAL, namespace=s.replicas.ns) if v > 0})
        if (n := total(text, names.PROBES_TOTAL, namespace=s.replicas.ns, result="failure")) > 0:
            out.setdefault(f"{m} probes_total", n)
    return out


def lease_mark(kube: Client) -> str | None:
    lease = kube.get(Lease, "route-monitor-charlie", namespace=LEASE_NS)
    return (lease.metadata.annotations or {}).get(names.ANN_BLIND)


def takes_its_share_back(s: Setup, timeout: float) -> None:
    wait_for(lambda: exactly_once(s.replicas, s.monitors) and s.replicas.exported()["charlie"] == s.share,
             timeout=timeout, what="charlie to take back exactly its share")


@pytest.mark.cluster
@pytest.mark.parametrize("setup", [("--canary-url", "http://{canary}/readyz")], indirect=True, ids=["data-canary"])
def test_a_replica_cut_from_its_targets_marks_its_lease_and_the_others_take_over(
        setup: Setup, netns: NetNS, kube: Client) -> None:
    s = setup
    data: Link = netns.links[1]
    cut_at = time.time()
    data.cut()
    wait_for(lambda: lease_mark(kube) == "true", timeout=15, what="charlie's Lease marked blind")
    assert total(s.charlie.metrics_text(), names.PROBER_BLIND, member="charlie") == 1
    wait_for(lambda: others_export(s) >= set(s.monitors) and s.targets.paths_since(cut_at) >= {f"/{m}" for m in s.share},
             timeout=TAKEOVER, what="charlie's monitors probed by alpha and bravo")
    took = time.time() - cut_at
    assert took < TAKEOVER, took
    assert s.replicas.exported()["charlie"] == set()
    assert failures_counted(s, "alpha", "bravo", "charlie") == {}
    counted = [line for line in s.charlie.log(400).splitlines()
               if f"{s.replicas.ns}/" in line and "probe: failure" in line and "not counted: blind" not in line]
    assert counted == [], counted

    data.restore()
    wait_for(lambda: lease_mark(kube) is None, timeout=20, what="charlie's blind mark cleared")
    assert total(s.charlie.metrics_text(), names.PROBER_BLIND, member="charlie") == 0
    takes_its_share_back(s, timeout=20)
    assert failures_counted(s, "alpha", "bravo", "charlie") == {}
    print(f"takeover after the cut: {took:.1f}s")


@pytest.mark.cluster
def test_a_replica_cut_from_everything_loses_its_lease_counts_nothing_and_comes_back(
        setup: Setup, netns: NetNS) -> None:
    s = setup  # default canary: the API server, through the api link
    assert "canary: https://198.19." in s.charlie.log(200)
    cut_at = time.time()
    for link in netns.links:
        link.cut()
    wait_for(lambda: total(s.charlie.metrics_text(), names.PROBER_BLIND, member="charlie") == 1, timeout=15,
             what="charlie blind")
    wait_for(lambda: others_export(s) >= set(s.monitors) and s.targets.paths_since(cut_at) >= {f"/{m}" for m in s.share},
             timeout=TAKEOVER + 5, what="charlie's monitors probed by alpha and bravo once its Lease expired")
    took = time.time() - cut_at
    assert took < TAKEOVER + 5, took
    text = s.charlie.metrics_text()  # it still probes its share (it cannot know it lost it): nothing counted
    assert {labels["monitor"] for labels, _ in samples(text, names.PROBE_SUCCESS, namespace=s.replicas.ns)} == s.share
    assert total(text, names.PROBES_TOTAL, namespace=s.replicas.ns, result="failure") == 0
    blind = {labels["monitor"] for labels, v in samples(text, names.PROBES_EXCLUDED_TOTAL, namespace=s.replicas.ns,
                                                        reason="blind") if v > 0}
    assert blind == s.share
    assert failures_counted(s, "alpha", "bravo") == {}

    back_at = time.time()
    for link in netns.links:
        link.restore()
    takes_its_share_back(s, timeout=60)
    assert total(s.charlie.metrics_text(), names.PROBER_BLIND, member="charlie") == 0
    assert failures_counted(s, "alpha", "bravo", "charlie") == {}
    print(f"takeover after the cut: {took:.1f}s; share back after {time.time() - back_at:.1f}s")
