"""The cluster at 20,000 monitors with three operator replicas, on the test control plane.

    nice -n 5 .venv/bin/python -m benchmarks.fleet_20k [--monitors 20000] [--burst 1000] [--level 10000]
        [--interval 120s] [--services 50000] [--steady 60] [--out benchmarks/results/fleet-20k.json]

One fresh control plane (``replicas_fleet.Fleet``), one loopback target logging every request's
path (a distinct path per Route), three ``route-monitor operator --member-name`` replicas. A long
probe interval (120 s: 167 probes/s for 20,000; at 300 s every monitor says its 1h/5m page's 5m
window may hold no probe) keeps probing light on a 2-core machine, so what is measured is the
cluster side. In order, each phase recording the load (``uptime``):

1. idle: every replica's RSS with no monitor, and the import floor (``benchmarks.import_floor``);
2. ``--level`` annotated Routes, settled (rules, first probes, shares, writes stopped for 15 s):
   RSS per replica; then up to ``--monitors - --burst``, settled; the CPU of 30 s of only probing;
3. a burst of ``--burst`` more: annotation -> PrometheusRule, and the CPU of the replicas,
   kube-apiserver, etcd and kube-controller-manager until the burst's last write, also net of
   the probing rate measured just before; RSS per replica once settled, and the slope;
4. ``--steady`` seconds: bytes each replica received from the apiserver (``ss``), watch events
   and bytes the apiserver sent per kind and watcher, API requests per second;
5. etcd: database size in use per 1,000 monitors (history compacted) at 0, ``--level`` and
   ``--monitors``, and the stored and API size of each generated object;
6. ``--services`` unannotated Services (headless, 10 namespaces): the replicas' CPU and RSS for them;
7. a rolling restart: each replica in turn SIGTERMed, started again under its name, waited for
   until every replica holds its share; the time until its monitors are probed by the others and
   by it again; over one more interval, per monitor, missed and doubled slots and the longest gap;
   RSS per replica after it (a restarted replica loads the whole cluster at once).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

from alert_rules import durations, names
from benchmarks import fleet_math as fm
from benchmarks import fleet_probes as fp
from benchmarks import measure, report, world_memory
from benchmarks import replicas_math as rm
from benchmarks.operator_bench import NS, RuleWatch, api, auth, create_routes
from benchmarks.replicas_fleet import wait_until
from route_monitor.operator.replicas.sharding import owner_of

MEMBERS = ("replica-1", "replica-2", "replica-3")
SERVICE_NAMESPACES = 10


def import_floor() -> float:
    """RSS (MiB) of a fresh Python once it has imported what the operator loads."""
    out = subprocess.run([sys.executable, "-m", "benchmarks.import_floor"], capture_output=True, text=True,
                         check=True, cwd=measure.REPO).stdout
    return float(out.strip().splitlines()[-1].rsplit("=", 1)[1])


def level(fleet: fp.LightFleet, rules: RuleWatch, keys: list[str], done: list[str], interval: str) -> dict[str, Any]:
    """Create ``keys`` (annotated Routes) on top of ``done`` and wait until everything settles."""
    t0 = time.time()
    created = create_routes(fleet.cluster, keys, fleet.host, interval)
    fp.settle(fleet, rules, keys, done + keys, 1800)
    s = fp.samples(fleet.all_pids())
    return {"created": len(keys), "create_s": round(max(created.values()) - t0, 1),
            "settled_s": round(time.time() - t0, 1), "rss_mib": fp.rss_mib(s), "load": fp.load(),
            "annotation_to_rule_s": rm.spread([rules.first[k] - created[k] for k in keys])}


def burst(fleet: fp.LightFleet, rules: RuleWatch, keys: list[str], done: list[str], interval: str,
          probing_cpu_per_s: dict[str, float]) -> dict[str, Any]:
    pids = fleet.all_pids()
    cpu0, t0, load0 = fp.samples(pids), time.time(), fp.load()
    created = create_routes(fleet.cluster, keys, fleet.host, interval)
    quiet = fp.settle(fleet, rules, keys, done + keys, 900)
    window = quiet.changed - t0
    cpu = fp.cpu_delta(cpu0, quiet.cpu)
    net = {k: round(v - probing_cpu_per_s.get(k, 0.0) * window, 2) for k, v in cpu.items()}
    ops = sum(v for k, v in net.items() if k in MEMBERS)
    plane = sum(v for k, v in net.items() if k not in MEMBERS)
    return {"monitors": len(keys), "on_top_of": len(done), "create_s": round(max(created.values()) - t0, 1),
            "annotation_to_rule_s": rm.spread([rules.first[k] - created[k] for k in keys]),
            "window_s": round(window, 1), "cpu_s": cpu, "cpu_s_net_of_probing": net,
            "operators_share_of_control_plane_cpu": round(ops / (ops + plane), 3) if ops + plane else None,
            "operator_cpu_ms_per_new_monitor": round(1000 * ops / len(keys), 2),
            "load": [load0, fp.load()]}


def probing_rate(fleet: fp.LightFleet, seconds: float) -> dict[str, float]:
    pids = fleet.all_pids()
    a = fp.samples(pids)
    time.sleep(seconds)
    return {k: round(v / seconds, 4) for k, v in fp.cpu_delta(a, fp.samples(pids)).items()}


def steady(fleet: fp.LightFleet, keys: list[str], interval_s: float, seconds: float) -> dict[str, Any]:
    pids, members = fleet.all_pids(), {m: fleet.running[m].proc.pid for m in fleet.running}  # type: ignore[union-attr]
    page0, own0, bytes0 = fleet.apiserver_page(), fleet.scrapes(), fp.received(members)
    cpu0, t0, load0 = fp.samples(pids), time.time(), fp.load()
    time.sleep(seconds)
    cpu1, t1 = fp.samples(pids), time.time()
    page1, own1, bytes1 = fleet.apiserver_page(), fleet.scrapes(), fp.received(members)
    w = t1 - t0
    w0, w1 = fm.watch_counts(page0), fm.watch_counts(page1)
    watches = {kind: {"events_per_s": round((c["events"] - w0.get(kind, {}).get("events", 0.0)) / w, 3),
                      "bytes_per_s": round((c["bytes"] - w0.get(kind, {}).get("bytes", 0.0)) / w, 1),
                      "watchers": c["watchers"]} for kind, c in w1.items()}
    return {"window_s": round(w, 1), "load": [load0, fp.load()],
            "cpu_pct": {k: round(100 * v / w, 2) for k, v in fp.cpu_delta(cpu0, cpu1).items()},
            "rss_mib": fp.rss_mib(cpu1),
            "bytes_received_per_s": {m: round((bytes1[m] - bytes0[m]) / w, 1) for m in members},
            "apiserver_watch": {k: v for k, v in watches.items() if v["events_per_s"] > 0},
            "apiserver_requests_per_s": fm.rate(fm.all_requests(page0), fm.all_requests(page1), w),
            "operator_requests_per_s": {m: round((measure.total(own1[m], names.KUBE_REQUESTS_TOTAL)
                                                  - measure.total(own0[m], names.KUBE_REQUESTS_TOTAL)) / w, 3)
                                        for m in members},
            "probes_seen_vs_scheduled": round(fleet.hits.refresh().count(t0, t1) / (len(keys) * w / interval_s), 3)}


def objects(fleet: fp.LightFleet) -> dict[str, Any]:
    group = names.API_VERSION.split("/")[0]
    prefixes = {"route": f"/registry/route.openshift.io/routes/{NS}/",
                "routemonitor": f"/registry/{group}/{names.PLURAL}/{NS}/",
                "prometheusrule": f"/registry/monitoring.coreos.com/prometheusrules/{NS}/"}
    paths = {"route": f"/apis/route.openshift.io/v1/namespaces/{NS}/routes",
             "routemonitor": f"/apis/{names.API_VERSION}/namespaces/{NS}/{names.PLURAL}",
             "prometheusrule": f"/apis/monitoring.coreos.com/v1/namespaces/{NS}/prometheusrules"}
    return {k: fp.stored(fleet, p) | {"api_json_bytes": fp.api_size(fleet, paths[k])} for k, p in prefixes.items()}


def create_services(fleet: fp.LightFleet, n: int) -> float:
    """``n`` Services shaped as ``world_memory`` makes them (headless: no address to allocate)."""
    for i in range(SERVICE_NAMESPACES):
        api(fleet.cluster, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                          "metadata": {"name": f"svc{i}"}}).raise_for_status()
    client = httpx.Client(verify=False, timeout=60, headers=auth(), limits=httpx.Limits(max_connections=16))

    def one(i: int) -> None:
        body = world_memory.service(i)
        ns = f"svc{i % SERVICE_NAMESPACES}"
        body["metadata"] = {k: body["metadata"][k] for k in ("name", "labels", "annotations")} | {"namespace": ns}
        body["spec"] = {k: v for k, v in body["spec"].items() if not k.startswith("clusterIP")} | {"clusterIP": "None"}
        del body["status"]
        client.post(f"{fleet.cluster.server}/api/v1/namespaces/{ns}/services", json=body).raise_for_status()

    t0 = time.time()
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(one, range(n)))
    client.close()
    return time.time() - t0


def services(fleet: fp.LightFleet, n: int, probing_cpu_per_s: dict[str, float]) -> dict[str, Any]:
    pids = fleet.all_pids()
    cpu0, t0, load0 = fp.samples(pids), time.time(), fp.load()
    took = create_services(fleet, n)
    last = [fp.samples(pids)]

    def drained() -> bool:
        """Every replica's CPU over the last poll back to its probing rate (+ 0.1 core)."""
        now, before = fp.samples(pids), last[0]
        last[0] = now
        return all(now[m].cpu_seconds - before[m].cpu_seconds
                   <= (probing_cpu_per_s[m] + 0.1) * (now[m].at - before[m].at) for m in MEMBERS)

    wait_until(drained, 300, "the replicas to work off the Services", every=5)
    cpu1, w = fp.samples(pids), time.time() - t0
    cpu = fp.cpu_delta(cpu0, cpu1)
    net = {k: round(v - probing_cpu_per_s.get(k, 0.0) * w, 2) for k, v in cpu.items()}
    return {"services": n, "create_s": round(took, 1), "window_s": round(w, 1), "cpu_s": cpu, "cpu_s_net_of_probing": net,
            "rss_mib_before": fp.rss_mib(cpu0), "rss_mib_after": fp.rss_mib(cpu1),
            "per_service": {m: {"cpu_us": round(1e6 * net[m] / n, 1),
                                "rss_bytes": round((cpu1[m].rss_bytes - cpu0[m].rss_bytes) / n)} for m in MEMBERS},
            "load": [load0, fp.load()]}


def rolling_restart(fleet: fp.LightFleet, keys: list[str], interval_s: float) -> dict[str, Any]:
    start, steps = time.time(), []
    for member in MEMBERS:
        live = sorted(fleet.running)
        owned = [k for k in keys if owner_of((NS, k), live) == member]
        at = fleet.stop(member)  # returns once it has exited; the others may take over before that
        exited = time.time()
        others = wait_until(lambda: all(fleet.hits.refresh().first_after(k, at) for k in owned),  # noqa: B023
                            300, f"{member}'s monitors probed by the others", every=1)
        fleet.start(member, timeout=600)
        ready = time.time()
        settled = wait_until(lambda: fleet.settled(keys), 600, f"{member} holding its share again", every=5)
        back = wait_until(lambda: all(fleet.hits.refresh().first_after(k, ready) for k in owned),  # noqa: B023
                          300, f"{member}'s monitors probed after it came back", every=1)
        steps.append({"member": member, "monitors": len(owned), "sigterm_to_exit_s": round(exited - at, 1),
                      "sigterm_to_all_probed_s": round(others - at, 1),
                      "start_to_ready_s": round(ready - others, 1), "ready_to_share_settled_s": round(settled - ready, 1),
                      "ready_to_all_probed_again_s": round(back - ready, 1), "load": fp.load()})
    done = time.time()
    time.sleep(interval_s)  # one more interval: every monitor's slots after the restart are seen
    end = time.time()
    fleet.hits.refresh()
    missed, doubled, gaps = [], 0, []
    for k in keys:
        times = fleet.hits.times(k)
        lost, twice = rm.missed_slots(times, fleet.hits.last_before(k, start) or start, interval_s, end)
        missed.append(lost)
        doubled += twice
        gaps.append(rm.max_gap(times, start, end))
    return {"steps": steps, "restart_s": round(done - start, 1), "window_s": round(end - start, 1),
            "missed_slots": rm.histogram(missed), "doubled_slots": doubled, "max_gap_s": rm.spread(gaps),
            "rss_mib_after": fp.rss_mib(fp.samples(fleet.all_pids()))}


def run(args: argparse.Namespace, result: dict[str, Any], save: Any) -> None:
    keys = [f"r{i:05d}" for i in range(args.monitors)]
    lvl, head, tail = args.level, keys[:args.monitors - args.burst], keys[args.monitors - args.burst:]
    interval_s = durations.parse_seconds(args.interval)
    fleet = fp.LightFleet(Path(result["workdir"]))
    try:
        for member in MEMBERS:
            fleet.start(member)
        wait_until(lambda: fleet.settled([]), 60, "the replicas to see each other")
        time.sleep(5)
        result["idle"] = {"rss_mib": fp.rss_mib(fp.samples(fleet.all_pids())), "import_floor_mib": import_floor(),
                          "etcd": fp.etcd_size(fleet), "load": fp.load()}
        rules = fp.RuleTimes(fleet.cluster)
        save()
        result["level_1"] = level(fleet, rules, head[:lvl], [], args.interval) | {"etcd": fp.etcd_size(fleet)}
        save()
        result["level_2"] = level(fleet, rules, head[lvl:], head[:lvl], args.interval)
        result["probing_cpu_per_s"] = rate = probing_rate(fleet, 30)
        save()
        result["burst"] = burst(fleet, rules, tail, head, args.interval, rate)
        time.sleep(10)
        result["full"] = {"monitors": len(keys), "rss_mib": fp.rss_mib(fp.samples(fleet.all_pids())),
                          "owned": {m: measure.total(s, names.OWNED_MONITORS) for m, s in fleet.scrapes().items()},
                          "etcd": fp.etcd_size(fleet), "load": fp.load()}
        save()
        result["rule_rewatches"] = rules.rewatches
        result["steady"] = steady(fleet, keys, interval_s, args.steady)
        result["objects"] = objects(fleet)
        save()
        if args.services:
            result["services"] = services(fleet, args.services, rate)
            save()
        result["rolling_restart"] = rolling_restart(fleet, keys, interval_s)
    finally:
        result["failed_starts"] = fleet.failed_starts
        fleet.close()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--monitors", type=int, default=20_000)
    p.add_argument("--burst", type=int, default=1_000)
    p.add_argument("--level", type=int, default=10_000, help="the first level, where RSS is read")
    p.add_argument("--interval", default="120s")
    p.add_argument("--services", type=int, default=50_000)
    p.add_argument("--steady", type=float, default=60, help="steady-state window, seconds")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/fleet-20k.json"))
    args = p.parse_args(argv)
    started = time.time()
    result: dict[str, Any] = {
        "command": "python -m benchmarks.fleet_20k " + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), "machine": report.machine(),
        "kube-apiserver": "1.20.2", "replicas": len(MEMBERS), "monitors": args.monitors, "interval": args.interval,
        "workdir": f"/tmp/rm-fleet-bench-{time.strftime('%Y%m%dT%H%M%S')}", "load_at_start": fp.load()}
    del result["machine"]["blackbox_exporter"]
    args.out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after each phase: a late failure keeps what was measured
        result["duration_min"] = round((time.time() - started) / 60, 1)
        args.out.write_text(json.dumps(result, indent=2) + "\n")

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a stopped run still stops its processes
    try:
        run(args, result, save)
    except Exception as e:
        result["error"] = f"{type(e).__name__}: {e}"
        raise
    finally:
        save()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
