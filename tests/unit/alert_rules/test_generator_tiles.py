"""A shortened tile (``--tile``, ``alert_rules/tiles.py``): the same alerts, consistent readers.

Covers: the default tile is today's output byte for byte (``rules --tile 5m`` = ``rules``);
which tiles are accepted and the messages for those that are not; with a 30s or 1m tile the
long-window group runs every tile and every tile record it and the period group read is one
they record, named after the tile, summed at tile steps, while the fast group and every alert's
labels and annotations are unchanged; dashboards read no tile records and the operator's
read-back reads the default ones; a monitor probing less than ten times per tile is an error
naming ``spec.probe.interval`` (``rules`` fails, one line per monitor); only ``standalone`` and
``rules`` take the flag. Under Debian's promtool: the rules lint clean, the generator's own
fixtures pass at shortened tiles, and "hourly" tiles (twelve tiles) are exact from 30s tiles evaluated every
10s (and wrong when evaluated every minute: the evaluation must not be coarser than the tile).
"""

from __future__ import annotations

import re
from dataclasses import replace
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from alert_rules import findings, names, prometheus_rule_file, promtool_tests, readback, rule_groups, tiles
from alert_rules.fixtures import eval_order
from alert_rules.model import LatencyObjective, MonitorSLO, Objective
from alert_rules.shared import shared_rule_groups
from route_monitor.cli.main import build_parser, main
from tests.support import engine_params, promtool
from tests.support.promtool import Job

ROOT = Path(__file__).resolve().parents[3]
TILE_RECORD = re.compile(r"namespace_monitor:route_monitor_\w+:(?:increase|count)([0-9a-z]+?)(?:_reachability)?\b")
WINDOW_COUNTS = {"1h", "6h", "1d", "3d"}
"""The guards' counts over the long windows (``...:count6h``): windows, not tiles."""
RECORD_REF = re.compile(r"namespace_monitor:route_monitor_\w+:\w+")


def slo(interval_s: float = 1, tile: str = "30s", availability: str = "99.9") -> MonitorSLO:
    """A monitor of a 21-day period: one whose period ratio its own period group records (a usual
    period's is the shared period group's)."""
    lat = LatencyObjective(300, Decimal("99"))
    return MonitorSLO("shop", "web", Objective(Decimal(availability), period_ms=21 * 86_400_000, latency=lat),
                      int(interval_s * 1000), tile_ms=tiles.parse(tile))


@pytest.mark.parametrize("text", ["10s", "15s", "30s", "45s", "1m", "2m", "5m"])
def test_accepted_tiles(text: str) -> None:
    assert tiles.parse(text) > 0


@pytest.mark.parametrize(("text", "why"), [("7s", "divide 30m"), ("10m", "at most 5m"), ("1500ms", "whole number"),
                                           ("0s", "zero"), ("fast", "not a duration"), ("4m", "divide 30m")])
def test_refused_tiles_say_why(text: str, why: str) -> None:
    with pytest.raises(tiles.TileError, match=why):
        tiles.parse(text)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["rules", "x.yaml", "--tile", text])


def test_only_standalone_and_rules_take_a_tile() -> None:
    assert build_parser().parse_args(["standalone", "m.yaml", "--tile", "30s"]).tile == 30_000
    assert build_parser().parse_args(["rules", "m.yaml"]).tile == tiles.DEFAULT_TILE_MS
    with pytest.raises(SystemExit):
        build_parser().parse_args(["operator", "--tile", "30s"])


def without_exprs(groups: list[dict[str, Any]]) -> list[Any]:
    """Alerts as users see them: no expression, and no ``for:`` (a tiled alert waits one tile)."""
    return [{k: v for k, v in r.items() if k not in ("expr", "for")} for g in groups for r in g["rules"]
            if "alert" in r]


@pytest.mark.parametrize(("tile", "hour"), [("30s", "6m"), ("1m", "12m")])
def test_short_tile_rules_read_only_what_they_record(tile: str, hour: str) -> None:
    short, default = rule_groups(slo(tile=tile)), rule_groups(slo(tile="5m"))
    shared = shared_rule_groups(tiles.parse(tile))
    shared += rule_groups(replace(slo(tile=tile), name="web-3", vantages=3, quorum=2))  # the quorum marker
    fast, long, period = short
    # the 1h/5m page and absence alert read the shared raw-counter records; only the latency tiles differ
    assert [r for r in fast["rules"] if "alert" in r] == [r for r in default[0]["rules"] if "alert" in r]
    assert long["interval"] == shared[1]["interval"] == tile and period["interval"] == shared[2]["interval"] == hour
    assert shared[4]["interval"] == tile and shared[5]["interval"] == hour
    assert default[2]["interval"] == "1h"  # twelve tiles: 1h at the default tile
    assert without_exprs(short) == without_exprs(default)  # same alerts, labels, annotations
    assert {r["for"] for r in long["rules"] if r.get("alert") == names.ALERT_ERROR_BUDGET_BURN} == {tile}
    recorded = {r["record"] for g in [*short, *shared] for r in g["rules"] if "record" in r}
    for group in [*short, *shared]:
        for rule in group["rules"]:
            expr = rule["expr"]
            assert set(RECORD_REF.findall(expr)) <= recorded, expr
            if group["name"] == shared[0]["name"]:
                continue  # the 1h/5m page's 1h count is from the raw counters, no tile
            assert set(TILE_RECORD.findall(expr)) - WINDOW_COUNTS <= {tile, hour}, expr
            for summed, step in re.findall(r"(namespace_monitor:\S+?)(?:\{[^}]*\})?(?:\[\w+\]\))?\[\w+:(\w+)\]",
                                           expr):
                assert step == (hour if summed.endswith(f"increase{hour}") else tile), expr
    assert {m for g in [*short, *shared] for r in g["rules"] for m in TILE_RECORD.findall(r.get("record", ""))} \
        - WINDOW_COUNTS == {tile, hour}


def test_dashboards_read_no_tiles_and_the_operator_reads_default_ones() -> None:
    for dash in (ROOT / "grafana").glob("*.json"):
        assert not TILE_RECORD.search(dash.read_text()), dash.name
    assert "increase5m" in readback.failed_over_period(86_400) and ":5m]" in readback.probes_over_period(86_400)


def test_a_tile_must_hold_ten_probes() -> None:
    [f] = [f for f in findings(slo(interval_s=5)) if "tile" in f.message]
    assert f.severity == "error" and f.field == "spec.probe.interval"
    assert "probe every 3s or less, or use a longer --tile" in f.message
    assert not [f for f in findings(slo(interval_s=3)) if "tile" in f.message]
    assert not [f for f in findings(slo(interval_s=60, tile="5m")) if "tile" in f.message]


def test_rules_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    examples = str(ROOT / "examples")
    assert main(["rules", examples]) == 0
    default = capsys.readouterr().out
    assert main(["rules", examples, "--tile", "5m"]) == 0
    assert capsys.readouterr().out == default
    assert main(["rules", examples, "--tile", "30s"]) == 1
    out, err = capsys.readouterr()
    lines = err.splitlines()  # one per monitor, at the field the user wrote (annotation or spec)
    assert out == "" and len(lines) == 5 and all(re.search(r"(spec\.probe\.|routemonitor\.io/)interval\]?: probing "
                                                           r"every \d+s, a 30s tile \(--tile\)", x) for x in lines)
    (tmp_path / "m.yaml").write_text("apiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\n"
                                     "metadata: {name: web, namespace: shop}\nspec:\n  target: {url: 'http://x.test'}\n"
                                     "  probe: {interval: 2s, timeout: 1s}\n  slo: {availability: '99'}\n")
    assert main(["rules", str(tmp_path / "m.yaml"), "--tile", "30s"]) == 0
    out = capsys.readouterr().out
    assert "interval: 30s" in out and "increase30s" in out and "increase5m" not in out


# --- promtool -----------------------------------------------------------------------------------

@pytest.mark.prometheus
@pytest.mark.parametrize("tile", ["10s", "30s", "1m"])
def test_promtool_lints_short_tile_rules(tmp_path: Path, tile: str) -> None:
    path = tmp_path / "rules.yml"
    path.write_text(prometheus_rule_file([replace(slo(i, tile, a), name=f"m{i}-{a}")
                                          for i in (1, 2) for a in ("95", "99.9")]))
    result = promtool.check_rules(path)
    assert result.ok, result.output


FIXTURES = {"99.9-2s-30s": slo(2, "30s"), "95-6s-1m": slo(6, "1m", "95")}
"""Both shortened tiles, at two objectives (the objective's thresholds are tile-blind: other
objectives pass at the default tile in test_generator_promtool.py); the 1m tile at the fewest
probes it takes (ten per tile). promtool's cost is its evaluations (hours of them at every tile):
a third fixture (a second 30s-tile one) was over a third of this module's CPU."""


@pytest.mark.prometheus
def test_generated_fixtures_pass_at_short_tiles(tmp_path: Path) -> None:
    jobs = [Job(k, prometheus_rule_file([s]), promtool_tests(s, "rules.yml")) for k, s in FIXTURES.items()]
    for name, result in promtool.run_many(jobs, tmp_path).items():
        assert result.ok, f"{name}: {result.output}"


def period_job(name: str, evaluation: str) -> Job:
    """30s tiles, 8 probes every 30s for 5h, failures 4 in one half-minute and 0 in the next; the
    "hourly" tiles (twelve tiles: 6 minutes) read at 4h2m10s, off the tile grid as Prometheus' own
    evaluations are (2.x ranges include both ends: on the grid 6 minutes of 30s steps hold 13)."""
    sel = 'namespace="shop",monitor="web"'
    failed = [4 * ((i + 1) // 2) for i in range(600)]
    ok = [8 * i - failed[i] for i in range(600)]
    hourly = {"probes": 96, "probe_errors": 24}
    return Job(name, prometheus_rule_file([slo(3, "30s", "50")]), {
        "rule_files": ["rules.yml"], "evaluation_interval": evaluation,
        "group_eval_order": eval_order([slo(3, "30s", "50")]), "tests": [{
            "interval": "30s",
            "input_series": [
                {"series": f'route_monitor_probes_total{{{sel},result="success"}}', "values": " ".join(map(str, ok))},
                {"series": f'route_monitor_probes_total{{{sel},result="failure"}}', "values": " ".join(map(str, failed))},
                *engine_params.series(slo(3, "30s", "50"), 600),
            ],
            "promql_expr_test": [
                {"expr": f"namespace_monitor:route_monitor_{what}:increase6m{{{sel}}}", "eval_time": "4h2m10s",
                 "exp_samples": [{"labels": f"namespace_monitor:route_monitor_{what}:increase6m{{{sel}}}",
                                  "value": value}]} for what, value in hourly.items()
            ]}]})


@pytest.mark.prometheus
def test_hourly_tiles_are_exact_from_30s_tiles_evaluated_every_tile(tmp_path: Path) -> None:
    """Evaluated every 10s (a divisor of the tile) the hourly tiles are exact; every minute (a
    tile's multiple), each subquery step picks the last minute's tile, half of them twice, and the
    failures of the other half-minutes are never counted."""
    results = promtool.run_many([period_job("every-tile", "10s"), period_job("every-minute", "1m")], tmp_path)
    assert results["every-tile"].ok, results["every-tile"].output
    assert not results["every-minute"].ok and "probe_errors:increase6m" in results["every-minute"].output
