"""The whole pipeline on loopback: targets -> ``route-monitor standalone`` -> Prometheus -> Alertmanager -> sink.

Three monitors in namespace ``shop``, probed every second:

- ``checkout`` (99%): a target the test switches down and up (every probe fails while down);
- ``cart`` (95%): one request in five answers 503, a steady 20% error ratio: above the ticket
  pairs' thresholds (3x and 1x the 5% budget) and below the page pairs' (6x and 14.4x), so it
  opens a ticket and never pages;
- ``api`` (99.5%, latency: 95% under 250ms): HTTPS with a certificate from a test CA
  (``insecureSkipVerify``), so the latency and certificate-expiry series exist.

``checkout`` has six hours of clean history before the stack starts (``backfill_clean_tiles``), as
a monitor in production has: its long windows then weigh a short outage against hours of good
probes, so only the pair the outage is about (1h/5m, from the raw counters) pages.

Standalone writes the generated rule files (``run_stack``: with ``--tile 30s``, so the long
windows hold a first tile within about a minute instead of 5 to 10); Prometheus (1s scrape and
evaluation) loads them and sends alerts to Alertmanager running the shipped configuration.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from alert_rules import names
from route_monitor.cli.demo_targets import Reply
from tests.support import promtool
from tests.support.history import Gauge, openmetrics
from tests.support.net import free_port, wait_for
from tests.support.prometheus import Paging, Prometheus, run_paging, run_prometheus, stop
from tests.support.servers import Targets

MONITORS = ("checkout", "cart", "api")
TILE = "30s"
"""The long windows' tile of ``run_stack``'s rules (``alert_rules.tiles``): ten probes at least."""
TILE_S = 30
HISTORY_S = 6 * 3600
"""Clean history backfilled for ``checkout``: the 6h/30m page's long window."""


class Switch:
    """A target that answers 200, or 503 while ``down`` (set by the test)."""

    def __init__(self) -> None:
        self.down = False

    def __call__(self, method: str, target: str) -> Reply:
        return Reply(status=503, body=b"down\n") if self.down else Reply(body=b"ok\n")


class EveryNth:
    """Fails exactly one request in ``n`` (deterministic: a steady error ratio of 1/n)."""

    def __init__(self, n: int) -> None:
        self.n, self.count = n, 0
        self.lock = threading.Lock()

    def __call__(self, method: str, target: str) -> Reply:
        with self.lock:
            self.count += 1
            fail = self.count % self.n == 0
        return Reply(status=503, body=b"flaky\n") if fail else Reply(body=b"ok\n")


def manifests(checkout: str, cart: str, api: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: routemonitor.io/v1alpha1
        kind: RouteMonitor
        metadata: {{name: checkout, namespace: shop}}
        spec:
          target: {{url: "{checkout}"}}
          probe: {{interval: 1s, timeout: 500ms}}
          slo: {{availability: "99"}}
        ---
        apiVersion: routemonitor.io/v1alpha1
        kind: RouteMonitor
        metadata: {{name: cart, namespace: shop}}
        spec:
          target: {{url: "{cart}"}}
          probe: {{interval: 1s, timeout: 500ms}}
          slo: {{availability: "95"}}
        ---
        apiVersion: routemonitor.io/v1alpha1
        kind: RouteMonitor
        metadata: {{name: api, namespace: shop}}
        spec:
          target: {{url: "{api}"}}
          probe: {{interval: 1s, timeout: 500ms, tls: {{insecureSkipVerify: true}}}}
          slo: {{availability: "99.5", latency: {{threshold: 250ms, objective: "95"}}}}
        """)


@dataclass(frozen=True)
class Stack:
    prometheus: Prometheus
    paging: Paging
    checkout: Switch
    started: float


@contextmanager
def standalone(folder: Path, rules: Path, *, count: int = len(MONITORS), tile: str | None = None,
               args: Sequence[str] = ()) -> Iterator[str]:
    """``route-monitor standalone`` on ``folder/monitors``; yields its metrics address once ``count`` monitors'
    rule files (and the shared-path rules) exist. ``tile``: its ``--tile`` (default: the production 5m);
    ``args``: more flags. The rules are told Prometheus evaluates every second, as ``run_prometheus`` does."""
    port = free_port()
    log = (folder / "standalone.log").open("w")
    proc = subprocess.Popen([sys.executable, "-m", "route_monitor.cli.main", "standalone", str(folder / "monitors"),
                             "--metrics-address", f"127.0.0.1:{port}", "--rules-dir", str(rules),
                             *(["--tile", tile] if tile else []), "--evaluation-interval", "1s", *args],
                            stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for(lambda: len(list(rules.glob("*.yml"))) == count + 1, timeout=30, what="rule files")
        yield f"127.0.0.1:{port}"
    finally:
        stop(proc)
        log.close()


def backfill_clean_tiles(data: Path, namespace: str, monitor: str, probes_per_tile: int, until: float) -> None:
    """``HISTORY_S`` seconds of tiles with no failed probe before ``until``, as TSDB blocks in ``data``.

    Only the long-window group's tiles (the records every window above 1h is summed from), not the raw
    counters: Prometheus never evaluates recording rules over the past, and the 1h/5m pair must still see
    the young stack's outage from the counters alone. The tiles sit on the tile-aligned steps the
    windows' subqueries read (one sample per step), the last on the last step before ``until``; the
    live records are the same series (same name and labels) and go on from there, the 5-minute lookback
    covering the few steps before the first live tile as the history's last tile."""
    last = int(until) // TILE_S * TILE_S
    labels = {"namespace": namespace, "monitor": monitor}
    tiles = [Gauge(names.probes_increase_record(TILE), labels, last - HISTORY_S, last, TILE_S, probes_per_tile),
             Gauge(names.errors_increase_record(TILE), labels, last - HISTORY_S, last, TILE_S, 0),
             Gauge(names.error_count_record(TILE), labels, last - HISTORY_S, last, TILE_S, 0)]
    data.parent.mkdir(parents=True, exist_ok=True)
    for chunk, text in openmetrics((), tiles).items():
        (data.parent / f"history-{chunk}.om").write_text(text)
        result = promtool.run(["tsdb", "create-blocks-from", "openmetrics", f"history-{chunk}.om", str(data)],
                              cwd=data.parent)
        if result.returncode != 0:
            raise RuntimeError(f"promtool could not backfill {monitor}'s history: {result.output[-2000:]}")


@contextmanager
def run_stack(folder: Path) -> Iterator[Stack]:
    with ExitStack() as stack:
        targets = Targets(folder)
        stack.callback(targets.close)
        checkout = Switch()
        (folder / "monitors").mkdir()
        (folder / "monitors" / "shop.yaml").write_text(manifests(
            targets.http(checkout), targets.http(EveryNth(5)), targets.https()))
        rules = folder / "rules"
        metrics = stack.enter_context(standalone(folder, rules, tile=TILE))
        paging = stack.enter_context(run_paging(folder / "alertmanager"))
        backfill_clean_tiles(folder / "prometheus" / "data", "shop", "checkout", TILE_S, until=time.time())
        prom = stack.enter_context(run_prometheus(folder / "prometheus", targets=[metrics], rules_dir=rules,
                                                  alertmanager=paging.alertmanager.address))
        wait_for(lambda: len(prom.query('route_monitor_probes_total{namespace="shop"}')) == 2 * len(MONITORS),
                 timeout=30, what="probe series in Prometheus")
        yield Stack(prometheus=prom, paging=paging, checkout=checkout, started=time.time())


SEVERAL_VANTAGES_ONLY = (names.location_error_ratio_record("5m"), names.reachability_record("5m"))
"""Records the rules write only for monitors of several vantages (their per-location ratios and
reachability): a stack of one-vantage monitors has none. The dashboards' per-location panel that
reads them is queried in ``tests/e2e/test_e2e_vantages_netns.py``, on monitors of three vantages."""


def for_several_vantages_only(expr: str) -> bool:
    return any(record in expr for record in SEVERAL_VANTAGES_ONLY)
