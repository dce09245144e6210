"""Shared-path outages under real promtool (``promtool test rules``), on the generated rules.

Each scenario feeds raw probe counters and ``route_monitor_monitor_path_info`` series (one
sample per 30-second probe) to every monitor's generated rules plus the ``route-monitor-paths``
group and the shared SLI groups, evaluated every 30 seconds, each group after the records it reads;
every order of the groups that decide a page is tried in ``test_path_rules_order``. Covered:

- K/F thresholds: 3 of 8 failing (below F) and 2 of 4 (below K) page per monitor, no SharedPathDown;
- a shared outage: one SharedPathDown (value: monitors affected), never a per-monitor page or
  ticket, before, during or after recovery; it resolves after the hold;
- monitors coming and going: a path down for its 3 monitors is up once 4 healthy ones join (the
  3 then page as usual) and down again when those leave;
- a monitor on two paths: a DNS outage downs ``dns:cluster`` only; a router outage downs the
  router only;
- a flapping path (2 minutes down, 2 up, for an hour): one SharedPathDown firing all along, no
  per-monitor page.
"""

from __future__ import annotations

from collections.abc import Iterable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from alert_rules import failing, names
from alert_rules.fixtures import eval_order
from alert_rules.model import MonitorSLO, Objective
from alert_rules.path_rules import PathAlerting, path_rule_groups
from alert_rules.render import to_yaml
from alert_rules.rules import rule_groups
from alert_rules.shared import shared_rule_groups
from tests.support import engine_params, promtool

pytestmark = pytest.mark.prometheus

STEP_S = 30
STEPS_PER_MIN = 60 // STEP_S
NS = "shop"
BURN = names.ALERT_ERROR_BUDGET_BURN
DOWN = names.ALERT_SHARED_PATH_DOWN


def timeline(*parts: tuple[str, int]) -> str:
    """``("S", 10), ("F", 5)``: 10 minutes of successful probes, then 5 of failures (one per 30s).
    ``S`` success, ``F`` failure (connection refused), ``D`` DNS error, ``.`` no such monitor."""
    return "".join(c * (minutes * STEPS_PER_MIN) for c, minutes in parts)


def _values(samples: Iterable[str | None]) -> str:
    """promtool notation: ``_`` before a series exists, ``stale`` when it goes."""
    out, seen = [], False
    for s in samples:
        if s is None:
            out.append("stale" if seen and out[-1] not in ("stale", "_") else "_")
        else:
            seen = True
            out.append(s)
    return " ".join(out)


def monitor_series(name: str, paths: tuple[str, ...], outcomes: str) -> list[dict[str, str]]:
    """The series the prober exports for ``outcomes``: its counters, its paths and its failing
    verdict (``alert_rules.failing``, computed from the same probes as the prober computes it)."""
    ok = bad = dns = 0
    history: list[tuple[float, int]] = []
    verdicts: list[str | None] = []
    success: list[str | None] = []
    failure: list[str | None] = []
    reasons: dict[str, list[str | None]] = {"connection_refused": [], "dns_error": []}
    info: list[str | None] = []
    first_failure: dict[str, bool] = {"connection_refused": False, "dns_error": False}
    for c in outcomes:
        if c == ".":
            for lst in (success, failure, info, verdicts, *reasons.values()):
                lst.append(None)
            history.clear()  # a monitor that comes back starts afresh, as a new series does
            continue
        ok += c == "S"
        bad += c in "FD"
        dns += c == "D"
        reason = "dns_error" if c == "D" else "connection_refused"
        if c in "FD":
            first_failure[reason] = True
        now = len(success) * STEP_S
        history.append((now, failing.DNS_FAILED if c == "D" else failing.FAILED if c == "F" else failing.PASSED))
        verdicts.append(str(failing.verdict(history, now, STEP_S * 1000)))
        success.append(str(ok))
        failure.append(str(bad))
        info.append("1")
        counts = {"dns_error": dns, "connection_refused": bad - dns}
        for r, lst in reasons.items():
            lst.append(str(counts[r]) if first_failure[r] else None)
    ident = f'namespace="{NS}",monitor="{name}"'
    out = [{"series": f'{names.PROBES_TOTAL}{{{ident},result="success"}}', "values": _values(success)},
           {"series": f'{names.PROBES_TOTAL}{{{ident},result="failure"}}', "values": _values(failure)}]
    for r, lst in reasons.items():
        if any(v is not None for v in lst):
            out.append({"series": f'{names.PROBE_FAILURES_TOTAL}{{{ident},reason="{r}"}}', "values": _values(lst)})
    for p in paths:
        out.append({"series": f'{names.MONITOR_PATH_INFO}{{{ident},path="{p}"}}', "values": _values(info)})
    out.append({"series": f"{names.PROBE_FAILING}{{{ident}}}", "values": _values(verdicts)})
    return out


def job(name: str, monitors: dict[str, tuple[tuple[str, ...], str]], checks: list[dict[str, Any]],
        order: tuple[str, ...] = ()) -> promtool.Job:
    """One promtool job; ``order``: the groups evaluated first, in this order, the others after them
    in their file's order (the shared groups first; promtool's ``group_eval_order`` must name every
    group: one it leaves out ranks with the first one named); without it, each group after the
    records it reads (``alert_rules.fixtures.eval_order``)."""
    slos = [MonitorSLO(NS, m, Objective(Decimal("99.9"))) for m in monitors]
    groups = [*shared_rule_groups(), *(g for slo in slos for g in rule_groups(slo))]
    groups += path_rule_groups(PathAlerting(min_monitors=3, min_ratio=Decimal("0.5"), hold="5m"))
    series = [s for m, (paths, outcomes) in monitors.items() for s in monitor_series(m, paths, outcomes)]
    series += engine_params.for_all(slos, max(len(outcomes) for _, outcomes in monitors.values()))
    alert_tests = [c for c in checks if "alertname" in c]
    expr_tests = [c for c in checks if "expr" in c]
    test: dict[str, Any] = {"interval": f"{STEP_S}s", "input_series": series, "alert_rule_test": alert_tests}
    if expr_tests:
        test["promql_expr_test"] = expr_tests
    doc: dict[str, Any] = {"rule_files": ["rules.yml"], "evaluation_interval": f"{STEP_S}s"}
    listed = set(order)
    doc["group_eval_order"] = ([*order, *(g["name"] for g in groups if g["name"] not in listed)] if order
                               else eval_order(slos, paths=True))
    return promtool.Job(name, to_yaml({"groups": groups}), {**doc, "tests": [test]})


def silent(alert: str, *minutes: float) -> list[dict[str, Any]]:
    return [{"alertname": alert, "eval_time": f"{int(m * 60)}s", "exp_alerts": []} for m in minutes]


def burn_pages(minute: float, monitors: Iterable[str]) -> dict[str, Any]:
    """The 1h/5m page of each monitor, exactly as generated."""
    def page(m: str) -> dict[str, Any]:
        [rule] = [r for g in rule_groups(MonitorSLO(NS, m, Objective(Decimal("99.9")))) for r in g["rules"]
                  if r.get("alert") == BURN and r["labels"][names.LABEL_LONG] == "1h"]
        return {"exp_labels": rule["labels"], "exp_annotations": rule["annotations"]}
    return {"alertname": BURN, "eval_time": f"{int(minute * 60)}s", "exp_alerts": [page(m) for m in sorted(monitors)]}


def path_down(minute: float, path: str, affected: int) -> dict[str, Any]:
    """SharedPathDown firing for ``path`` alone, its value (monitors affected) in the summary."""
    return {"alertname": DOWN, "eval_time": f"{int(minute * 60)}s", "exp_alerts": [{
        "exp_labels": {"path": path, "severity": "critical"},
        "exp_annotations": _annotations(path, affected)}]}


def _annotations(path: str, affected: int) -> dict[str, str]:
    [rule] = [r for r in path_rule_groups()[0]["rules"] if r.get("alert") == DOWN]
    return {k: v.replace("{{ $labels.path }}", path).replace("{{ $value }}", str(affected))
            for k, v in rule["annotations"].items()}


def scenarios() -> list[promtool.Job]:
    healthy = timeline(("S", 60))
    # K/F: router:a has 8 monitors, 3 fail (3/8 < 0.5); router:c has 4, 2 fail (2 < K)
    kf = {f"a{i}": (("router:a",), timeline(("S", 10), ("F", 10), ("S", 40)) if i < 3 else healthy)
          for i in range(8)}
    kf |= {f"c{i}": (("router:c",), timeline(("S", 10), ("F", 10), ("S", 40)) if i < 2 else healthy)
           for i in range(4)}
    thresholds = job("below K or F: each failing monitor pages, no SharedPathDown", kf, [
        burn_pages(15, ["a0", "a1", "a2", "c0", "c1"]), *silent(DOWN, 11, 12, 15, 19),
    ])

    # a shared outage: router:a's 8 monitors fail for 10 minutes; router:b's 3 stay healthy
    shared = {f"a{i}": (("router:a", "dns:cluster"), timeline(("S", 20), ("F", 10), ("S", 100))) for i in range(8)}
    shared |= {f"b{i}": (("router:b", "dns:cluster"), timeline(("S", 130))) for i in range(3)}
    outage = job("a shared outage: one SharedPathDown, no per-monitor page or ticket", shared, [
        path_down(22, "router:a", 8), path_down(29, "router:a", 8), path_down(34, "router:a", 8),
        *silent(DOWN, 19, 37, 60),
        *silent(BURN, *[20 + m / 2 for m in range(0, 220)]),
        *silent(names.ALERT_PROBES_ABSENT, 25, 35, 60),
    ])

    # monitors coming and going: 3 on router:a fail from 10m; 4 healthy ones join at 15m, leave at 30m
    coming = {f"a{i}": (("router:a",), timeline(("S", 10), ("F", 40))) for i in range(3)}
    coming |= {f"n{i}": (("router:a",), timeline((".", 15), ("S", 15), (".", 20))) for i in range(4)}
    come_and_go = job("monitors coming and going change whether the path is down", coming, [
        path_down(13, "router:a", 3),
        *silent(BURN, 11, 12, 13, 14, 15),
        burn_pages(18, ["a0", "a1", "a2"]),     # 3 of 7: the path is up, the 3 page as usual
        *silent(DOWN, 22, 26),                  # held 5m after 15m, then resolved
        path_down(33, "router:a", 3),           # the 4 went at 30m: 3 of 3 again
        *silent(BURN, 33, 36),
    ])

    # a monitor on two paths: DNS outage 10-20m, then router:a outage 40-50m
    two = {f"a{i}": (("router:a", "dns:cluster"), timeline(("S", 10), ("D", 10), ("S", 20), ("F", 10), ("S", 20)))
           for i in range(4)}
    two |= {f"b{i}": (("router:b", "dns:cluster"), timeline(("S", 10), ("D", 10), ("S", 50))) for i in range(4)}
    two_paths = job("a monitor on two paths counts where its failure is", two, [
        path_down(14, "dns:cluster", 8), path_down(44, "router:a", 4),
        *silent(BURN, *range(10, 70)),
    ])

    # a flapping path: 2 minutes down, 2 up, for an hour from 10m
    flap = timeline(("S", 10), *([("F", 2), ("S", 2)] * 15), ("S", 30))
    flapping = {f"a{i}": (("router:a",), flap) for i in range(4)}
    flaps = job("a flapping path is one incident, no per-monitor page", flapping, [
        *(path_down(m / 2, "router:a", 4) for m in range(23, 140)),  # 11.5m .. 69.5m: firing all along
        *silent(BURN, *[10 + m / 2 for m in range(0, 160)]),
    ])
    return [thresholds, outage, come_and_go, two_paths, flaps]


JOBS = scenarios()


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, promtool.Result]:
    return promtool.run_many(JOBS, Path(tmp_path_factory.mktemp("paths")))


@pytest.mark.parametrize("name", [j.name for j in JOBS])
def test_scenario(name: str, results: dict[str, promtool.Result]) -> None:
    result = results[name]
    assert result.ok, result.output[-6000:]
