"""The quorum rules (``alert_rules.quorum``) under real promtool (``promtool test rules``).

Each location's counters grow at a constant rate (10 probes a step, ``a`` of them failed), so its
error ratio over any window is exactly ``a/10`` and the monitor's ratio under quorum ``q`` must
be exactly the q-th largest of them. Covered:

- k = 1, 2, 3, 5 locations and every q = 1..k: the quorum ratio is ``r(k - q + 1)``; the
  reachability ratio is all failures over all probes; k = 1 gives the one ratio (today's number);
- a location appearing, then disappearing: the ratio follows the locations reporting;
- a blind location (its probes excluded, so no counted probe) drops out instead of counting;
- a counter reset (a replica restarted) changes no ratio;
- ``RouteMonitorPartiallyUnreachable{location}``: one of three locations failing under q = 2
  opens one ticket naming it after its ``for:``; two failing (the quorum sees it) open none;
- reachability over the SLO period as the operator reads it (``alert_rules.readback``) from the
  generated rules' tiles: a location appearing and leaving counts the probes of its tiles, once;
  a counter reset leaves that location's tile out of failures and probes alike.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from alert_rules import names, readback
from alert_rules.fixtures import eval_order
from alert_rules.model import MonitorSLO, Objective
from alert_rules.quorum import partially_unreachable, quorum_records
from alert_rules.render import to_yaml
from alert_rules.rules import rule_groups
from alert_rules.shared import shared_rule_groups
from tests.support import engine_params, promtool

pytestmark = pytest.mark.prometheus

NS, MON, STEP, W = "shop", "web", "30s", "5m"
PARAM_SAMPLES = 400
"""The engine's objective series (``tests.support.engine_params``): longer than every test here."""
FAILED_PER_STEP = [4, 0, 8, 2, 6]
"""Failed probes of 10 per step at locations l0..l4: ratios 0.4, 0, 0.8, 0.2, 0.6."""
QUORUM = names.error_ratio_record(W)
REACH = names.reachability_record(W)


def counters(location: str, parts: list[tuple[str, int]]) -> list[dict[str, str]]:
    """promtool series of one location: ``parts`` of (``"5"`` failed per step | ``"."`` absent |
    ``"="`` blind: flat counters | ``"0!"`` a reset to 0 then on at the previous rate, steps)."""
    fail, total, ok_values, fail_values = 0, 0, [], []
    rate = 0
    for what, steps in parts:
        for _ in range(steps):
            if what == ".":
                ok_values.append("_")
                fail_values.append("_")
                continue
            if what == "reset":
                fail, total = 0, 0
            elif what != "=":
                rate = int(what)
                fail, total = fail + rate, total + 10
            ok_values.append(str(total - fail))
            fail_values.append(str(fail))
    ident = f'namespace="{NS}",monitor="{MON}",location="{location}",pod="p-{location}"'
    return [{"series": f'{names.PROBES_TOTAL}{{{ident},result="success"}}', "values": " ".join(ok_values)},
            {"series": f'{names.PROBES_TOTAL}{{{ident},result="failure"}}', "values": " ".join(fail_values)}]


def value(expr: str, minute: int, expected: float | None) -> dict[str, Any]:
    samples = [] if expected is None else [{"labels": f'{expr}{{monitor="{MON}",namespace="{NS}"}}',
                                            "value": expected}]
    return {"expr": expr, "eval_time": f"{minute}m", "exp_samples": samples}


def job(name: str, quorum: int, series: list[dict[str, str]], checks: list[dict[str, Any]],
        alerts: list[dict[str, Any]] | None = None) -> promtool.Job:
    rules = [*quorum_records(NS, MON, W, quorum), partially_unreachable(NS, MON, 30_000, quorum)]
    test: dict[str, Any] = {"interval": STEP, "input_series": series, "promql_expr_test": checks}
    if alerts:
        test["alert_rule_test"] = alerts
    groups = {"groups": [{"name": "quorum", "interval": STEP, "rules": rules}]}
    return promtool.Job(name, to_yaml(groups), {"rule_files": ["rules.yml"], "evaluation_interval": STEP,
                                                "tests": [test]})


def kq_jobs() -> list[promtool.Job]:
    jobs = []
    for k in (1, 2, 3, 5):
        series = [s for i in range(k) for s in counters(f"l{i}", [(str(FAILED_PER_STEP[i]), 40)])]
        ratios = sorted((FAILED_PER_STEP[i] / 10 for i in range(k)), reverse=True)
        reach = sum(FAILED_PER_STEP[:k]) / (10 * k)
        for q in range(1, k + 1):
            jobs.append(job(f"k={k} q={q}", q, series, [value(QUORUM, 10, ratios[q - 1]), value(REACH, 10, reach)]))
    return jobs


def churn_jobs() -> list[promtool.Job]:
    # l0 fails 40%, l2 80% from the start; l4 (60%) appears at 10m and leaves (stale) at 25m
    coming = [*counters("l0", [("4", 80)]), *counters("l2", [("8", 80)]),
              *counters("l4", [(".", 20), ("6", 30), (".", 30)])]
    appear = job("a location appearing and disappearing", 2, coming, [
        value(QUORUM, 8, 0.4),    # k=2, q=2: the smaller
        value(QUORUM, 20, 0.6),   # k=3, q=2: the middle one
        value(QUORUM, 38, 0.4),   # gone again (its samples older than the window)
    ])
    # l1 turns blind at 10m (its probes excluded: counters flat), back at 25m
    blind = [*counters("l0", [("8", 80)]), *counters("l1", [("6", 20), ("=", 30), ("6", 30)]),
             *counters("l2", [("2", 80)])]
    blinded = job("a blind location drops out instead of counting", 2, blind, [
        value(QUORUM, 8, 0.6),    # 0.8, 0.6, 0.2: q=2 -> 0.6
        value(QUORUM, 20, 0.2),   # l1 has no counted probe: 0.8, 0.2 -> 0.2
        value(REACH, 20, 0.5),
        value(QUORUM, 35, 0.6),
    ])
    # l0's replica restarts at 15m: its counters start again from 0
    reset = [*counters("l0", [("4", 30), ("reset", 1), ("4", 49)]), *counters("l1", [("8", 80)])]
    resets = job("a counter reset changes no ratio", 1, reset, [
        value(QUORUM, 14, 0.8), value(QUORUM, 17, 0.8), value(REACH, 30, 0.6),
    ])
    return [appear, blinded, resets]


def ticket(location: str) -> dict[str, Any]:
    rule = partially_unreachable(NS, MON, 30_000, 2)
    return {"exp_labels": {**rule["labels"], names.LABEL_LOCATION: location},
            "exp_annotations": {k: v.replace("{{ $labels.namespace }}", NS).replace("{{ $labels.monitor }}", MON)
                                .replace("{{ $labels.location }}", location) for k, v in rule["annotations"].items()}}


def alert_jobs() -> list[promtool.Job]:
    alert = names.ALERT_PARTIALLY_UNREACHABLE
    one = [*counters("a", [("0", 20), ("10", 30), ("0", 30)]), *counters("b", [("0", 80)]),
           *counters("c", [("0", 80)])]
    partial = job("one of three failing: one ticket naming it", 2, one, [], [
        {"alertname": alert, "eval_time": "12m", "exp_alerts": []},     # not yet its for:
        {"alertname": alert, "eval_time": "20m", "exp_alerts": [ticket("a")]},
        {"alertname": alert, "eval_time": "35m", "exp_alerts": []},
    ])
    two = [*counters("a", [("0", 20), ("10", 30), ("0", 30)]), *counters("b", [("0", 20), ("10", 30), ("0", 30)]),
           *counters("c", [("0", 80)])]
    quorate = job("two of three failing (the quorum): no ticket", 2, two, [value(QUORUM, 20, 1.0)], [
        {"alertname": alert, "eval_time": f"{m}m", "exp_alerts": []} for m in (12, 20, 30)])
    return [partial, quorate]


JOBS = [*kq_jobs(), *churn_jobs(), *alert_jobs()]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, promtool.Result]:
    return promtool.run_many(JOBS, tmp_path_factory.mktemp("quorum"))


@pytest.mark.parametrize("name", [j.name for j in JOBS])
def test_quorum_scenario(results: dict[str, promtool.Result], name: str) -> None:
    assert results[name].ok, results[name].output


def test_the_rules_pass_promtool_check(tmp_path: Path) -> None:
    path = tmp_path / "rules.yml"
    path.write_text(JOBS[0].rules)
    assert promtool.check_rules(path).ok, promtool.check_rules(path).output


# --- the generated rules of a monitor of three vantages (alert_rules.rules hooks quorum in) ------
def generated_slo(vantages: int, quorum: int) -> MonitorSLO:
    return MonitorSLO(NS, MON, Objective(Decimal("99.9")), vantages=vantages, quorum=quorum)


def generated(vantages: int, quorum: int) -> str:
    """The monitor's groups after the shared ones (``alert_rules.shared``), as one rule file."""
    return to_yaml({"groups": [*shared_rule_groups(), *rule_groups(generated_slo(vantages, quorum))]})


def generated_doc(vantages: int, quorum: int, test: dict[str, Any]) -> dict[str, Any]:
    test = {**test, "input_series": [*test["input_series"], *engine_params.series(generated_slo(vantages, quorum),
                                                                                 PARAM_SAMPLES)]}
    return {"rule_files": ["rules.yml"], "evaluation_interval": STEP,
            "group_eval_order": eval_order([generated_slo(vantages, quorum)]), "tests": [test]}


def generated_job(name: str, series: list[dict[str, str]], alerts: list[dict[str, Any]],
                  exprs: list[dict[str, Any]] | None = None) -> promtool.Job:
    test = {"interval": STEP, "input_series": series, "alert_rule_test": alerts, "promql_expr_test": exprs or []}
    return promtool.Job(name, generated(3, 2), generated_doc(3, 2, test))


def pages(minute: int, pairs: list[str]) -> dict[str, Any]:
    """The critical pairs (``1h``, ``6h``: their long window) firing at ``minute``, nothing else."""
    expr = f'count by (long) (ALERTS{{alertname="{names.ALERT_ERROR_BUDGET_BURN}",severity="critical",' \
           'alertstate="firing"})'
    return {"expr": expr, "eval_time": f"{minute}m",
            "exp_samples": [{"labels": f'{{long="{p}"}}', "value": 1} for p in pairs]}


GENERATED = [
    generated_job("generated: one of three locations failing pages nobody, spends nothing, opens the ticket", [
        *counters("a", [("0", 20), ("10", 60)]), *counters("b", [("0", 80)]), *counters("c", [("0", 80)])], [
        *({"alertname": names.ALERT_ERROR_BUDGET_BURN, "eval_time": f"{m}m", "exp_alerts": []} for m in (25, 30, 39)),
        {"alertname": names.ALERT_PARTIALLY_UNREACHABLE, "eval_time": "35m", "exp_alerts": [ticket("a")]}],
        [value(QUORUM, 35, 0.0), value(REACH, 35, 1 / 3), value(names.error_ratio_record("30m"), 39, 0.0),
         value(names.error_ratio_record("1h"), 39, 0.0)]),
    generated_job("generated: two of three locations failing page", [
        *counters("a", [("0", 20), ("10", 60)]), *counters("b", [("0", 20), ("10", 60)]),
        *counters("c", [("0", 80)])], [
        {"alertname": names.ALERT_PARTIALLY_UNREACHABLE, "eval_time": "30m", "exp_alerts": []}],
        [pages(24, ["1h", "6h"]), value(QUORUM, 35, 1.0), value(names.error_ratio_record("30m"), 39, 0.85)]),
    # 30m at 39m: the tiles ending 15m..35m fail under the quorum (1.0), the one ending 10m in one of ten
    # probes: (5 + 0.1) / 6; without the quorum (the shared tiles) two of three locations' failures: 0.57
]


@pytest.mark.parametrize("job_", GENERATED, ids=[j.name for j in GENERATED])
def test_generated_rules_of_three_vantages(tmp_path: Path, job_: promtool.Job) -> None:
    result = promtool.run_test_rules(job_, tmp_path)
    assert result.ok, result.output


@pytest.mark.parametrize(("vantages", "quorum"), [(1, 1), (3, 2), (5, 1)])
def test_generated_rules_pass_promtool_check(tmp_path: Path, vantages: int, quorum: int) -> None:
    path = tmp_path / "rules.yml"
    path.write_text(generated(vantages, quorum))
    checked = promtool.check_rules(path)
    assert checked.ok, checked.output


def test_one_vantage_generates_todays_rules() -> None:
    assert names.ALERT_PARTIALLY_UNREACHABLE not in generated(1, 1)
    for record in (names.location_error_ratio_record(W), names.reachability_errors_increase_record(W)):
        assert record not in generated(1, 1)
        assert record in generated(3, 2)


def test_three_vantages_cost_one_rule_more_for_the_period_reachability() -> None:
    """The reachability tile is one rule, beside the monitor's error tile under the quorum (both
    recorded at every evaluation of the same group); a monitor of one vantage has none."""
    one, three = (rule_groups(generated_slo(k, q)) for k, q in ((1, 1), (3, 2)))
    tile = names.reachability_errors_increase_record(W)
    [group] = [g for g in three if any(r.get("record") == tile for r in g["rules"])]
    assert [r.get("record") for r in group["rules"]].count(tile) == 1
    assert any(r.get("record") == names.errors_increase_record(W) for r in group["rules"])
    assert not any(r.get("record") == tile for g in one for r in g["rules"])


# --- reachability over the SLO period, read back from the tiles (alert_rules.readback) -----------
PERIOD_S = 30 * 86_400


def period_reachability(minute: int, error_ratio: float) -> dict[str, Any]:
    """What the operator's query for ``status.slo.reachability`` returns at ``minute``: the error ratio."""
    return {"expr": readback.reachability_over_period(PERIOD_S), "eval_time": f"{minute}m",
            "exp_samples": [{"labels": f'{{monitor="{MON}",namespace="{NS}"}}', "value": error_ratio}]}


PERIOD_JOBS = [
    # l0 fails 4 of 10, l2 8 of 10 for 40m; l4 (2 of 10) appears at 10m and leaves after 24.5m. The
    # tiles ending 5m..40m count l0 and l2 from their first sample to their last (79 steps: 790
    # probes each), l4 from 10m to 24.5m (29 steps: 290), its last sample once (the tile ending 25m)
    generated_job("period reachability: a location appearing and leaving", [
        *counters("l0", [("4", 80)]), *counters("l2", [("8", 80)]), *counters("l4", [(".", 20), ("2", 30), (".", 30)])],
        [], [period_reachability(40, (316 + 632 + 58) / (790 + 790 + 290))]),
    # l0's replica restarts at 15m (its counters from 0): the tile ending 15m (steps 21-30) goes
    # negative, clamped to 0 in failures and probes alike: l0 counts 69 of its 78 steps
    generated_job("period reachability: a counter reset over the tiles", [
        *counters("l0", [("4", 30), ("reset", 1), ("4", 49)]), *counters("l1", [("8", 80)])],
        [], [period_reachability(40, (276 + 632) / (690 + 790))]),
]


@pytest.mark.parametrize("job_", PERIOD_JOBS, ids=[j.name for j in PERIOD_JOBS])
def test_period_reachability_from_the_tiles(tmp_path: Path, job_: promtool.Job) -> None:
    result = promtool.run_test_rules(job_, tmp_path)
    assert result.ok, result.output


def test_upgrade_joins_series_without_and_with_location(tmp_path: Path) -> None:
    """A monitor of one vantage across the upgrade: its series without ``location`` stop at 20m and
    go on with ``location`` (a new pod of the new version, counters from 0): today's rules add them
    up by (namespace, monitor), so its ratios and its tiles go on without a gap or a jump."""
    old = counters("x", [("4", 40), (".", 40)])
    for s in old:
        s["series"] = s["series"].replace(',location="x",pod="p-x"', ',pod="old"')
    new = counters("cluster", [(".", 40), ("4", 40)])
    def near(record: str, minute: int) -> dict[str, Any]:
        return {"expr": f"abs({record} - 0.4) < bool 1e-9", "eval_time": f"{minute}m",
                "exp_samples": [{"labels": f'{{monitor="{MON}",namespace="{NS}"}}', "value": 1}]}
    checks = [near(names.error_ratio_record("5m"), m) for m in (15, 30, 39)]
    checks += [near(names.error_ratio_record("1h"), m) for m in (25, 39)]
    checks += [near(names.error_ratio_record("30m"), 39)]  # summed from tiles across the swap
    job_ = promtool.Job("upgrade", generated(1, 1), generated_doc(1, 1, {
        "interval": STEP, "input_series": [*old, *new], "promql_expr_test": checks}))
    result = promtool.run_test_rules(job_, tmp_path)
    assert result.ok, result.output


def test_a_monitor_of_one_vantage_beside_one_of_three(tmp_path: Path) -> None:
    """The shared groups go on recording a one-vantage monitor's ratios and tiles while they leave a
    three-vantage monitor's to its quorum rules, in the same Prometheus."""
    solo = MonitorSLO(NS, "solo", Objective(Decimal("99.9")))
    trio = generated_slo(3, 2)
    rules = to_yaml({"groups": [*shared_rule_groups(), *rule_groups(solo), *rule_groups(trio)]})
    solo_series = [{**s, "series": s["series"].replace(f'monitor="{MON}"', 'monitor="solo"')}
                   for s in counters("x", [("4", 80)])]
    series = [*solo_series, *counters("a", [("0", 20), ("10", 60)]), *counters("b", [("0", 80)]),
              *counters("c", [("0", 80)])]

    def of(monitor: str, record: str, minute: int, expected: float) -> dict[str, Any]:
        return {"expr": f'round({record}{{monitor="{monitor}"}}, 0.0001)', "eval_time": f"{minute}m",
                "exp_samples": [{"labels": f'{{monitor="{monitor}",namespace="{NS}"}}', "value": expected}]}
    checks = [of(m, names.error_ratio_record(w), 39, v) for w in ("5m", "1h", "30m")
              for m, v in (("solo", 0.4), (MON, 0.0))]
    series += engine_params.for_all([solo, trio], PARAM_SAMPLES)
    test = {"interval": STEP, "input_series": series, "promql_expr_test": checks}
    doc = {"rule_files": ["rules.yml"], "evaluation_interval": STEP, "group_eval_order": eval_order([solo, trio]),
           "tests": [test]}
    result = promtool.run_test_rules(promtool.Job("solo and trio", rules, doc), tmp_path)
    assert result.ok, result.output


def test_the_shared_groups_skip_every_record_the_quorum_rules_write() -> None:
    """One rule per series: each record a monitor of several vantages writes under a shared record's
    name is left out of that shared rule for the monitors carrying the quorum marker."""
    own = {r["record"] for g in rule_groups(generated_slo(3, 2)) for r in g["rules"] if "record" in r}
    shared = {r["record"]: r["expr"] for g in shared_rule_groups() for r in g["rules"]}
    both = own & shared.keys()
    assert names.error_ratio_record("5m") in both and names.errors_increase_record("5m") in both
    skip = f"unless on ({', '.join(names.IDENTITY_LABELS)})\n(\n{names.QUORUM_RECORD}\n)"
    assert all(shared[record].endswith(skip) for record in both), both
    one = {r["record"] for g in rule_groups(generated_slo(1, 1)) for r in g["rules"] if "record" in r}
    assert names.QUORUM_RECORD in own and names.QUORUM_RECORD not in one
