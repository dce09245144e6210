"""A replica killed and restarted next to another rewrites no status that is right (issue 21, item 8).

Two real operator processes share a namespace's monitors through Leases: monitors warming up
(their target failing, so warm-up goes on), counted (a success ended warm-up, well within the
warm-up period since creation), inside a maintenance window (another one to come:
``nextMaintenance``) and paused. Once every status is settled, a watch of the RouteMonitors
starts from the listed resourceVersion; one replica is SIGKILLed right after renewing its Lease
and started again at once (its new process started and its imports done before the kill: well
within the Lease's duration however loaded the machine, and the other never takes its monitors). The restarted replica logs, at debug level, each reconcile whose status was already
right, with the probe result it was computed from: for each of its monitors, once with a probe
result of its own is the proof that it has processed the monitor past its first probe. Then:
no status written by the restarted replica, no event on the watch, and every resourceVersion
unchanged (before the fix: ``Probing`` flipped to reason ``Probing`` and back for every
monitor warming up, in a window or paused).
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.resources.coordination_v1 import Lease

from alert_rules import names
from route_monitor.operator.replicas.sharding import owner_of
from tests.support.cluster import Cluster
from tests.support.net import wait_for
from tests.support.operator import Operator, Target, condition, new_namespace
from tests.support.resources import RouteMonitor
from tests.support.watch import MonitorWatch

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(240)]

LEASE_NS = "route-monitor"
KEEPER, RESTARTED = "keeper", "restarted"
PER_KIND = 2
KINDS = {  # kind -> (Probing reason, lastProbe outcome (result, reason, excluded))
    "warming": ("WarmingUp", ("failure", "http_status", "warmup")),
    "counted": ("Probing", ("success", "", "")),
    "windowed": ("InMaintenance", ("failure", "http_status", "maintenance")),
    "paused": ("Paused", ("failure", "http_status", "paused")),
}


WARM_START = """\
import importlib, os, sys
importlib.import_module("route_monitor.cli.commands.operator")  # a process's start: its imports
from route_monitor.cli.main import main
fifo = os.open(sys.argv[1], os.O_RDONLY)  # until the test holds the other end: imported
os.read(fifo, 1)  # until the test closes it: go
sys.exit(main(sys.argv[2:]))
"""
"""The restarted replica's process, started and its imports done before the kill, then run at
once after it: the restart the test needs is well within the Lease's duration however loaded the
machine is (a cold start under three test workers on two cores took seconds of it)."""


def warm(fifo: Path) -> Callable[[list[str]], list[str]]:
    """``Operator.launch``: the operator's command line run by :data:`WARM_START`, gated on ``fifo``."""
    os.mkfifo(fifo)
    return lambda command: [sys.executable, "-c", WARM_START, str(fifo), *command[1:]]


def holding(fifo: Path) -> int | None:
    """The write end of ``fifo`` once the warm process holds its read end (its imports done), else None."""
    try:
        return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return None


def utc(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def names_for(ns: str) -> dict[str, str]:
    """Monitor name -> kind: ``PER_KIND`` of each kind owned by the replica to restart, one by the keeper."""
    out: dict[str, str] = {}
    for kind in KINDS:
        mine = theirs = 0
        for i in itertools.count():
            name = f"{kind}-{i}"
            owner = owner_of((ns, name), [KEEPER, RESTARTED])
            if owner == RESTARTED and mine < PER_KIND:
                out[name], mine = kind, mine + 1
            elif owner == KEEPER and theirs < 1:
                out[name], theirs = kind, theirs + 1
            if mine == PER_KIND and theirs == 1:
                break
    return out


def monitor(ns: str, name: str, kind: str, up: Target, down: Target) -> Any:
    now = time.time()
    spec: dict[str, Any] = {"target": {"url": f"http://{(up if kind == 'counted' else down).host}/{name}"},
                            "probe": {"interval": "2s", "timeout": "1s", "warmup": "1h"},
                            "slo": {"availability": "99"}}
    if kind == "windowed":
        spec["maintenance"] = [{"start": utc(now - 60), "end": utc(now + 3600)},
                               {"start": utc(now + 7200), "end": utc(now + 9000)}]
    if kind == "paused":
        spec["paused"] = True
    return RouteMonitor.from_dict({"apiVersion": f"{names.GROUP}/{names.VERSION}", "kind": names.KIND,
                                   "metadata": {"name": name, "namespace": ns}, "spec": spec})


def settled(m: dict[str, Any], kind: str, owner: str) -> bool:
    reason, outcome = KINDS[kind]
    st = m.get("status") or {}
    probe = st.get("lastProbe") or {}
    return (condition(m, "Probing").get("reason") == reason and condition(m, "Ready").get("status") == "True"
            and (probe.get("result"), probe.get("reason", ""), probe.get("excluded", "")) == outcome
            and st.get("probedBy") == owner and (kind != "windowed" or "nextMaintenance" in st))


def versions(kube: Client, ns: str) -> tuple[str, dict[str, str]]:
    """The list's resourceVersion, and each monitor's."""
    listed = kube.list(RouteMonitor, namespace=ns)
    items = {m.metadata.name: m.metadata.resourceVersion for m in listed}
    return str(listed.resourceVersion), items


@pytest.fixture
def up() -> Iterator[Target]:
    t = Target()
    yield t
    t.close()


@pytest.fixture
def down() -> Iterator[Target]:
    t = Target()
    t.status = 503
    yield t
    t.close()


def test_a_replica_restarted_next_to_another_rewrites_no_status_that_is_right(
        cluster: Cluster, kube: Client, request: pytest.FixtureRequest, tmp_path: Path, up: Target,
        down: Target) -> None:
    ns = new_namespace(kube, request, "rr")
    kinds = names_for(ns)
    owners = {name: owner_of((ns, name), [KEEPER, RESTARTED]) for name in kinds}
    for name, kind in kinds.items():
        kube.create(monitor(ns, name, kind, up, down))

    def replica(member: str, launch: Callable[[list[str]], list[str]] | None = None) -> Operator:
        return Operator(cluster, tmp_path / f"{member}-{time.monotonic_ns()}.log",
                        ("--member-name", member, "--lease-namespace", LEASE_NS, "--namespace", ns,
                         "--allow-url-targets", "--log-level", "debug"), launch=launch)

    running = {KEEPER: replica(KEEPER), RESTARTED: replica(RESTARTED)}
    waiting: list[Operator] = []
    watch: MonitorWatch | None = None
    try:
        for op in running.values():
            op.start()

        def all_settled() -> bool:
            got = {m.metadata.name: m.to_dict() for m in kube.list(RouteMonitor, namespace=ns)}
            return all(name in got and settled(got[name], kind, owners[name]) for name, kind in kinds.items())

        wait_for(all_settled, timeout=60, what="every monitor's status settled (reason, last probe, probedBy)")
        list_version, before = versions(kube, ns)
        watch = MonitorWatch(cluster, ns, list_version)

        # the new process imported and waiting, then kill right after a renewal and let it go: the
        # restart has the Lease's whole duration before the keeper drops it
        fifo = tmp_path / "go"
        again = replica(RESTARTED, launch=warm(fifo))
        waiting.append(again)
        again.spawn()
        go: list[int] = []

        def imported() -> bool:
            fd = holding(fifo)
            if fd is not None:
                go.append(fd)
            return fd is not None

        wait_for(imported, timeout=60, what="the restarted replica's process imported and waiting")
        lease = f"{names.LEASE_PREFIX}{RESTARTED}"
        renewed = kube.get(Lease, lease, namespace=LEASE_NS).spec.renewTime
        wait_for(lambda: kube.get(Lease, lease, namespace=LEASE_NS).spec.renewTime != renewed, timeout=15,
                 interval=0.05, what="a renewal of the Lease")
        killed = time.monotonic()
        running[RESTARTED].stop(signal.SIGKILL)
        running[RESTARTED] = again
        os.close(go[0])
        wait_for(again.ready, timeout=30, what="the restarted replica ready")
        back_in = time.monotonic() - killed

        mine = [name for name in kinds if owners[name] == RESTARTED]

        def processed(name: str) -> bool:  # a reconcile with a probe result of the restarted process
            return re.search(rf"{re.escape(ns)}/{re.escape(name)} status (up to date|written) \(probe result: "
                             r"(?!none yet)", again.log(100_000)) is not None

        try:
            wait_for(lambda: all(processed(name) for name in mine), timeout=60,
                     what="the restarted replica to reconcile each of its monitors with a probe result")
        except TimeoutError as e:
            raise AssertionError(f"{e}\n{again.log(60)}") from None
        assert running[KEEPER].sample(names.OWNERSHIP_CHANGES_TOTAL, change="gained") == 0, \
            f"the keeper took the restarted replica's monitors: restarted in {back_in:.1f}s, over the Lease's duration"
        _, after = versions(kube, ns)
        changed = {name: [(s.get("conditions"), s.get("lastProbe")) for s in watch.statuses(name)]
                   for name in kinds if after[name] != before[name]}
        assert not changed, f"statuses rewritten by the restart (as the watch saw them): {changed}"
        assert watch.seen() == [], watch.seen()
        assert watch.error is None, watch.error
        written = re.findall(r"\S+ status written \(.*", again.log(100_000))
        assert not written, f"the restarted replica logged status writes: {written}"
    finally:
        if watch is not None:
            watch.close()
        for op in [*running.values(), *waiting]:
            if op.proc is not None:
                op.stop()
