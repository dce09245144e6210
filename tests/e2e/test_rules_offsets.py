"""The generated rules in a real Prometheus whose rule groups run at their own offsets.

Prometheus evaluates each rule group at a fixed offset within its interval (a hash of the
group's name and file), so a group with ``interval: 1h`` records its samples at, say, 17 minutes
past every hour. ``promtool test rules`` evaluates every group at every step, without offsets,
so only a real Prometheus shows whether a reader of those samples finds them.

A scale model of production, 30 times faster: ``standalone --tile 10s`` (``alert_rules/tiles.py``)
records 10-second tiles every 10 seconds and the period group's hourly tiles every 2 minutes
(twelve tiles, like 12 x 5 minutes = 1 hour), and this Prometheus looks back 10 seconds for an
instant sample (``--query.lookback-delta=10s``) instead of 5 minutes: every ratio between a
group's interval and the lookback is production's. Eight monitors, so eight groups of each kind
at eight offsets (four of them of a period with a group of its own). Shown:

- every recorded series the dashboards (``grafana/``) read exists for every monitor (the
  latency ones for the monitors with a latency objective), the period budget included: with
  the hourly tiles summed by a subquery stepping on whole "hours", it existed only for groups
  evaluated in the last lookback of the "hour" (about 1 in 12);
- the tiles summed with ``[W:tile]`` subqueries miss none at any offset: at any time, a
  window's subquery finds one tile at every step, and an hourly tile is exactly the sum of the
  twelve tiles recorded in its span.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import re
import textwrap
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from alert_rules import names
from tests.support.e2e import EveryNth, for_several_vantages_only, standalone
from tests.support.net import wait_for
from tests.support.prometheus import Prometheus, run_prometheus
from tests.support.servers import Targets

pytestmark = [pytest.mark.prometheus, pytest.mark.timeout(600)]

TILE_S, HOUR_TILE_S = 10, 120
TILE, HOUR_TILE = f"{TILE_S}s", "2m"
PLAIN = ("a1", "a2", "a3", "a4", "a5", "a6")
LATENCY = ("l1", "l2")
MONITORS = PLAIN + LATENCY
OWN_PERIOD = ("a1", "a2", "a3", "a4")
"""Of a period the shared rules do not compute (21 days): each has a period group of its own, at
its own offset; the others' period records come from the shared period group."""
GRAFANA = Path(__file__).resolve().parents[2] / "grafana"
RECORD = re.compile(r"namespace_monitor:route_monitor_\w+:\w+")


def manifests(urls: dict[str, str]) -> str:
    docs = []
    for name, url in urls.items():
        slo = '{availability: "99", latency: {threshold: 250ms, objective: "95"}}' if name in LATENCY \
            else '{availability: "99", period: 21d}' if name in OWN_PERIOD else '{availability: "99"}'
        docs.append(textwrap.dedent(f"""\
            apiVersion: routemonitor.io/v1alpha1
            kind: RouteMonitor
            metadata: {{name: {name}, namespace: shop}}
            spec:
              target: {{url: "{url}"}}
              probe: {{interval: 1s, timeout: 500ms}}
              slo: {slo}
            """))
    return "---\n".join(docs)


@pytest.fixture(scope="module")
def scaled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    folder = tmp_path_factory.mktemp("offsets")
    with ExitStack() as stack:
        targets = Targets(folder)
        stack.callback(targets.close)
        (folder / "monitors").mkdir()
        (folder / "monitors" / "shop.yaml").write_text(
            manifests({m: targets.http(EveryNth(4 + i)) for i, m in enumerate(MONITORS)}))
        rules = folder / "rules"
        metrics = stack.enter_context(standalone(folder, rules, count=len(MONITORS), tile=TILE))
        prom = stack.enter_context(run_prometheus(folder / "prometheus", targets=[metrics], rules_dir=rules,
                                                  flags=[f"--query.lookback-delta={TILE}"]))
        yield prom


def monitors_with(prom: Prometheus, expr: str) -> set[str]:
    return {s["metric"].get("monitor", "") for s in prom.query(expr)}


READ = re.compile(r"last_over_time\((namespace_monitor:route_monitor_\w+:\w+)\{[^}]*\}\[(\w+)\]\)")


def dashboard_reads() -> dict[str, str]:
    """How the dashboards read each record: the query to run (``last_over_time(...[2h])`` or the name)."""
    out: dict[str, str] = {}
    for dash in GRAFANA.glob("*.json"):
        for panel in json.loads(dash.read_text())["panels"]:
            for target in panel.get("targets", []):
                if for_several_vantages_only(target["expr"]):
                    continue  # this Prometheus' monitors have one vantage each
                wrapped = dict(READ.findall(target["expr"]))
                for record in RECORD.findall(READ.sub("", target["expr"])):
                    out[record] = record
                for record, window in wrapped.items():
                    out[f"{record}[{window}]"] = f"last_over_time({record}[{window}])"
    return out


def evaluated(prom: Prometheus, suffix: str, prefix: str = "") -> list[float]:
    """When each group of that kind last started an evaluation (Prometheus' ``lastEvaluation``,
    epoch seconds; groups in turn: an evaluation started means the previous ones are stored);
    a group not evaluated yet counts as 0."""
    out = []
    for g in prom.api("rules")["groups"]:
        if g["name"].startswith(prefix) and g["name"].endswith(suffix):
            if g["lastEvaluation"][:4] == "0001":
                out.append(0.0)
                continue
            t = dt.datetime.fromisoformat(re.sub(r"(\.\d{6})\d*", r"\1", g["lastEvaluation"]).replace("Z", "+00:00"))
            out.append(t.timestamp())
    return out


def offsets(prom: Prometheus, suffix: str, interval_s: int) -> list[float]:
    """Each monitor's group's last evaluation, as seconds past its interval's boundary."""
    return [t % interval_s for t in evaluated(prom, suffix, "route-monitor/") if t > 0]


def test_every_record_the_dashboards_read_exists_for_every_monitor(scaled: Prometheus) -> None:
    prom = scaled
    reads = dashboard_reads()
    assert f"{names.BUDGET_REMAINING_RECORD}[2h]" in reads and names.error_ratio_record("3d") in reads
    latency_only = {names.slow_ratio_record("5m"), names.LATENCY_OBJECTIVE_RECORD}
    assert set(latency_only) <= set(reads), sorted(reads)
    while_failing = {names.FAILING_RECORD}
    """Recorded only while the monitor fails (a healthy one has none, by design: the shared-path
    panel counts the series); no monitor fails here."""
    assert while_failing <= set(reads)
    missing: dict[str, list[str]] = {}

    def complete() -> bool:
        missing.clear()
        for read, query in reads.items():
            if read in while_failing:
                continue
            want = set(LATENCY) if read in latency_only else set(MONITORS)
            if lost := sorted(want - monitors_with(prom, query)):
                missing[read] = lost
        return not missing

    # the period group's second evaluation (its sum reads the hourly tiles of earlier ones): within two "hours"
    try:
        wait_for(complete, timeout=2 * HOUR_TILE_S + 90, interval=2, what="every dashboard record for every monitor")
    except TimeoutError:
        pytest.fail(f"records the dashboards read are missing: {missing}; period groups' offsets (s): "
                    f"{offsets(prom, '/period', HOUR_TILE_S)}")
    late = offsets(prom, "/period", HOUR_TILE_S)
    assert len(late) == len(OWN_PERIOD)
    # the groups ran at their offsets, most of them outside the last lookback of the "hour", where a
    # subquery stepping on whole "hours" finds no hourly tile
    assert sum(1 for o in late if o < HOUR_TILE_S - TILE_S) >= 2, late
    for s in prom.query(reads[f"{names.BUDGET_REMAINING_RECORD}[2h]"]):
        assert -100 < float(s["value"][1]) <= 1, s


def on_time(prom: Prometheus, tile: str, monitor: str, asked: float) -> bool:
    """Whether the monitor's tile group evaluated within a lookback of its previous evaluation all
    through the two minutes before ``asked`` (its tile samples are TILE apart, give or take 1 s)."""
    sel = f'{{namespace="shop",monitor="{monitor}"}}'
    [series] = prom.query(f"{tile}{sel}[{2 * HOUR_TILE_S}s]", time=asked) or [{"values": []}]
    stamps = [float(t) for t, _ in series["values"] if float(t) > asked - HOUR_TILE_S - TILE_S]
    return len(stamps) >= 2 and all(b - a <= TILE_S + 1 for a, b in itertools.pairwise(stamps))


def test_tile_subqueries_find_every_tile_at_any_offset(scaled: Prometheus) -> None:
    prom = scaled
    hourly = names.probes_increase_record(HOUR_TILE)
    tile = names.probes_increase_record(TILE)
    wait_for(lambda: monitors_with(prom, f"last_over_time({hourly}[{HOUR_TILE}])") == set(MONITORS), timeout=2 * HOUR_TILE_S + 90, interval=2,
             what=hourly)
    assert len(set(round(o) for o in offsets(prom, "/long-windows", TILE_S))) >= 2, "groups at different offsets"
    # the "hour" an hourly tile sums began after the monitors' first tiles (the first ones cover less)
    first = max(float(s["values"][0][0]) for s in prom.query(f"{tile}[1h]"))
    wait_for(lambda: min(evaluated(prom, "/period"), default=0.0) >= first + HOUR_TILE_S + TILE_S,
             timeout=2 * HOUR_TILE_S + 30, interval=2, what="an hourly tile over a whole hour of tiles")
    # every step of a 30m window's subquery (as the rules sum it) finds a tile, for every monitor:
    # asked at a moment every tile group has evaluated past (by Prometheus' own lastEvaluation),
    # so a group whose evaluation a loaded machine delayed is not taken for a missing tile
    asked = time.time()
    wait_for(lambda: min(evaluated(prom, "/long-windows"), default=0.0) >= asked + TILE_S, timeout=3 * TILE_S + 30,
             interval=1, what="every tile group evaluated a tile after the moment asked")
    counts = {s["metric"]["monitor"]: float(s["value"][1])
              for s in prom.query(f"count_over_time({tile}[2m:{TILE}])", time=asked)}
    # a group Prometheus itself evaluated late (more than the lookback after its previous
    # evaluation: at this scale 10 s, which a loaded machine can take; in production 5 minutes)
    # leaves a step without a tile whatever the rules say: such monitors are left out, most remain
    regular = {m for m in MONITORS if on_time(prom, tile, m, asked)}
    assert len(regular) >= len(MONITORS) // 2, f"Prometheus evaluated late for most monitors: {set(MONITORS) - regular}"
    assert {m: counts.get(m) for m in regular} == dict.fromkeys(regular, HOUR_TILE_S / TILE_S), counts
    # an hourly tile is the twelve tiles recorded in its span, each once
    for monitor in MONITORS:
        sel = f'{{namespace="shop",monitor="{monitor}"}}'
        [series] = prom.query(f"{hourly}{sel}[{3 * HOUR_TILE_S}s]")
        at, value = series["values"][-1]
        step = int(float(at)) // TILE_S * TILE_S  # the subquery's last step before the evaluation
        [tiles] = prom.query(f"{tile}{sel}[{3 * HOUR_TILE_S}s]", time=float(at))
        picked = [float(v) for t, v in tiles["values"] if step - HOUR_TILE_S < float(t) <= step]
        assert len(picked) == HOUR_TILE_S // TILE_S, (monitor, at, tiles["values"])
        assert float(value) == sum(picked) > 0, (monitor, value, picked)
