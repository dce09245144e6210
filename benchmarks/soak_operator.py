"""The soak's operator path: ``route-monitor operator`` on a real control plane with N RouteMonitors.

Starts etcd + kube-apiserver + kube-controller-manager (``tests/support/cluster.py``; or uses a
running one), ``route-monitor operator --allow-url-targets`` as a subprocess under the
RBAC-restricted user (``tests/support/operator.py``), creates the namespace ``soak`` and N
RouteMonitors with URL targets (16 creates in flight), and waits until the operator reports
every one ``ready`` (``route_monitor_monitors{state="ready"}``). The side counters sampled with
the process are the apiserver's own count of non-read requests to what the operator writes
(RouteMonitors and their status, PrometheusRules, Events: ``apiserver_request_total``; nothing
else writes them during the soak).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx

from alert_rules import names
from benchmarks.operator_bench import api, auth, operator_requests
from benchmarks.soak import probe_timeout
from benchmarks.soak_sample import Soaked
from tests.support.cluster import Cluster, start_cluster
from tests.support.operator import Operator

NS = "soak"
READS = ("GET", "LIST", "WATCH")


def monitor(name: str, url: str, interval: str) -> dict[str, object]:
    return {"apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": name, "namespace": NS},
            "spec": {"target": {"url": url}, "probe": {"interval": interval, "timeout": probe_timeout(interval), "warmup": "0s"},
                     "slo": {"availability": "99.9"}}}


def create_monitors(cluster: Cluster, urls: list[str], interval: str) -> None:
    path = f"{cluster.server}/apis/{names.API_VERSION}/namespaces/{NS}/{names.PLURAL}"
    with httpx.Client(verify=False, timeout=60, headers=auth(),
                      limits=httpx.Limits(max_connections=16)) as client, ThreadPoolExecutor(16) as pool:
        def one(i: int) -> None:
            client.post(path, json=monitor(f"soak-{i:05d}", urls[i], interval)).raise_for_status()

        list(pool.map(one, range(len(urls))))


def api_writes(cluster: Cluster) -> float:
    """The apiserver's count of writes to RouteMonitors (and status), PrometheusRules and Events."""
    return sum(v for key, v in operator_requests(cluster).items() if key.split(" ", 1)[0] not in READS)


def ready_monitors(op: Operator) -> float:
    return op.sample(names.MONITORS, state="ready") or 0.0


@contextmanager
def operator_soak(urls: list[str], interval: str, work: Path | None = None,
                  cluster: Cluster | None = None, args: tuple[str, ...] = (), create_first: bool = False,
                  setup_timeout: float = 1200) -> Iterator[Soaked]:
    """The operator (with ``args`` added) probing one RouteMonitor per URL in namespace ``soak``,
    all of them ready; stopped on exit (and the control plane, if this started it). The monitors
    are created once the operator is ready, or with ``create_first`` before it starts (it then
    loads them all at start-up)."""
    work = work or Path(tempfile.mkdtemp(prefix="route-monitor-soak-operator-"))
    own = cluster is None
    plane = cluster or start_cluster(work)
    op = Operator(plane, work / "operator.log", ("--allow-url-targets", "--max-concurrency", "500", *args))
    try:
        r = api(plane, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": NS}})
        if r.status_code != 409:
            r.raise_for_status()
        if not create_first:
            op.start(timeout=120)
        t0 = time.monotonic()
        create_monitors(plane, urls, interval)
        print(f"# {len(urls)} RouteMonitors created in {time.monotonic() - t0:.0f} s", flush=True)
        if create_first:
            op.start(timeout=setup_timeout)
        assert op.proc is not None
        while ready_monitors(op) < len(urls):
            if time.monotonic() - t0 > setup_timeout:
                raise TimeoutError(f"{ready_monitors(op):.0f} of {len(urls)} monitors ready (log: {op.log_path})")
            time.sleep(5)
        print(f"# all ready {time.monotonic() - t0:.0f} s after the first create; apiserver writes so far: "
              f"{api_writes(plane):.0f}", flush=True)

        yield Soaked(pid=op.proc.pid, metrics_url=f"http://127.0.0.1:{op.metrics_port}/metrics",
                     counters=lambda: {"api_writes": api_writes(plane)})
    finally:
        if op.proc is not None:
            op.stop()
        if own:
            plane.stop()
