"""One page per cause, end to end: two emulated router shards, real Prometheus, Alertmanager
(the shipped configuration) and the PagerDuty stand-in.

Shard A and shard B are proxy processes on loopback (``tests/support/shardproxy.py``) in front of
one healthy target; 8 monitors go through A (``spec.paths: [router:a]``), 3 through B. They run
under ``route-monitor standalone`` (paths declared, as for a load balancer route-monitor cannot
see; the operator derives ``router:<shard>`` from the Routes themselves, shown in
``test_operator_paths.py``), which also writes the shared-path rules. Probes every second,
Prometheus scrapes and evaluates every second, Alertmanager groups within a second.

- All healthy; shard A's process is stopped: exactly one PagerDuty incident,
  ``RouteMonitorSharedPathDown`` for ``router:a`` with 8 monitors affected; none of the 8 pages on
  its own, nothing for B.
- Shard A starts again: that incident resolves, the stand-in holds no open incident, and once no
  monitor's burn condition holds any more (its 5-minute ratio back under the threshold) still
  no per-monitor incident was ever opened.

``--shared-path-min-ratio 1`` makes the path down once all 8 fail (they fail within the same
second here), so the page's count is the full 8 whatever the evaluation that first sees it;
the K/F thresholds themselves are shown under promtool (``test_path_rules_promtool.py``).
``--shared-path-hold 10s`` keeps the test short (the default 5m merges flaps). ``--evaluation-interval
10s`` (Prometheus evaluates every second here) gives the monitors' pages a margin of 10 s over the
race they must lose: their burn holds after two failed probes, while a monitor probed every second
counts as failing only once half of its last minute failed, 30 s into the outage.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest

from alert_rules import names
from tests.support.e2e import TILE, standalone
from tests.support.net import free_port, wait_for
from tests.support.prometheus import Paging, Prometheus, run_paging, run_prometheus
from tests.support.servers import Targets
from tests.support.shardproxy import Shard
from tests.support.sink import PAGERDUTY_PATH

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(900)]

BEHIND_A = [f"a{i}" for i in range(8)]
BEHIND_B = [f"b{i}" for i in range(3)]
PAGE_THRESHOLD = "0.0144"
"""14.4 x the 0.1% budget: the 1h/5m pair's threshold for these 99.9% monitors."""


def manifest(name: str, url: str, path: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: routemonitor.io/v1alpha1
        kind: RouteMonitor
        metadata: {{name: {name}, namespace: shop}}
        spec:
          target: {{url: "{url}/{name}"}}
          paths: ["{path}"]
          probe: {{interval: 1s, timeout: 500ms}}
          slo: {{availability: "99.9"}}
        """)


@dataclass(frozen=True)
class Shards:
    a: Shard
    b: Shard
    prometheus: Prometheus
    paging: Paging


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Shards]:
    folder = tmp_path_factory.mktemp("shared-path")
    with ExitStack() as stack:
        targets = Targets(folder)
        stack.callback(targets.close)
        backend = int(targets.http().rpartition(":")[2])
        a, b = Shard(free_port(), backend, folder / "shard-a.log"), Shard(free_port(), backend, folder / "shard-b.log")
        for shard in (a, b):
            shard.start()
            stack.callback(shard.stop)
        (folder / "monitors").mkdir()
        docs = [manifest(m, f"http://127.0.0.1:{a.port}", "router:a") for m in BEHIND_A]
        docs += [manifest(m, f"http://127.0.0.1:{b.port}", "router:b") for m in BEHIND_B]
        (folder / "monitors" / "shop.yaml").write_text("---\n".join(docs))
        rules = folder / "rules"
        metrics = stack.enter_context(standalone(
            folder, rules, count=len(docs), tile=TILE,
            args=("--shared-path-min-ratio", "1", "--shared-path-hold", "10s", "--evaluation-interval", "10s")))
        paging = stack.enter_context(run_paging(folder / "alertmanager"))
        prom = stack.enter_context(run_prometheus(folder / "prometheus", targets=[metrics], rules_dir=rules,
                                                  alertmanager=paging.alertmanager.address))
        wait_for(lambda: len(prom.query(f"{names.PATH_MONITORS_RECORD}")) == 2, timeout=60,
                 what="both paths recorded by the shared-path rules")
        yield Shards(a, b, prom, paging)


def events(paging: Paging) -> list[dict[str, Any]]:
    return [r.body for r in paging.sink.received(PAGERDUTY_PATH)]


def test_a_failed_shard_is_one_incident_that_resolves_and_no_monitor_pages(shards: Shards) -> None:
    prom, paging = shards.prometheus, shards.paging
    wait_for(lambda: len(prom.query(f'{names.PROBES_TOTAL}{{result="success"}} > 5')) == 11, timeout=60,
             what="every monitor probed successfully")
    assert events(paging) == [], "all healthy: nothing pages"

    shards.a.stop()
    trigger = paging.sink.wait_for(PAGERDUTY_PATH, lambda b: b["event_action"] == "trigger", timeout=120,
                                   what="the SharedPathDown page").body
    assert trigger["payload"]["source"] == "router:a"
    assert trigger["payload"]["summary"] == "router:a is down: 8 monitors behind it are failing"
    assert trigger["payload"]["custom_details"]["alertname"] == names.ALERT_SHARED_PATH_DOWN
    # the 8 monitors' own burn condition holds (their budgets are spent), but none of them fires
    wait_for(lambda: len(prom.query(f"{names.error_ratio_record('5m')} > {PAGE_THRESHOLD}")) == len(BEHIND_A),
             timeout=60, what="every monitor behind A burning its budget")
    wait_for(lambda: prom.query(f'ALERTS{{alertname="{names.ALERT_ERROR_BUDGET_BURN}"}}') == [] and
             prom.query(f'{names.FAILING_RECORD}{{reason=""}}') != [],
             timeout=30, what="no per-monitor alert pending or firing while the path is down")

    shards.a.start()
    resolve = paging.sink.wait_for(PAGERDUTY_PATH, lambda b: b["event_action"] == "resolve", timeout=180,
                                   what="the SharedPathDown resolve").body
    assert resolve["dedup_key"] == trigger["dedup_key"]
    # no per-monitor incident can open any more once no monitor's 5-minute ratio is over the threshold
    wait_for(lambda: prom.query(f"{names.error_ratio_record('5m')} > {PAGE_THRESHOLD}") == [], timeout=420,
             interval=2, what="the monitors' 5m ratios back under the page threshold")
    sent = events(paging)
    assert [(e["event_action"], e["payload"]["source"]) for e in sent] == [("trigger", "router:a"),
                                                                         ("resolve", "router:a")], sent
    opened = {e["dedup_key"] for e in sent if e["event_action"] == "trigger"}
    closed = {e["dedup_key"] for e in sent if e["event_action"] == "resolve"}
    assert opened == closed, "the stand-in holds no open incident"


def test_rules_written_for_the_shards(shards: Shards) -> None:
    """The shared-path rules Prometheus loaded come from ``standalone`` with the given thresholds."""
    threshold = next(r for g in shards.prometheus.api("rules")["groups"] for r in g["rules"]
                     if r.get("name") == names.PATH_DOWN_THRESHOLD_RECORD)
    # K = 3 (the default), F = 1: every monitor behind the path, at least 3
    assert threshold["query"] == f"clamp_min({names.PATH_MONITORS_RECORD}, 3)"
