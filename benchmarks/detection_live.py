"""Detection and reset on the wall clock, with the shipped settings end to end.

    .venv/bin/python -m benchmarks.detection_live [--warmup 600] [--outage 300] [--interval 30s] [--objective 99.9]

A local target is probed by ``route-monitor standalone`` (default 30s interval), Prometheus
scrapes it and evaluates the generated rules every ``--interval`` (30s), Alertmanager runs the
shipped ``deploy/alertmanager/alertmanager.yml`` with its shipped timings (group_wait 30s,
group_interval 5m) in front of the PagerDuty stand-in. The target is healthy for ``--warmup``
seconds, fails every request for ``--outage`` seconds, then recovers. Printed: seconds from the
target going down to the PagerDuty ``trigger`` arriving, and from it recovering to the ``resolve``.
Bounded: gives up ``--max-wait`` seconds after the recovery.
"""

from __future__ import annotations

import argparse
import tempfile
import textwrap
import time
from contextlib import ExitStack
from pathlib import Path

from tests.support.e2e import Switch, standalone
from tests.support.prometheus import run_paging, run_prometheus
from tests.support.servers import Targets
from tests.support.sink import PAGERDUTY_PATH


def manifest(url: str, interval: str, objective: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: routemonitor.io/v1alpha1
        kind: RouteMonitor
        metadata: {{name: checkout, namespace: shop}}
        spec:
          target: {{url: "{url}"}}
          probe: {{interval: {interval}}}
          slo: {{availability: "{objective}"}}
        """)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--warmup", type=float, default=600)
    p.add_argument("--outage", type=float, default=300)
    p.add_argument("--interval", default="30s")
    p.add_argument("--objective", default="99.9")
    p.add_argument("--max-wait", type=float, default=3000)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        folder = Path(tmp)
        targets = Targets(folder)
        stack.callback(targets.close)
        switch = Switch()
        (folder / "monitors").mkdir()
        (folder / "monitors" / "m.yaml").write_text(manifest(targets.http(switch), args.interval, args.objective))
        metrics = stack.enter_context(standalone(folder, folder / "rules", count=1))
        paging = stack.enter_context(run_paging(folder / "am", shipped_timings=True))
        stack.enter_context(run_prometheus(folder / "prom", targets=[metrics], rules_dir=folder / "rules",
                                           alertmanager=paging.alertmanager.address, interval=args.interval))
        log(f"warm-up {args.warmup:.0f}s")
        time.sleep(args.warmup)
        switch.down = True
        down = time.time()
        log("target down")
        trigger = paging.sink.wait_for(PAGERDUTY_PATH, lambda b: b["event_action"] == "trigger",
                                       timeout=args.outage + args.max_wait, what="trigger")
        log(f"trigger received {trigger.at - down:.0f}s after the target went down")
        time.sleep(max(0.0, down + args.outage - time.time()))
        switch.down = False
        up = time.time()
        log("target up")
        resolve = paging.sink.wait_for(PAGERDUTY_PATH, lambda b: b["event_action"] == "resolve",
                                       timeout=args.max_wait, what="resolve")
        print(f"| {args.objective}% | {args.interval} | {args.outage:.0f}s | {trigger.at - down:.0f}s | "
              f"{resolve.at - up:.0f}s | {trigger.body['dedup_key'] == resolve.body['dedup_key']} |", flush=True)
    return 0


def log(text: str) -> None:
    print(time.strftime("%H:%M:%S"), text, flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
