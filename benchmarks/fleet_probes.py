"""The fleet benchmark's readings of one running fleet (``replicas_fleet.Fleet``): CPU and RSS of
the replicas and the control plane, bytes the replicas received from the apiserver, etcd's size
and the stored size of the generated objects, and the wait for a level of monitors to settle.

Scrapes of the replicas ask ``/metrics`` for the few operator series the benchmark reads
(``name[]``): a full page at 20,000 monitors is tens of MiB per replica, and rendering and parsing
it every two seconds would be a load of its own on the machine being measured.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import subprocess
import time
from typing import Any

import httpx

from alert_rules import names
from benchmarks import fleet_math as fm
from benchmarks import measure
from benchmarks.measure import ProcSample, Samples
from benchmarks.operator_bench import NS, RuleWatch, api
from benchmarks.replicas_bench import writes_now
from benchmarks.replicas_fleet import Fleet, wait_until
from benchmarks.replicas_math import OPERATOR_SERIES, operator_samples
from route_monitor.operator.replicas.sharding import owner_of


class LightFleet(Fleet):
    """:class:`Fleet` whose scrapes fetch only the operator series the benchmarks read."""

    def scrape(self, member: str) -> Samples:
        op = self.running[member]
        r = httpx.get(f"http://127.0.0.1:{op.metrics_port}/metrics",
                      params=[("name[]", n) for n in sorted(OPERATOR_SERIES)], timeout=30)
        r.raise_for_status()
        return operator_samples(r.text)

    def settled(self, keys: list[str]) -> bool:
        """Every replica sees every other, and owns its rendezvous share of ``keys`` give or take
        0.2 % (at 10,000 monitors a replica was seen counting a few monitors beyond its share
        for minutes: RESULTS-fleet.md)."""
        live = sorted(self.running)
        for member, samples in self.scrapes().items():
            share = sum(1 for k in keys if owner_of((NS, k), live) == member)
            owned = measure.total(samples, names.OWNED_MONITORS)
            if measure.total(samples, names.MEMBERS) != len(live) or abs(owned - share) > max(2, share / 500):
                return False
        return True

    def all_pids(self) -> dict[str, int]:
        """The replicas, kube-apiserver, etcd and kube-controller-manager (its garbage collector
        watches every kind too)."""
        return self.pids() | {"kube-controller-manager": self.cluster.procs["kube-controller-manager"].pid}

    def apiserver_page(self) -> str:
        return api(self.cluster, "GET", "/metrics").text


def load() -> dict[str, Any]:
    """The 1-minute load average and ``uptime``'s line: the figures come from a shared machine."""
    line = subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    return {"at": time.strftime("%H:%M:%S", time.gmtime()), "loadavg_1m": round(os.getloadavg()[0], 2),
            "uptime": line}


def samples(pids: dict[str, int]) -> dict[str, ProcSample]:
    return {k: measure.sample(p) for k, p in pids.items()}


def cpu_delta(a: dict[str, ProcSample], b: dict[str, ProcSample]) -> dict[str, float]:
    return {k: round(b[k].cpu_seconds - a[k].cpu_seconds, 2) for k in b if k in a}


def rss_mib(s: dict[str, ProcSample]) -> dict[str, float]:
    return {k: round(v.rss_bytes / 2**20, 1) for k, v in s.items()}


def received(pids: dict[str, int]) -> dict[str, int]:
    """Bytes each replica has received on its open connections to the apiserver (``ss``)."""
    text = subprocess.run(["ss", "-tinpH", "state", "established"], capture_output=True, text=True,
                          check=True).stdout
    by_pid = fm.ss_received(text, pids.values())
    return {member: by_pid[pid] for member, pid in pids.items()}


def etcd(fleet: Fleet, path: str, body: dict[str, Any]) -> dict[str, Any]:
    r = httpx.post(f"http://127.0.0.1:{fleet.cluster.etcd_port}{path}", json=body, timeout=60)
    r.raise_for_status()
    return dict(r.json())


def etcd_size(fleet: Fleet) -> dict[str, int]:
    """etcd's database size and the part in use, after compacting its history (as the apiserver
    does every 5 minutes): what the live objects take."""
    fleet.cluster.compact_etcd()
    status = etcd(fleet, "/v3/maintenance/status", {})
    return {"db_bytes": int(status["dbSize"]), "in_use_bytes": int(status.get("dbSizeInUse", 0))}


def stored(fleet: Fleet, prefix: str, sample: int = 200) -> dict[str, float]:
    """Objects under an etcd key prefix: how many, and the mean stored size (key + value) of ``sample``."""
    count = int(etcd(fleet, "/v3/kv/range", fm.prefix_range(prefix) | {"count_only": True}).get("count", 0))
    kvs = etcd(fleet, "/v3/kv/range", fm.prefix_range(prefix) | {"limit": sample}).get("kvs", [])
    sizes = [len(base64.b64decode(kv["key"])) + len(base64.b64decode(kv.get("value", ""))) for kv in kvs]
    return {"count": count, "mean_bytes": round(sum(sizes) / len(sizes)) if sizes else 0}


def api_size(fleet: Fleet, path: str, sample: int = 200) -> float:
    """Mean JSON size of an object as the API returns it (a list of ``sample``)."""
    items = api(fleet.cluster, "GET", f"{path}?limit={sample}").json()["items"]
    return round(sum(len(json.dumps(i, separators=(",", ":"))) for i in items) / max(len(items), 1))


class RuleTimes(RuleWatch):
    """:class:`RuleWatch` that watches again when its stream ends: at 10,000 monitors on a busy
    machine it was seen gone within minutes (no socket left, no error logged). A rule added while it was away is
    timed when the new watch lists it (so a latency can only be overstated); ``rewatches`` counts."""

    rewatches = 0

    def _run(self) -> None:
        while True:
            with contextlib.suppress(Exception):
                super()._run()
            self.rewatches += 1
            time.sleep(1)


class Quiet:
    """True once the replicas' own write counters have not moved for ``seconds``; keeps the CPU
    sample taken when they last moved (where a burst's work ends)."""

    def __init__(self, fleet: LightFleet, seconds: float = 15.0) -> None:
        self.fleet, self.seconds = fleet, seconds
        self.last, self.changed, self.cpu = writes_now(fleet), time.time(), samples(fleet.all_pids())

    def __call__(self) -> bool:
        now = writes_now(self.fleet)
        if now != self.last:
            self.last, self.changed, self.cpu = now, time.time(), samples(self.fleet.all_pids())
        return time.time() - self.changed >= self.seconds


def settle(fleet: LightFleet, rules: RuleWatch, keys: list[str], all_keys: list[str], timeout: float) -> Quiet:
    """Wait until every one of ``keys`` has its PrometheusRule and has been probed, every replica
    owns its share of ``all_keys``, and the writes have stopped for 15 s."""
    wait_until(lambda: all(k in rules.first for k in keys), timeout, "every PrometheusRule")
    wait_until(lambda: all(f"/{k}" in fleet.hits.refresh().hits for k in keys), timeout, "every monitor probed")
    wait_until(lambda: fleet.settled(all_keys), timeout, "every replica holding its share", every=5)
    quiet = Quiet(fleet)
    wait_until(quiet, timeout, "the writes to stop")
    return quiet
