"""Operator benchmark (issue 4): N annotated Routes against a real control plane.

    .venv/bin/python -m benchmarks.operator_bench [--routes 1000] [--more 4000] [--interval 10s]
                                                 [--more-interval 60s] [--out benchmarks/results/operator.json]

Starts etcd + kube-apiserver + kube-controller-manager (``tests/support/cluster.py``), one
loopback HTTP target that records when each path is first hit, and ``route-monitor operator``
as the RBAC-restricted user. Then:

1. creates ``--routes`` Routes, already annotated (``routemonitor.io/slo``, ``interval``, a
   distinct ``path`` each), 16 requests in flight; the time each create returns is the
   annotation time;
2. measures, per Route, annotation -> PrometheusRule ADDED (a watch on PrometheusRules) and
   annotation -> first probe (the target's first hit on that path): p50/p90/p99/max;
3. API requests per monitor: the apiserver's own ``apiserver_request_total`` for the
   resources only the operator writes (routemonitors incl. status, prometheusrules, events;
   the benchmark's one watch excluded), and the operator's ``route_monitor_kube_requests_total``;
4. operator RSS once all monitors are probing, then again after ``--more`` more Routes
   (total 1,000 and 5,000 by default).

The first probe of a monitor happens at its schedule's phase (a stable per-monitor offset within
the interval, so probes of many monitors are spread out): annotation -> first probe is therefore
bounded by one interval by design; the reconcile path is the rule latency.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import os
import platform
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from alert_rules import durations, names
from benchmarks.measure import percentile
from tests.support.cluster import ADMIN_TOKEN, Cluster, start_cluster
from tests.support.operator import Operator

NS = "bench"


class FirstHits:
    """A loopback HTTP server (asyncio, own thread) recording the first hit time of each path."""

    def __init__(self) -> None:
        self.first: dict[str, float] = {}
        self.total = 0
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        threading.Thread(target=self._run, daemon=True).start()
        self._ready.wait(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        owner = self

        class Proto(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                self.t = transport
                self.buf = b""

            def data_received(self, data: bytes) -> None:
                self.buf += data
                if b"\r\n\r\n" not in self.buf:
                    return
                path = self.buf.split(b" ", 2)[1].decode()
                owner.first.setdefault(path, time.time())
                owner.total += 1
                self.t.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")  # type: ignore[attr-defined]
                self.t.close()

        server = self._loop.run_until_complete(self._loop.create_server(Proto, "127.0.0.1", 0))
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        self._loop.run_forever()


class RuleWatch:
    """Records when each PrometheusRule in the namespace is first seen (ADDED)."""

    def __init__(self, cluster: Cluster) -> None:
        self.first: dict[str, float] = {}
        self._cluster = cluster
        threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        url = f"{self._cluster.server}/apis/monitoring.coreos.com/v1/namespaces/{NS}/prometheusrules?watch=1"
        try:
            with httpx.Client(verify=False, timeout=None, headers=auth()) as client, \
                    client.stream("GET", url) as r:
                for line in r.iter_lines():
                    event = json.loads(line)
                    if event["type"] == "ADDED":
                        self.first.setdefault(  # generated rules are route-monitor-<monitor>
                            event["object"]["metadata"]["name"].removeprefix(names.RULE_NAME_PREFIX), time.time())
        except httpx.HTTPError:
            return  # the apiserver stopped at the end of the run


def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN_TOKEN}"}


def api(cluster: Cluster, method: str, path: str, body: Any = None) -> httpx.Response:
    return httpx.request(method, cluster.server + path, json=body, verify=False, timeout=30, headers=auth())


def create_routes(cluster: Cluster, names_: list[str], host: str, interval: str) -> dict[str, float]:
    created: dict[str, float] = {}
    client = httpx.Client(verify=False, timeout=30, headers=auth(), limits=httpx.Limits(max_connections=16))

    def one(name: str) -> None:
        body = {"apiVersion": "route.openshift.io/v1", "kind": "Route",
                "metadata": {"name": name, "namespace": NS,
                             "annotations": {names.ANN_SLO: "99.9", names.ANN_INTERVAL: interval,
                                             names.ANN_PATH: f"/{name}"}},
                "spec": {"host": host, "to": {"kind": "Service", "name": name}}}
        r = client.post(f"{cluster.server}/apis/route.openshift.io/v1/namespaces/{NS}/routes", json=body)
        r.raise_for_status()
        created[name] = time.time()

    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, names_))
    client.close()
    return created


def operator_requests(cluster: Cluster) -> dict[str, float]:
    """apiserver_request_total for what only the operator writes, by verb/resource/subresource."""
    text = api(cluster, "GET", "/metrics").text
    out: dict[str, float] = {}
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(kv.split("=", 1) for kv in line[line.index("{") + 1:line.rindex("}")].split(","))
        labels = {k: v.strip('"') for k, v in labels.items()}
        if labels.get("resource") in ("routemonitors", "prometheusrules", "events") and \
                labels.get("verb") not in ("WATCH", "LIST"):
            key = f"{labels['verb']} {labels['resource']}{'/' + labels['subresource'] if labels.get('subresource') else ''}"
            out[key] = out.get(key, 0) + float(line.rsplit(" ", 1)[1])
    return out


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_all(cluster: Cluster, op: Operator) -> dict[str, float]:
    assert op.proc is not None
    pids = {"operator": op.proc.pid} | {name: p.pid for name, p in cluster.procs.items()}
    return {name: cpu_seconds(pid) for name, pid in pids.items()}


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def wait_until(pred: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return
        time.sleep(0.5)
    raise TimeoutError(what)


def stats(values: list[float]) -> dict[str, float | None]:
    return {f"p{q}": percentile(values, q / 100) for q in (50, 90, 99)} | {"max": max(values) if values else None,
                                                                            "n": len(values)}


def run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="rm-operator-bench-"))
    cluster = start_cluster(work)
    target = FirstHits()
    op = Operator(cluster, work / "operator.log")
    result: dict[str, Any] = {}
    try:
        api(cluster, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                    "metadata": {"name": NS}}).raise_for_status()
        op.start()
        assert op.proc is not None
        rss_idle = rss_mib(op.proc.pid)
        rules = RuleWatch(cluster)
        time.sleep(1)
        before = operator_requests(cluster)
        cpu_before = cpu_all(cluster, op)
        first = [f"r{i:05d}" for i in range(args.routes)]
        t0 = time.time()
        created = create_routes(cluster, first, f"127.0.0.1:{target.port}", args.interval)
        create_seconds = time.time() - t0
        interval_s = durations.parse_seconds(args.interval)
        wait_until(lambda: all(n in rules.first for n in first), 300, "all PrometheusRules")
        wait_until(lambda: all(f"/{n}" in target.first for n in first), interval_s + 120, "all first probes")
        time.sleep(5)  # let status writes settle
        after = operator_requests(cluster)
        cpu_after = cpu_all(cluster, op)
        probes_first = target.total
        result["cpu_seconds_first_phase"] = {k: round(cpu_after[k] - cpu_before[k], 1) for k in cpu_after}
        result |= steady_state(cluster, op, target, args.steady, cpu_after,
                               cpu_after["operator"] - cpu_before["operator"], probes_first, args.routes)
        writes = {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) - before.get(k, 0)}
        own = {f"{s.labels['verb']} {s.labels['resource']}": s.value for s in _own_counters(op)}
        result["routes"] = args.routes
        result["interval"] = args.interval
        result["create_seconds"] = round(create_seconds, 2)
        result["annotation_to_rule_seconds"] = stats([rules.first[n] - created[n] for n in first])
        result["annotation_to_first_probe_seconds"] = stats([target.first[f"/{n}"] - created[n] for n in first])
        result["apiserver_requests"] = writes
        result["apiserver_requests_per_monitor"] = round(sum(writes.values()) / args.routes, 2)
        result["operator_kube_requests"] = own
        result["rss_mib"] = {"idle": round(rss_idle, 1), str(args.routes): round(rss_mib(op.proc.pid), 1)}
        if args.more:
            more = [f"r{i:05d}" for i in range(args.routes, args.routes + args.more)]
            created |= create_routes(cluster, more, f"127.0.0.1:{target.port}", args.more_interval)
            wait_until(lambda: all(n in rules.first for n in more), 600, "all PrometheusRules (more)")
            wait_until(lambda: all(f"/{n}" in target.first for n in more),
                       durations.parse_seconds(args.more_interval) + 180, "all first probes (more)")
            time.sleep(5)
            total = args.routes + args.more
            result["rss_mib"][str(total)] = round(rss_mib(op.proc.pid), 1)
            result["more"] = {"routes": args.more, "interval": args.more_interval,
                              "annotation_to_rule_seconds": stats([rules.first[n] - created[n] for n in more])}
            result["monitors_ready"] = op.sample(names.MONITORS, state="ready")
        result["probes_served"] = target.total
    finally:
        op.stop()
        cluster.stop()
    return result


def steady_state(cluster: Cluster, op: Operator, target: FirstHits, seconds: float, cpu_first: dict[str, float],
                 first: float, probes_first: int, routes: int) -> dict[str, Any]:
    """The operator's CPU per probe once nothing changes (only probing), and with it the first
    phase's CPU per new monitor without the probes it made meanwhile (each monitor is probed
    about twice before the phase ends): what reconciling a new monitor costs."""
    if seconds <= 0:
        return {}
    probes0 = target.total
    time.sleep(seconds)
    cpu = cpu_all(cluster, op)
    probes = target.total - probes0
    per_probe = (cpu["operator"] - cpu_first["operator"]) / probes if probes else 0.0
    return {"steady": {"seconds": seconds, "probes": probes, "operator_cpu_ms_per_probe": round(per_probe * 1000, 3),
                       "cpu_seconds": {k: round(cpu[k] - cpu_first[k], 2) for k in cpu}},
            "probes_in_first_phase": probes_first,
            "operator_cpu_ms_per_new_monitor_without_probes": round((first - probes_first * per_probe) / routes * 1000,
                                                                     2)}


def _own_counters(op: Operator) -> list[Any]:
    from prometheus_client.parser import text_string_to_metric_families
    return [s for f in text_string_to_metric_families(op.metrics_text()) for s in f.samples
            if s.name == names.KUBE_REQUESTS_TOTAL]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--routes", type=int, default=1000)
    p.add_argument("--more", type=int, default=4000, help="then this many more Routes, for RSS at the total")
    p.add_argument("--interval", default="10s")
    p.add_argument("--more-interval", default="60s")
    p.add_argument("--steady", type=float, default=20.0,
                   help="then this many seconds of only probing, for the operator's CPU per probe (0: skip)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/operator.json"))
    args = p.parse_args()
    result = run(args)
    result["machine"] = {"cpus": os.cpu_count(), "python": platform.python_version(),
                         "platform": platform.platform(), "kube-apiserver": "1.20.2 (built from Debian's source)"}
    result["date"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
