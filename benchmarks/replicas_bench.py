"""Replicas benchmark (issue 9): N operator replicas sharing M annotated Routes through Leases,
compared with one replica holding all of them, in the same invocation.

    .venv/bin/python -m benchmarks.replicas_bench [--monitors 3000] [--replicas 3] [--interval 30s]
        [--steady 180] [--kills 3] [--nice -5] [--out benchmarks/results/replicas.json]

Each phase runs on a fresh control plane (``replicas_fleet``) with one loopback target that logs
every request's time and path (``benchmarks.targets --log``); every Route has its own path.

1. ``single``: one replica (``--member-name solo``); ``replicas``: N replicas, all seeing each
   other before anything is created.
2. Setup: M Routes created already annotated (16 creates in flight); wait until every monitor is
   ready and probed and the writes have stopped for 15 s; API writes per new monitor from the
   replicas' ``route_monitor_kube_requests_total`` (create/update/patch of RouteMonitors, their
   status, PrometheusRules, Events), cross-checked with the apiserver's ``apiserver_request_total``.
3. Steady state over ``--steady`` seconds: CPU seconds and RSS of every replica, kube-apiserver and
   etcd (``/proc``); Lease requests per second (the replicas' counters and the apiserver's); probes
   seen by the target against the schedule.
4. ``replicas`` only: ``--kills`` times, SIGKILL one replica (in turn), and measure per monitor it
   owned the time from the kill to its next probe (the target's log; hits in the first second
   after the kill are the dead replica's last requests), and its missed probe slots over one more
   interval; then restart it and wait until it holds its share again.
5. ``replicas`` only: a rolling update as a Deployment with maxSurge 1 / maxUnavailable 0 does it:
   start a new replica, once it is ready SIGTERM an old one, N times; then two intervals. Per
   monitor: how often the member sets moved it (rendezvous hashing), missed and doubled probe
   slots on its own grid, the longest time without a probe.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

from alert_rules import durations, names
from benchmarks import measure, report
from benchmarks import replicas_math as rm
from benchmarks.operator_bench import NS, create_routes
from benchmarks.replicas_fleet import Fleet, wait_until
from route_monitor.operator.replicas.sharding import owner_of

LEASE_DURATION = 15.0
OBJECTS = ("routemonitors", "prometheusrules", "events")
"""What the operator writes for monitors (the apiserver's view; Lease requests are counted apart)."""


def api_writes(requests: dict[str, float]) -> float:
    return sum(v for k, v in requests.items() if k.split(" ", 1)[0] in ("POST", "PUT", "PATCH", "DELETE"))


def writes_now(fleet: Fleet) -> dict[str, float]:
    out: dict[str, float] = {}
    for samples in fleet.scrapes().values():
        for k, v in rm.writes(samples).items():
            out[k] = out.get(k, 0.0) + v
    return out


def setup(fleet: Fleet, keys: list[str], interval: str) -> dict[str, Any]:
    m, interval_s = len(keys), durations.parse_seconds(interval)
    before, api_before = writes_now(fleet), fleet.api_requests(*OBJECTS)
    t0 = time.time()
    created = create_routes(fleet.cluster, keys, fleet.host, interval)
    created_at = time.time()
    ready_at = wait_until(lambda: sum(measure.total(s, names.MONITORS, state="ready")
                                      for s in fleet.scrapes().values()) == m, 900, "every monitor ready")
    probed_at = wait_until(lambda: all(f"/{k}" in fleet.hits.refresh().hits for k in keys), interval_s + 300,
                           "every monitor probed")
    last = [writes_now(fleet)]
    changed = [time.monotonic()]

    def quiet() -> bool:
        now = writes_now(fleet)
        if now != last[0]:
            last[0], changed[0] = now, time.monotonic()
        return time.monotonic() - changed[0] >= 15

    wait_until(quiet, 300, "the writes to stop")
    wrote = rm.added(before, last[0])
    api_wrote = {k: v for k, v in rm.added(api_before, fleet.api_requests(*OBJECTS)).items()
                 if not k.startswith(("WATCH", "LIST"))}
    first = [fleet.hits.first_after(k, 0) or 0.0 for k in keys]
    return {"create_s": round(created_at - t0, 1), "all_ready_s": round(ready_at - t0, 1),
            "all_probed_s": round(probed_at - t0, 1),
            "annotation_to_first_probe_s": rm.spread([f - created[k] for f, k in zip(first, keys, strict=True)]),
            "writes": wrote, "writes_per_monitor": round(sum(wrote.values()) / m, 3),
            "apiserver_requests": api_wrote, "apiserver_writes_per_monitor": round(api_writes(api_wrote) / m, 3)}


def steady(fleet: Fleet, keys: list[str], interval_s: float, window: float) -> dict[str, Any]:
    pids = fleet.pids()
    leases0 = {k: rm.lease_requests(s) for k, s in fleet.scrapes().items()}
    api0, load0 = fleet.api_requests("leases"), os.getloadavg()[0]
    cpu0, t0 = {k: measure.sample(p) for k, p in pids.items()}, time.time()
    time.sleep(window)
    cpu1, t1 = {k: measure.sample(p) for k, p in pids.items()}, time.time()
    api1, scrapes = fleet.api_requests("leases"), fleet.scrapes()
    w = t1 - t0
    return {
        "window_s": round(w, 1), "loadavg_1m": [round(load0, 1), round(os.getloadavg()[0], 1)],
        "processes": {k: {"cpu_s": round(cpu1[k].cpu_seconds - cpu0[k].cpu_seconds, 1),
                          "cpu_pct": round(100 * (cpu1[k].cpu_seconds - cpu0[k].cpu_seconds) / w, 1),
                          "rss_mib": round(cpu1[k].rss_bytes / 2**20, 1),
                          "owned": measure.total(scrapes[k], names.OWNED_MONITORS) if k in scrapes else None}
                      for k in pids},
        "lease_requests_per_s": round(sum(rm.lease_requests(s) - leases0[k] for k, s in scrapes.items()) / w, 3),
        "apiserver_lease_requests": rm.added(api0, api1),
        "apiserver_lease_requests_per_s": round(sum(rm.added(api0, api1).values()) / w, 3),
        "probes_seen_vs_scheduled": round(fleet.hits.refresh().count(t0, t1) / (len(keys) * w / interval_s), 3),
    }


def kills(fleet: Fleet, keys: list[str], interval_s: float, count: int) -> dict[str, Any]:
    runs, recovery, missed = [], [], []
    for i in range(count):
        live = sorted(fleet.running)
        victim = live[i % len(live)]
        owned = [k for k in keys if owner_of((NS, k), live) == victim]
        api0 = fleet.api_requests(*OBJECTS)
        at = fleet.stop(victim, signal.SIGKILL)
        all_at = wait_until(lambda: all(fleet.hits.refresh().first_after(k, at + 1) for k in owned),  # noqa: B023
                            LEASE_DURATION + 10 + interval_s + 60, f"{victim}'s monitors probed again", every=0.2)
        times = [(fleet.hits.first_after(k, at + 1) or at) - at for k in owned]
        detected = fleet.saw_leave(victim, at)
        time.sleep(interval_s + 1)  # one more interval: the slot after the takeover is seen too
        end = time.time()
        fleet.hits.refresh()
        lost = [rm.missed_slots(fleet.hits.times(k), fleet.hits.last_before(k, at) or at, interval_s, end)[0]
                for k in owned]
        fleet.start(victim)
        back = wait_until(lambda: fleet.settled(keys), 120, f"{victim} to take back its share")
        time.sleep(10)  # its first probes and status writes of the share it took back
        requests = rm.added(api0, fleet.api_requests(*OBJECTS))
        recovery += times
        missed += lost
        runs.append({"victim": victim, "killed_at": dt.datetime.fromtimestamp(at, dt.UTC).strftime("%H:%M:%S.%f")[:-3],
                     "monitors": len(owned), "others_saw_it_gone_s": None if detected is None else round(detected - at, 1),
                     "all_probed_again_s": round(all_at - at, 1), "recovery_s": rm.spread(times),
                     "missed_slots": rm.histogram(lost), "rejoined_in_s": round(back - end, 1),
                     "apiserver_requests": requests,
                     "apiserver_writes_per_move": round(api_writes(requests) / (2 * len(owned)), 2)})
    return {"runs": runs, "recovery_s": rm.spread(recovery), "missed_slots": rm.histogram(missed)}


def rolling(fleet: Fleet, keys: list[str], interval_s: float) -> dict[str, Any]:
    olds = sorted(fleet.running)
    sets, steps = [set(olds)], []
    api0, objects0, start = fleet.api_requests("leases"), fleet.api_requests(*OBJECTS), time.time()
    for i, old in enumerate(olds, 1):
        t = time.time()
        fleet.start(f"new-{i}")
        sets.append(set(fleet.running))
        ready = time.time()
        fleet.stop(old)
        sets.append(set(fleet.running))
        steps.append({"new": f"new-{i}", "ready_s": round(ready - t, 1), "old": old,
                      "old_exited_s": round(time.time() - ready, 1)})
    done = wait_until(lambda: fleet.settled(keys), 120, "the new replicas to hold their shares")
    time.sleep(2 * interval_s)
    end = time.time()
    fleet.hits.refresh()
    moves = rm.owner_moves([(NS, k) for k in keys], sets)
    per: dict[str, list[Any]] = {"moved": [], "unmoved": []}
    for k in keys:
        times = fleet.hits.times(k)
        lost, doubled = rm.missed_slots(times, fleet.hits.last_before(k, start) or start, interval_s, end)
        per["moved" if moves[(NS, k)] else "unmoved"].append((moves[(NS, k)], lost, doubled,
                                                              rm.max_gap(times, start, end)))
    out: dict[str, Any] = {"steps": steps, "settled_s": round(done - start, 1), "window_s": round(end - start, 1),
                           "moves_per_monitor": rm.histogram(moves.values()),
                           "apiserver_lease_requests_per_s": round(sum(rm.added(
                               api0, fleet.api_requests("leases")).values()) / (end - start), 3)}
    requests = rm.added(objects0, fleet.api_requests(*OBJECTS))
    out["apiserver_requests"] = requests
    out["apiserver_writes_per_move"] = round(api_writes(requests) / max(sum(moves.values()), 1), 2)
    for group, rows in per.items():
        out[group] = {"monitors": len(rows), "missed_slots": rm.histogram(r[1] for r in rows),
                      "more_missed_than_moves": sum(1 for r in rows if r[1] > r[0]),
                      "doubled_slots": sum(r[2] for r in rows), "max_gap_s": rm.spread([r[3] for r in rows])}
    return out


def phase(args: argparse.Namespace, label: str, members: list[str], work: Path) -> dict[str, Any]:
    keys = [f"r{i:05d}" for i in range(args.monitors)]
    interval_s = durations.parse_seconds(args.interval)
    fleet = Fleet(work / label)
    result: dict[str, Any] = {"members": members, "loadavg_1m_at_start": round(os.getloadavg()[0], 1)}
    try:
        for member in members:
            fleet.start(member)
        wait_until(lambda: fleet.settled([]), 60, "the replicas to see each other")
        result["setup"] = setup(fleet, keys, args.interval)
        result["steady"] = steady(fleet, keys, interval_s, args.steady)
        if len(members) > 1:
            t0, api0 = time.time(), fleet.api_requests("leases")
            result["kill"] = kills(fleet, keys, interval_s, args.kills)
            result["rolling_update"] = rolling(fleet, keys, interval_s)
            churn = rm.added(api0, fleet.api_requests("leases"))
            result["churn_apiserver_lease_requests_per_s"] = round(sum(churn.values()) / (time.time() - t0), 3)
    finally:
        result["failed_starts"] = fleet.failed_starts
        fleet.close()
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--monitors", type=int, default=3000)
    p.add_argument("--replicas", type=int, default=3)
    p.add_argument("--interval", default="30s")
    p.add_argument("--steady", type=float, default=180, help="steady-state window, seconds")
    p.add_argument("--kills", type=int, default=3)
    p.add_argument("--phases", nargs="+", choices=("single", "replicas"), default=["single", "replicas"])
    p.add_argument("--nice", type=int, default=0, help="nice value of every process of the run (e.g. -5, needs root)")
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/replicas.json"))
    args = p.parse_args(argv)
    if args.nice:  # inherited by the control plane, the target and the replicas
        os.environ["BENCH_NICE"] = str(args.nice)
        os.setpriority(os.PRIO_PROCESS, 0, args.nice)
    work = Path(f"/tmp/rm-replicas-bench-{time.strftime('%Y%m%dT%H%M%S')}")
    started = time.time()
    result: dict[str, Any] = {
        "command": "python -m benchmarks.replicas_bench " + " ".join(argv if argv is not None else sys.argv[1:]),
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"), "machine": report.machine(),
        "kube-apiserver": "1.20.2", "nice": args.nice, "monitors": args.monitors, "interval": args.interval,
        "workdir": str(work)}
    del result["machine"]["blackbox_exporter"]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    members = {"single": ["solo"], "replicas": [f"replica-{i}" for i in range(1, args.replicas + 1)]}
    for label in args.phases:
        result[label] = phase(args, label, members[label], work)
        result["duration_min"] = round((time.time() - started) / 60, 1)
        args.out.write_text(json.dumps(result, indent=2) + "\n")  # after each phase: a late failure keeps the first
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
