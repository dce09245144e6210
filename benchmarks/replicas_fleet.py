"""The processes of one replicas-benchmark phase: a fresh control plane, the logging target server,
and ``route-monitor operator`` replicas (``--member-name``), each started, scraped and stopped
by its own pid.

The control plane and the operator processes are the tests' own (``tests/support/cluster.py``,
``tests/support/operator.py``): the operator runs as the RBAC-restricted user of ``deploy/``, its
Leases in the namespace ``deploy/role.yaml`` grants.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

from alert_rules import names
from benchmarks import measure
from benchmarks.measure import Samples
from benchmarks.operator_bench import NS, api
from benchmarks.replicas_math import HitLog, apiserver_requests, member_changes, operator_samples
from route_monitor.operator.replicas.sharding import owner_of
from tests.support.cluster import Cluster, start_cluster
from tests.support.operator import Operator

LEASE_NS = "route-monitor"
SCRAPE_EVERY = 2.0
"""Seconds between two scrapes while waiting: a scrape renders every probe series of a replica."""


def wait_until(pred: Callable[[], bool], timeout: float, what: str, every: float = SCRAPE_EVERY) -> float:
    """Poll ``pred`` until true; returns the wall time it became true; TimeoutError names ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return time.time()
        time.sleep(every)
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}")


def _answers(op: Operator) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{op.metrics_port}/readyz", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


class Fleet:
    def __init__(self, work: Path) -> None:
        self.work = work
        work.mkdir(parents=True, exist_ok=True)
        self.cluster: Cluster = start_cluster(work)
        self.running: dict[str, Operator] = {}
        self.failed_starts: list[dict[str, object]] = []
        self.target: subprocess.Popen[str] | None = None
        try:
            api(self.cluster, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                             "metadata": {"name": NS}}).raise_for_status()
            self.target, ready = measure.start(
                [sys.executable, "-m", "benchmarks.targets", "--ports", "1", "--log", str(work / "hits.log")],
                ready_line=True, log_path=str(work / "targets.log"))
        except BaseException:
            self.close()
            raise
        assert ready is not None and isinstance(ready["http"], list)
        self.host = f"127.0.0.1:{ready['http'][0]}"
        self.hits = HitLog(work / "hits.log")

    def start(self, member: str, timeout: float = 180) -> Operator:
        """Start a replica and wait until it is ready. One that exits while starting is started
        once more and the failure is recorded in :attr:`failed_starts` (with its log's last line)."""
        for attempt in (1, 2):
            op = Operator(self.cluster, self.work / f"{member}-{time.monotonic_ns()}.log",
                          ("--member-name", member, "--lease-namespace", LEASE_NS))
            op.spawn()
            assert op.proc is not None
            deadline = time.monotonic() + timeout
            while op.proc.poll() is None and not _answers(op):
                if time.monotonic() > deadline:
                    op.stop()
                    raise TimeoutError(f"{member} not ready within {timeout:.0f}s (log: {op.log_path})")
                time.sleep(0.1)
            if op.proc.poll() is None:
                self.running[member] = op
                return op
            self.failed_starts.append({"member": member, "attempt": attempt, "at": time.strftime("%H:%M:%S"),
                                       "exit": op.proc.returncode, "last_log_line": op.log(1)})
        raise RuntimeError(f"{member} exited twice while starting (log: {op.log_path})")

    def stop(self, member: str, sig: int = signal.SIGTERM) -> float:
        """Signal one replica and wait for it to exit; returns the wall time the signal was sent."""
        op = self.running.pop(member)
        at = time.time()
        op.stop(sig)
        return at

    def scrape(self, member: str) -> Samples:
        op = self.running[member]
        r = httpx.get(f"http://127.0.0.1:{op.metrics_port}/metrics", timeout=30)
        r.raise_for_status()
        return operator_samples(r.text)

    def scrapes(self) -> dict[str, Samples]:
        return {member: self.scrape(member) for member in self.running}

    def api_requests(self, *resources: str) -> dict[str, float]:
        """The apiserver's count of requests to ``resources``, ``VERB resource code`` -> n."""
        return apiserver_requests(api(self.cluster, "GET", "/metrics").text, resources)

    def saw_leave(self, member: str, since: float) -> float | None:
        """When the last of the running replicas logged a member set without ``member`` (after ``since``)."""
        seen = []
        for op in self.running.values():
            changes = member_changes(op.log_path.read_text(errors="replace").splitlines())
            seen.append(next((t for t, live in changes if t >= since and member not in live), None))
        return None if None in seen else max(t for t in seen if t is not None)

    def pids(self) -> dict[str, int]:
        """The replicas, kube-apiserver and etcd (the membership cost lands on the latter two)."""
        out = {member: op.proc.pid for member, op in self.running.items() if op.proc is not None}
        return out | {name: self.cluster.procs[name].pid for name in ("kube-apiserver", "etcd")}

    def settled(self, keys: list[str]) -> bool:
        """Every replica sees every other, and owns exactly its rendezvous share of ``keys``."""
        live = sorted(self.running)
        for member, samples in self.scrapes().items():
            owned = sum(1 for k in keys if owner_of((NS, k), live) == member)
            if measure.total(samples, names.MEMBERS) != len(live) or \
                    measure.total(samples, names.OWNED_MONITORS) != owned:
                return False
        return True

    def close(self) -> None:
        for member in list(self.running):
            self.stop(member)
        if self.target is not None:
            measure.stop(self.target)
        self.cluster.stop()
