"""Client CPU per API write (issue 16): lightkube on httpx's own transport, lightkube on the
operator's aiohttp transport (``route_monitor.kube.transport``), and the operator's direct
path over that pool (``route_monitor.kube.rest``, what ``KubeWriter`` sends): same writes, same run.

    .venv/bin/python -m benchmarks.kube_writes [--n 500]

Starts the test control plane (``tests/support/cluster.py``) and, in this process, makes the
writes a new monitor costs: create a generated RouteMonitor, create its PrometheusRule (~11 KiB,
as ``plan.rule_object`` renders it) and patch its status, ``--n`` times each with 8 in flight (the
operator's reconcile workers). Reports this process's CPU (user + system, so the kernel's share
of loopback TLS writes counts) per monitor for each client, and the apiserver's CPU meanwhile.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from lightkube import AsyncClient, KubeConfig
from lightkube.types import PatchType

from alert_rules import names
from benchmarks.operator_bench import NS, api, cpu_seconds
from route_monitor.kube import rest, transport
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.kube.writer import KubeWriter, PrometheusRule, RouteMonitor
from route_monitor.operator import plan
from route_monitor.spec.monitor import parse_routemonitor
from route_monitor.targets.annotations import monitor_manifest
from tests.support.cluster import start_cluster


def _route(name: str) -> dict[str, Any]:
    return {"apiVersion": "route.openshift.io/v1", "kind": "Route",
            "metadata": {"name": name, "namespace": NS, "uid": f"uid-{name}",
                         "annotations": {names.ANN_SLO: "99.9", names.ANN_INTERVAL: "10s", names.ANN_PATH: f"/{name}"}},
            "spec": {"host": "127.0.0.1:9", "to": {"kind": "Service", "name": name}}}


STATUS = {"observedGeneration": 1, "url": "http://127.0.0.1:9/", "conditions": [
    {"type": "Ready", "status": "True", "reason": "Ready", "message": "probing and alerting rules applied"}]}


class _Lightkube:
    """The same three writes through lightkube's models (what ``KubeWriter`` sent before it went direct)."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def create_monitor(self, manifest: dict[str, Any]) -> dict[str, Any]:
        return dict((await self._client.create(RouteMonitor.from_dict(manifest))).to_dict())  # type: ignore[no-untyped-call]

    async def create_rule(self, rule: dict[str, Any]) -> None:
        await self._client.create(PrometheusRule.from_dict(rule))

    async def patch_status(self, namespace: str, name: str, status: dict[str, Any]) -> None:
        await self._client.patch(RouteMonitor.Status, name, {"status": status}, namespace=namespace,
                                 patch_type=PatchType.MERGE, field_manager=names.FIELD_MANAGER)


async def _writes(kube: Any, prefix: str, n: int) -> None:
    async def one(i: int) -> None:
        name = f"{prefix}{i:05d}"
        manifest = monitor_manifest(_route(name), "route")
        monitor = await kube.create_monitor(manifest)
        rule = plan.rule_object(parse_routemonitor(monitor), monitor)
        await kube.create_rule(rule)
        await kube.patch_status(NS, name, STATUS)

    sem = asyncio.Semaphore(8)

    async def bounded(i: int) -> None:
        async with sem:
            await one(i)

    await asyncio.gather(*(bounded(i) for i in range(n)))


async def _measure(config: KubeConfig, prefix: str, n: int, path: str, apiserver_pid: int) -> dict[str, float]:
    from prometheus_client import CollectorRegistry
    pool = transport.for_config(config) if path != "httpx" else None
    client = AsyncClient(config=config, field_manager=names.FIELD_MANAGER, transport=pool)
    kube: Any = _Lightkube(client)
    if path == "direct":
        assert pool is not None
        direct = rest.for_config(config, pool.session)
        assert direct is not None
        kube = KubeWriter(client, OperatorMetrics(CollectorRegistry()), rest=direct)
    await _writes(kube, prefix + "w", 20)  # warm: connections, imports
    cpu0, api0, t0 = time.process_time(), cpu_seconds(apiserver_pid), time.monotonic()
    await _writes(kube, prefix, n)
    cpu1, api1, t1 = time.process_time(), cpu_seconds(apiserver_pid), time.monotonic()
    await client.close()
    return {"client_cpu_ms_per_monitor": round((cpu1 - cpu0) / n * 1000, 2),
            "apiserver_cpu_ms_per_monitor": round((api1 - api0) / n * 1000, 2),
            "seconds": round(t1 - t0, 2)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=500)
    p.add_argument("--rounds", type=int, default=2)
    args = p.parse_args()
    work = Path(tempfile.mkdtemp(prefix="rm-kube-writes-"))
    cluster = start_cluster(work)
    try:
        api(cluster, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": NS}}).raise_for_status()
        config = KubeConfig.from_file(cluster.admin_kubeconfig)
        pid = cluster.procs["kube-apiserver"].pid
        out: dict[str, Any] = {"n": args.n, "load_average": os.getloadavg()}
        for r in range(args.rounds):  # alternate, so drifting load hits both alike
            for label in ("httpx", "aiohttp", "direct"):
                out[f"{label} round {r + 1}"] = asyncio.run(_measure(config, f"{label[0]}{r}-", args.n, label, pid))
        print(json.dumps(out, indent=2))
    finally:
        cluster.stop()


if __name__ == "__main__":
    main()
