"""Run the engine benchmark: our engine and blackbox_exporter, one after the other, in the same
invocation, against the same local targets at the same rates. Loopback only, bounded in time.

    python -m benchmarks.run                      # full set (about 16 minutes)
    python -m benchmarks.run --quick              # smoke run (about 1 minute, small numbers)
    python -m benchmarks.run --only 5k@30s        # one scenario
    python -m benchmarks.run --ours engine        # the engine alone instead of `route-monitor standalone`

Scenarios: ``1k@30s`` and ``5k@30s`` (1,000 and 5,000 targets, 30 s interval), ``https-5k@30s``
(the same over TLS, certificates verified against a trustme CA), ``http-1k@10s``,
``https-ecdsa-1k@10s`` and ``https-rsa-1k@10s`` (1,000 targets at 100 probes/s over plain HTTP and
over TLS with ECDSA P-256 and RSA-2048 certificates behind an intermediate CA, as public CAs serve
them; ``--only tls`` runs these three), ``site-https-rsa-1k@5s`` and ``site-https-ecdsa-1k@5s``
(``--only site``: one host:port, 200 probes/s, the CA trusted through ``SSL_CERT_FILE`` on both
sides, the exporter also with a module ``ca_file``), and ``max`` (5,000 targets,
the interval shortened step by step until a side no longer keeps up: achieved rate below 95 %
of the schedule, lag p99 at or above 250 ms, or skipped probes). Writes
``benchmarks/results/latest.json`` and ``latest.md`` (the table used in RESULTS.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import blackbox, measure, ours, report, targets

HERE = Path(__file__).resolve().parent
LAG_GOAL_S = 0.250
PLAN: dict[str, tuple[int, str, float | None]] = {
    # name: (targets, targets.py scheme key, interval in s; None: --interval)
    "1k@30s": (1000, "http", None), "5k@30s": (5000, "http", None), "https-5k@30s": (5000, "https", None),
    "http-1k@10s": (1000, "http", 10.0), "https-ecdsa-1k@10s": (1000, "https-ecdsa", 10.0),
    "https-rsa-1k@10s": (1000, "https-rsa", 10.0),
}
TLS_SET = ("http-1k@10s", "https-ecdsa-1k@10s", "https-rsa-1k@10s")
SITE_SET = ("site-https-rsa-1k@5s", "site-https-ecdsa-1k@5s")
"""The HTTPS setup of a real deployment: one host:port for all 1,000 monitors (200 probes/s), a
server answering one request per connection with two TLS 1.3 session tickets, and both sides
trusting the CA through ``SSL_CERT_FILE`` (the exporter's system pool, loaded once, instead of a
module ``ca_file`` it reads again for every probe). ``--only site`` runs both."""
PLAN.update({"site-https-rsa-1k@5s": (1000, "https-rsa", 5.0), "site-https-ecdsa-1k@5s": (1000, "https-ecdsa", 5.0)})


def sustained(row: dict[str, Any]) -> bool:
    lag = row.get("lag_p99_s") if row["engine"].startswith("route-monitor") else row.get("latency_p99_s")
    return (row["achieved_per_s"] >= 0.95 * row["scheduled_per_s"] and lag is not None and lag < LAG_GOAL_S
            and not row.get("skipped") and row["success_ratio"] > 0.99)


async def pair(name: str, urls: list[str], interval: float, *, warmup: float, measure_s: float, work: Path,
               ca: str | None, sides: tuple[str, ...] = ("ours", "blackbox"), mode: str = "standalone",
               baseline: Path | None = None, trust: str = "module") -> list[dict[str, Any]]:
    rows = []
    for side in sides:
        load_before = Path("/proc/loadavg").read_text().split()[0]
        print(f"[{time.strftime('%H:%M:%S')}] {name}: {side}, {len(urls)} targets every {interval:g}s "
              f"({len(urls) / interval:.0f}/s), load {load_before}", file=sys.stderr, flush=True)
        workdir = work / name.replace("@", "_").replace("/", "") / side
        if side in ("ours", "baseline"):
            row = await ours.run(targets=urls, interval=interval, warmup=warmup, measure_s=measure_s,
                                 workdir=workdir, ca_file=ca, mode=mode, root=baseline if side == "baseline" else None)
        else:  # "blackbox", or "blackbox-cafile": the CA in the module's tls_config (the older scenarios' way)
            row = await blackbox.run(targets=urls, interval=interval, warmup=warmup, measure_s=measure_s,
                                     workdir=workdir, ca_file=ca, trust="module" if side == "blackbox-cafile" else trust)
            if side == "blackbox-cafile":
                row["engine"] = "blackbox_exporter (ca_file)"  # the ratios compare with the other exporter row
        row.update(scenario=name, targets=len(urls), interval_s=interval, loadavg_before=float(load_before))
        row["sustained"] = sustained(row)
        print(f"    {report.short(row)}", file=sys.stderr, flush=True)
        rows.append(row)
    return rows


async def scenarios(ready: dict[str, Any], args: argparse.Namespace, work: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    w, m = args.warmup, args.measure
    for name, (count, scheme, interval) in PLAN.items():
        if args.only and name not in args.only and not (name in TLS_SET and "tls" in args.only) \
                and not (name in SITE_SET and "site" in args.only):
            continue
        if not args.only and name in SITE_SET:
            continue  # not part of the full set's tables; `--only site`
        if args.quick:
            count //= 10
        site = name in SITE_SET
        interval = (args.site_interval if site else interval) or args.interval
        urls = targets.target_urls(ready, count, scheme=scheme, ports_used=1 if site else None)
        ca = ready["ca"] if scheme.startswith("https") else None
        sides: tuple[str, ...] = ("ours", "blackbox", "baseline") if args.baseline else ("ours", "blackbox")
        if site and not args.no_cafile:
            sides += ("blackbox-cafile",)  # what trusting through the module's ca_file adds to the exporter
        rows += await pair(name, urls, interval, warmup=w, measure_s=m, work=work, ca=ca, mode=args.ours,
                           sides=sides, baseline=args.baseline, trust="env" if site else "module")
    if not args.only or "max" in args.only:
        count = 500 if args.quick else 5000
        urls = targets.target_urls(ready, count)
        for side in ("ours", "blackbox"):
            for rate in args.rates:
                row = (await pair(f"max@{rate:g}/s", urls, count / rate, warmup=args.step_warmup,
                                  measure_s=args.step_measure, work=work, ca=None, sides=(side,),
                                  mode=args.ours))[0]
                rows.append(row)
                if not row["sustained"]:
                    break
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--only", action="append",
                   help="run only this scenario (repeatable): " + ", ".join(PLAN) + ", max; tls = the three @10s; site = the two site-https")
    p.add_argument("--interval", type=float, default=30.0, help="interval of the fixed scenarios (default 30)")
    p.add_argument("--warmup", type=float, default=15.0, help="seconds before each measured window (default 15)")
    p.add_argument("--measure", type=float, default=60.0,
                   help="measured window per run, seconds (default 60: a whole number of 30 s intervals)")
    p.add_argument("--rates", type=float, nargs="+", default=[250, 500, 750, 1000, 1250, 1500],
                   help="probe rates of the max scenario, probes/s (default 250 500 750 1000 1250 1500)")
    p.add_argument("--site-interval", type=float, default=5.0,
                   help="interval of the site scenarios (default 5: 200 probes/s; longer when the machine cannot "
                   "serve that many TLS handshakes, e.g. 40 on a busy 2-core machine)")
    p.add_argument("--no-cafile", action="store_true",
                   help="site scenarios without the exporter's module ca_file side (shorter runs)")
    p.add_argument("--step-warmup", type=float, default=8.0)
    p.add_argument("--step-measure", type=float, default=30.0)
    p.add_argument("--ours", choices=("standalone", "engine"), default="standalone",
                   help="our side: the `route-monitor standalone` command on generated manifests (default) "
                   "or the engine alone (benchmarks.engine_proc)")
    p.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                   help="also run our side from this other checkout (e.g. `git worktree add --detach /tmp/base "
                   "main`) after the exporter, in the fixed scenarios: before/after in one run")
    p.add_argument("--nice", type=int, default=0,
                   help="run every process of the benchmark at this nice value (e.g. -5, needs root)")
    p.add_argument("--quick", action="store_true", help="a tenth of the targets, short windows (smoke run)")
    p.add_argument("--out", type=Path, default=HERE / "results", help="where latest.json/latest.md go")
    args = p.parse_args(argv)
    if args.quick:
        args.warmup, args.measure, args.step_warmup, args.step_measure = 3.0, 8.0, 3.0, 6.0
        args.interval = 4.0  # the window is a whole number of intervals: every target counts the same
        args.rates = args.rates[:2]
    if args.nice:
        # the shared machine's other work disturbs lag most: give every measured process (and the
        # load generator, this process) the same higher priority; CPU per probe is unaffected
        os.environ["BENCH_NICE"] = str(args.nice)
        os.setpriority(os.PRIO_PROCESS, 0, args.nice)
    if not blackbox.available():
        print(f"{blackbox.EXPORTER} is missing: apt-get install prometheus-blackbox-exporter", file=sys.stderr)
        return 2
    work = Path(f"/tmp/route-monitor-bench-{time.strftime('%Y%m%dT%H%M%S')}")
    server, ready = measure.start([sys.executable, "-m", "benchmarks.targets", "--ports", "16", "--tls-ports", "4",
                                   "--tls-dir", str(work), "--workers", "2"], ready_line=True, log_path=str(work) + "-targets.log")
    assert ready is not None
    started = time.time()
    try:
        rows = asyncio.run(scenarios(ready, args, work))
        target_cpu = measure.sample(server.pid).cpu_seconds
    finally:
        measure.stop(server)
    result = {"machine": report.machine(), "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)),
              "duration_s": time.time() - started, "command": "python -m benchmarks.run " + " ".join(argv or sys.argv[1:]),
              "target_server_cpu_s": target_cpu, "nice": args.nice, "rows": rows}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "latest.json").write_text(json.dumps(result, indent=2) + "\n")
    table = report.markdown(result)
    (args.out / "latest.md").write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
