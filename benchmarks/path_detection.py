"""Detection time of a shared outage (a router shard) against a single Route's, same probes, shipped settings.

    .venv/bin/python -m benchmarks.path_detection [--interval 30s] [--warmup 180] [--json FILE]

One healthy loopback backend behind two emulated router shards (proxy processes,
``tests/support/shardproxy.py``): 8 monitors behind shard ``a`` (``spec.paths: [router:a]``),
3 behind shard ``b``; all probed every ``--interval`` by ``route-monitor standalone``, which
writes the generated rules and the shared-path rules with the defaults (K = 3, F = 50%, hold
5m). Prometheus scrapes and evaluates every ``--interval``; Alertmanager runs the shipped
``deploy/alertmanager/alertmanager.yml`` with its shipped timings (group_wait 30s) in front of
the PagerDuty stand-in.

After ``--warmup`` seconds, at the same instant, shard ``a``'s process is stopped (every probe of
its 8 monitors is refused) and monitor ``b0`` starts answering 503 (a single Route's outage
behind a healthy shard). Printed: seconds from that instant to the PagerDuty ``trigger`` of
``RouteMonitorSharedPathDown`` for ``router:a``, and to ``b0``'s own page; and whether any of
the 8 paged on its own (it must not). Both outages run until both pages arrived (bounded by
``--max-wait``).
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import textwrap
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from route_monitor.cli.demo_targets import Reply
from tests.support.e2e import standalone
from tests.support.net import free_port
from tests.support.prometheus import run_paging, run_prometheus
from tests.support.servers import Targets
from tests.support.shardproxy import Shard
from tests.support.sink import PAGERDUTY_PATH

BEHIND_A = [f"a{i}" for i in range(8)]
BEHIND_B = [f"b{i}" for i in range(3)]


class Backend:
    """200, or 503 on the request paths in ``broken``."""

    def __init__(self) -> None:
        self.broken: set[str] = set()

    def __call__(self, method: str, target: str) -> Reply:
        return Reply(status=503, body=b"broken\n") if target in self.broken else Reply(body=b"ok\n")


def manifest(name: str, base: str, path: str, interval: str, objective: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: routemonitor.io/v1alpha1
        kind: RouteMonitor
        metadata: {{name: {name}, namespace: shop}}
        spec:
          target: {{url: "{base}/{name}"}}
          paths: ["{path}"]
          probe: {{interval: {interval}}}
          slo: {{availability: "{objective}"}}
        """)


def log(message: str) -> None:
    print(time.strftime("%H:%M:%S"), message, flush=True)


def first(events: list[dict[str, Any]], source: str) -> dict[str, Any] | None:
    return next((e for e in events if e["event_action"] == "trigger" and e["payload"]["source"] == source), None)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--interval", default="30s", help="probe, scrape and evaluation interval (default 30s)")
    p.add_argument("--objective", default="99.9")
    p.add_argument("--warmup", type=float, default=180)
    p.add_argument("--max-wait", type=float, default=900)
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        folder = Path(tmp)
        targets = Targets(folder)
        stack.callback(targets.close)
        backend = Backend()
        backend_port = int(targets.http(backend).rpartition(":")[2])
        a, b = (Shard(free_port(), backend_port, folder / f"shard-{s}.log") for s in "ab")
        for shard in (a, b):
            shard.start()
            stack.callback(shard.stop)
        (folder / "monitors").mkdir()
        docs = [manifest(m, f"http://127.0.0.1:{a.port}", "router:a", args.interval, args.objective) for m in BEHIND_A]
        docs += [manifest(m, f"http://127.0.0.1:{b.port}", "router:b", args.interval, args.objective)
                 for m in BEHIND_B]
        (folder / "monitors" / "shop.yaml").write_text("---\n".join(docs))
        metrics = stack.enter_context(standalone(folder, folder / "rules", count=len(docs),
                                                 args=("--evaluation-interval", args.interval)))
        paging = stack.enter_context(run_paging(folder / "am", shipped_timings=True))
        stack.enter_context(run_prometheus(folder / "prom", targets=[metrics], rules_dir=folder / "rules",
                                           alertmanager=paging.alertmanager.address, interval=args.interval))
        log(f"warm-up {args.warmup:.0f}s")
        time.sleep(args.warmup)
        start = time.time()
        a.stop()
        backend.broken.add("/b0")
        log("shard a stopped and b0 broken")
        shared = single = None
        while time.time() - start < args.max_wait and (shared is None or single is None):
            time.sleep(1)
            events = [r.body | {"at": r.at} for r in paging.sink.received(PAGERDUTY_PATH)]
            shared, single = first(events, "router:a"), first(events, "shop/b0")
        events = [r.body for r in paging.sink.received(PAGERDUTY_PATH)]
        own = sorted({e["payload"]["source"] for e in events if e["payload"]["source"].startswith("shop/a")})
    out = {"interval": args.interval, "objective": args.objective, "warmup_s": args.warmup,
           "shared_outage_page_s": round(shared["at"] - start, 1) if shared else None,
           "single_route_page_s": round(single["at"] - start, 1) if single else None,
           "shared_summary": shared["payload"]["summary"] if shared else None,
           "monitors_behind_the_shard_that_paged": own,
           "machine": f"{platform.node()} {platform.machine()} python {platform.python_version()}",
           "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    print(json.dumps(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0 if shared and single and not own else 1


if __name__ == "__main__":
    raise SystemExit(main())
