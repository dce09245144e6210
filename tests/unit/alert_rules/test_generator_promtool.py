"""The generated rules under Debian's real promtool (Prometheus 2.42).

Covers:
- ``promtool check rules --lint=all --lint-fatal`` on rule sets for a spread of objectives,
  periods, intervals and latency SLOs (many monitors per file: no duplicate rules), and on
  names that need escaping;
- the ``promtool test rules`` fixtures the generator writes for itself, for several monitors;
- hand-written scenarios on synthetic counters, each asserting timing: a single failed probe
  never fires a burn alert at any interval and objective (with history and on a new monitor);
  a hard outage pages within two minutes of the budget math allowing it; a steady 0.5% error
  rate at 99.9% tickets and never pages; a steady 2% pages within the hour; after recovery the
  1h/5m page resolves within 10 minutes and no page is left after 40; a prober restart and a
  move to another instance fire nothing and leave no gap; a latency burn pages on latency
  only; probes vanishing fire RouteMonitorProbesAbsent; the user's ``{{`` shows literally;
- Contract 9 (in the generator's own fixtures, for every fixture monitor): a hard outage inside
  a 2h maintenance window pages only after it ends, within minutes; a window over a healthy
  period fires nothing (and would fire RouteMonitorProbesAbsent if excluded probes were not
  counted as present); a target failing from its creation pages right after warm-up, one that
  comes up within warm-up never pages;
- a monitor's rules loaded without the shared groups: no burn alert can fire through an hour of
  failures, and RouteMonitorRulesIncomplete fires after 10 minutes (with them, it never does);
- the scenarios can fail: without the two-probe guard, the single-failure scenario fails.

Scenarios of one input interval share a promtool run (each with a monitor of its own, the shared
groups once: promtool evaluates every group at every step, so one run of N monitors costs far less
than N runs); the runs go in parallel (module fixture) and each scenario is reported on its own.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

from alert_rules import durations, names, params, prometheus_rule_file, promtool_tests
from alert_rules.fixtures import eval_order
from alert_rules.model import Alerting, LatencyObjective, MonitorSLO, Objective
from alert_rules.rules import rule_groups
from alert_rules.timeline import Timeline, steps
from tests.support import engine_params, promtool
from tests.support.promtool import Job

pytestmark = pytest.mark.prometheus

DAY = 86_400_000
BURN = "RouteMonitor(Error|Latency)BudgetBurn"


def monitor(availability: str = "99.9", interval_s: float = 30, *, name: str = "web", period_days: int = 30,
            latency: tuple[int, str] | None = None, page: bool = True, ticket: bool = True,
            labels: tuple[tuple[str, str], ...] = (), annotations: tuple[tuple[str, str], ...] = ()) -> MonitorSLO:
    lat = LatencyObjective(latency[0], Decimal(latency[1])) if latency else None
    return MonitorSLO("shop", name, Objective(Decimal(availability), period_days * DAY, lat), int(interval_s * 1000),
                      Alerting(page, ticket, labels, annotations))


# --- promtool check rules --------------------------------------------------------------------

@pytest.mark.parametrize("availability", ["93.1", "95", "99", "99.5", "99.9", "99.95", "99.99", "99.999"])
@pytest.mark.parametrize("period_days", [7, 28, 30, 90])
def test_promtool_check_rules_accepts_every_shape(tmp_path: Path, availability: str, period_days: int) -> None:
    slos = [monitor(availability, interval, name=f"m{i}-{j}", period_days=period_days, latency=lat)
            for i, interval in enumerate((1, 5, 10, 15, 30, 45, 60, 120, 300))
            for j, lat in enumerate((None, (250, "99"), (1000, "95"), (2500, "99.9")))]
    path = tmp_path / "rules.yml"
    path.write_text(prometheus_rule_file(slos))
    result = promtool.check_rules(path)
    assert result.ok, result.output
    assert f"SUCCESS: {sum(1 for line in path.read_text().splitlines() if line.startswith(('  - record', '  - alert')))}" \
        in result.output


def test_promtool_check_rules_with_names_that_need_escaping(tmp_path: Path) -> None:
    odd = MonitorSLO('we"ird\\ns', "a{b}\nc", Objective(Decimal("99.9")),
                     alerting=Alerting(labels=(("team", "{{ oops"),), annotations=(("note", "{{ .Broken"),)))
    path = tmp_path / "rules.yml"
    path.write_text(prometheus_rule_file([odd]))
    result = promtool.check_rules(path)
    assert result.ok, result.output


# --- scenarios -------------------------------------------------------------------------------

def run(seq: list[float | str]) -> str:
    return " ".join(str(v) for v in seq)


def counters(outcomes: str, *, start_failures: int = 0) -> tuple[list[float], list[float]]:
    """'.' = successful probe, 'x' = failed probe: cumulative (success, failure) per step."""
    ok, bad, s, f = [], [], 0, start_failures
    for c in outcomes:
        s += c == "."
        f += c == "x"
        ok.append(s)
        bad.append(f)
    return ok, bad


def series(outcomes: str, *, instance: str = "p0:8080", name: str = "web") -> list[dict[str, str]]:
    ok, bad = counters(outcomes)
    sel = f'route_monitor_probes_total{{namespace="shop",monitor="{name}",instance="{instance}",result='
    return [{"series": sel + '"success"}', "values": run(ok)}, {"series": sel + '"failure"}', "values": run(bad)}]


def alerts_sel(alertname: str = BURN, name: str = "web", **labels: str) -> str:
    extra = "".join(f',{k}="{v}"' for k, v in {"alertstate": "firing", **labels}.items())
    return f'ALERTS{{alertname=~"{alertname}",namespace="shop",monitor="{name}"{extra}}}'


def never(span: str, **labels: str) -> dict:
    """No matching alert at any evaluation during the span ending at ``span``."""
    return {"expr": f"count_over_time({alerts_sel(**labels)}[{span}])", "eval_time": span, "exp_samples": []}


def none_at(at: str, **labels: str) -> dict:
    return {"expr": alerts_sel(**labels), "eval_time": at, "exp_samples": []}


def firing_at(at: str, **labels: str) -> dict:
    sel = alerts_sel(**labels)
    return {"expr": f"count({sel})", "eval_time": at, "exp_samples": [{"labels": "{}", "value": 1}]}


@dataclass(frozen=True)
class Scenario:
    """One hand-written scenario: a monitor of its own (named after the scenario), its series at
    ``interval`` and its checks. Scenarios of one interval and length share a promtool run
    (:func:`pack`): one rule file with each monitor's groups and the shared groups once, one test
    group holding every monitor's series, so the shared groups are evaluated once per step for all."""

    name: str
    slo: MonitorSLO
    interval: str
    input_series: list[dict]
    checks: list[dict]

    @property
    def length_ms(self) -> int:
        return max(durations.parse_ms(c["eval_time"]) for c in self.checks)


def scenario(name: str, make: Callable[[str], MonitorSLO], interval: str,
             body: Callable[[str], tuple[list[dict], list[dict]]]) -> Scenario:
    """``make(monitor)`` and ``body(monitor)`` (series, checks) for the scenario's own monitor."""
    monitor_name = f"s{zlib.crc32(name.encode()):08x}"
    return Scenario(name, make(monitor_name), interval, *body(monitor_name))


def _with_params(sc: Scenario, interval: str) -> list[dict]:
    """The scenario's series and its monitor's objective series as the engine exports them (for the
    whole scenario, unless it gives its own)."""
    if engine_params.has_params(sc.input_series):
        return sc.input_series
    return [*sc.input_series, *engine_params.series(sc.slo, sc.length_ms // durations.parse_ms(interval) + 1)]


def pack(scenarios: list[Scenario], *, long_ms: int = 4 * 3_600_000) -> list[Job]:
    """One promtool job per input interval (scenarios longer than ``long_ms`` on their own: the
    others would be evaluated as long), named by the scenarios it holds."""
    by_key: dict[tuple[str, bool, str], list[Scenario]] = {}
    for sc in scenarios:
        alone = sc.length_ms > long_ms
        by_key.setdefault((sc.interval, alone, sc.name if alone else ""), []).append(sc)
    jobs = []
    for (interval, _, _), group in by_key.items():
        slos = [sc.slo for sc in group]
        jobs.append(Job(" + ".join(sc.name for sc in group), prometheus_rule_file(slos), {
            "rule_files": ["rules.yml"], "evaluation_interval": "1m", "group_eval_order": eval_order(slos),
            "tests": [{"interval": interval, "input_series": [x for sc in group for x in _with_params(sc, interval)],
                       "promql_expr_test": [c for sc in group for c in sc.checks]}]}))
    return jobs


def minutes(m: float) -> str:
    return f"{round(m)}m"


SINGLE_FAILURE = [
    (objective, interval) for objective in ("99", "99.9", "99.99", "99.999") for interval in (10, 30, 60, 300)
]


def single_failure_scenarios() -> list[Scenario]:
    out = []
    for objective, interval in SINGLE_FAILURE:
        per_hour = 3600 // interval
        # one failure after an hour of history, then two quiet hours
        history = "." * per_hour + "x" + "." * (2 * per_hour)
        out.append(scenario(f"single-failed-probe-never-fires-{objective}-{interval}s",
                            lambda m, o=objective, i=interval: monitor(o, i, name=m), f"{interval}s",
                            lambda m, h=history: (series(h, name=m), [never("3h", name=m)])))
        if interval == 30:  # a brand-new monitor whose second probe fails: the windows hold little else
            fresh = ".x" + "." * (2 * per_hour)
            out.append(scenario(f"single-failed-probe-on-new-monitor-never-fires-{objective}-{interval}s",
                                lambda m, o=objective, i=interval: monitor(o, i, name=m), f"{interval}s",
                                lambda m, f=fresh: (series(f, name=m), [never("2h", name=m)])))
    return out


HARD_OUTAGE = [("99.9", 30), ("99", 30), ("99.95", 10), ("99.9", 60), ("99.5", 15)]


def hard_outage_scenarios() -> list[Scenario]:
    out = []
    for objective, interval in HARD_OUTAGE:
        per_min = 60 / interval
        budget = (100 - float(objective)) / 100
        math_min = 14.4 * budget * 60  # full outage after which the 1h ratio exceeds 14.4x budget
        outage = "." * int(60 * per_min) + "x" * int(90 * per_min)

        def body(m: str, outage: str = outage, math_min: float = math_min) -> tuple[list[dict], list[dict]]:
            page = {"name": m, "severity": "critical", "long": "1h", "short": "5m"}
            checks = [never("60m", name=m), firing_at(minutes(60 + math_min + 2), **page)]
            if math_min >= 3:
                checks.append(none_at(minutes(60 + math_min - 1.5), **page))
            return series(outage, name=m), checks
        out.append(scenario(f"hard-outage-pages-within-2m-of-budget-math-{objective}-{interval}s",
                            lambda m, o=objective, i=interval: monitor(o, i, name=m), f"{interval}s", body))
    return out


def steady_rate(every: int, hours: float, per_hour: int) -> str:
    """An hour of history, then one failure every ``every`` probes."""
    burn = ("." * (every - 1) + "x") * int(hours * per_hour / every + 1)
    return "." * per_hour + burn[: int(hours * per_hour)]


def _moved(m: str) -> tuple[list[dict], list[dict]]:
    """99.99% at 30s, where a single failure exceeds every threshold: the prober has 7 old failures,
    restarts at 1h (counters back to 0), fails once at 1h10m, moves to another pod at 2h."""
    ok0, bad0 = counters("." * 120, start_failures=7)
    ok1, bad1 = counters("." * 20 + "x" + "." * 99)
    ok2, bad2 = counters("." * 120)
    sel = 'route_monitor_probes_total{namespace="shop",monitor="%s",instance="%s",result="%s"}'
    moved = [
        {"series": sel % (m, "p0:8080", "success"), "values": run([*ok0, *ok1, "stale"])},
        {"series": sel % (m, "p0:8080", "failure"), "values": run([*bad0, *bad1, "stale"])},
        {"series": sel % (m, "p1:8080", "success"), "values": run(["_"] * 240 + ok2)},
        {"series": sel % (m, "p1:8080", "failure"), "values": run(["_"] * 240 + bad2)},
    ]
    gapless = f'count_over_time(namespace_monitor:route_monitor_probe_errors:ratio_rate5m{{monitor="{m}"}}[2h50m])'
    return moved, [never("3h", alertname=".+", name=m),
                   {"expr": gapless, "eval_time": "3h",
                    "exp_samples": [{"labels": f'{{namespace="shop",monitor="{m}"}}', "value": 171}]}]


def _slow(m: str) -> tuple[list[dict], list[dict]]:
    """Latency 99% under 500ms: every probe succeeds, 3 in 10 take longer than 500ms."""
    n = 360
    ok, _ = counters("." * n)
    fast = [sum(1 for j in range(i + 1) if j < 120 or j % 10 >= 3) for i in range(n)]
    h = 'route_monitor_probe_duration_seconds_%s{namespace="shop",monitor="' + m + '",instance="p0:8080"%s}'
    return [
        *series("." * n, name=m),
        {"series": h % ("count", ""), "values": run(ok)},
        {"series": h % ("bucket", ',le="0.5"'), "values": run(fast)},
        {"series": h % ("bucket", ',le="+Inf"'), "values": run(ok)},
        {"series": f'route_monitor_probes_fast_total{{namespace="shop",monitor="{m}",instance="p0:8080"}}',
         "values": run(fast)},
    ], [never("3h", alertname="RouteMonitorErrorBudgetBurn", name=m),
        never("60m", alertname="RouteMonitorLatencyBudgetBurn", name=m),
        firing_at("95m", alertname="RouteMonitorLatencyBudgetBurn", name=m, severity="critical", long="1h",
                  short="5m")]


def other_scenarios() -> list[Scenario]:
    def web(m: str) -> MonitorSLO:
        return monitor("99.9", 30, name=m)
    return [
        # 0.5% at 99.9%: 3x..6x budget; the 6h window holds at most 4 failures in 720 (0.56% < 0.6%)
        scenario("steady-0.5pct-at-99.9-tickets-never-pages", web, "30s", lambda m: (
            series(steady_rate(200, 9, 120), name=m),
            [never("10h", name=m, severity="critical"),
             firing_at("10h", name=m, severity="warning", long="3d", short="6h")])),
        # 2% at 99.9%: one failure every 25 minutes; the second one within an hour pages
        scenario("steady-2pct-at-99.9-pages-within-the-hour", web, "30s", lambda m: (
            series(steady_rate(50, 2, 120), name=m),
            [never("60m", name=m, severity="critical"),
             firing_at("111m", name=m, severity="critical", long="1h", short="5m")])),
        # 30 minutes down after an hour up, then up again
        scenario("recovery-resolves-the-1h-page-within-10m-and-every-page-within-40m", web, "30s", lambda m: (
            series("." * 120 + "x" * 60 + "." * 180, name=m),
            [firing_at("89m", name=m, severity="critical", long="1h", short="5m"),
             firing_at("89m", name=m, severity="critical", long="6h", short="30m"),
             none_at("100m", name=m, severity="critical", long="1h", short="5m"),
             none_at("130m", name=m, severity="critical")])),
        scenario("prober-restart-and-move-fire-nothing-and-leave-no-gap",
                 lambda m: monitor("99.99", 30, name=m), "30s", _moved),
        scenario("latency-burn-pages-on-latency-only",
                 lambda m: monitor("99.9", 30, name=m, latency=(500, "99")), "30s", _slow),
        scenario("probes-vanishing-fire-probes-absent", web, "30s", lambda m: (
            [{"series": x["series"], "values": x["values"] + " stale"} for x in series("." * 120, name=m)]
            + engine_params.series(web(m), 120, stale=True),
            [none_at("69m", alertname="RouteMonitorProbesAbsent", name=m),
             firing_at("71m", alertname="RouteMonitorProbesAbsent", name=m, severity="warning"),
             never("71m", alertname="RouteMonitorRulesIncomplete", name=m)])),
    ]


def literal_annotation_job() -> Job:
    slo = monitor(annotations=(("note", "{{ $value }} is not expanded"),), labels=(("team", "a{{b"),))
    tests = promtool_tests(slo, "rules.yml")
    tests["tests"] = [g for g in tests["tests"] if g["name"].startswith("probes absent")]
    assert tests["tests"][0]["alert_rule_test"][0]["exp_alerts"][0]["exp_annotations"]["note"] == \
        "{{ $value }} is not expanded"
    return Job("user-annotations-and-labels-render-literally", prometheus_rule_file([slo]), tests)


def rules_incomplete_job() -> Job:
    """A monitor's own rules without the shared groups (a Prometheus that does not load them): its
    burn alerts cannot fire through an hour of failures, and ``RouteMonitorRulesIncomplete`` says so
    after 10 minutes of probe series, with its exact labels and annotations."""
    slo = monitor("99.9", 30, name="alone")
    [rule] = [r for g in rule_groups(slo) for r in g["rules"] if r.get("alert") == names.ALERT_RULES_INCOMPLETE]
    fired = [{"exp_labels": rule["labels"], "exp_annotations": rule["annotations"]}]
    tests = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [{
        "interval": "30s", "input_series": series("." * 60 + "x" * 120, name="alone") + engine_params.series(slo, 181),
        "alert_rule_test": [
            {"alertname": names.ALERT_RULES_INCOMPLETE, "eval_time": "9m", "exp_alerts": []},
            {"alertname": names.ALERT_RULES_INCOMPLETE, "eval_time": "11m", "exp_alerts": fired},
            {"alertname": names.ALERT_RULES_INCOMPLETE, "eval_time": "89m", "exp_alerts": fired},
            {"alertname": names.ALERT_ERROR_BUDGET_BURN, "eval_time": "89m", "exp_alerts": []},
        ]}]}
    return Job("rules-without-the-shared-groups-fire-rules-incomplete", prometheus_rule_file([slo], shared=False),
               tests)


def without_guard(job: Job) -> Job:
    rules = re.sub(r"\n *\* on \(namespace, monitor\)\n *\([^\n]*:count\w+ >= bool 2\)", "", job.rules)
    assert rules != job.rules
    return Job(job.name + "-WITHOUT-GUARD", rules, job.tests)


def absent_ignoring_excluded_job() -> Job:
    """The generator's healthy-window fixture with a RouteMonitorProbesAbsent that does not count
    excluded probes (as before Contract 9): a window over a healthy period then fires it."""
    slo = monitor("99.9", 30)
    tests = promtool_tests(slo, "rules.yml")
    tests["tests"] = [g for g in tests["tests"] if g["name"].startswith("maintenance window over a healthy period")]
    rules = prometheus_rule_file([slo])
    mutated = re.sub(r"\n *unless on \(namespace, monitor\)\n[^\n]*probes_excluded_total[^\n]*> 0", "", rules)
    assert mutated != rules
    return Job("maintenance-fixtures-WITH-ABSENT-IGNORING-EXCLUDED", mutated, tests)


SCENARIOS = [*single_failure_scenarios(), *hard_outage_scenarios(), *other_scenarios()]
ALONE = [literal_annotation_job(), rules_incomplete_job()]
PACKED = [*pack(SCENARIOS), *ALONE]
JOB_OF = {**{sc.name: j.name for j in PACKED for sc in SCENARIOS if sc.name in j.name.split(" + ")},
          **{j.name: j.name for j in ALONE}}
GUARDED = "single-failed-probe-never-fires-99.99-30s"
MUTANTS = [without_guard(j) for j in PACKED if j.name == JOB_OF[GUARDED]]
ABSENT_MUTANT = absent_ignoring_excluded_job()


@pytest.fixture(scope="module")
def scenario_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, promtool.Result]:
    return promtool.run_many([*PACKED, *MUTANTS, ABSENT_MUTANT], tmp_path_factory.mktemp("scenarios"))


def test_every_scenario_has_its_own_monitor_and_fewer_promtool_runs() -> None:
    assert len({sc.slo.name for sc in SCENARIOS}) == len(SCENARIOS) == 31
    assert set(JOB_OF) == {*(sc.name for sc in SCENARIOS), *(j.name for j in ALONE)}
    assert len(PACKED) <= 9


@pytest.mark.parametrize("name", list(JOB_OF))
def test_scenario(scenario_results: dict[str, promtool.Result], name: str) -> None:
    """A scenario fails when the promtool run holding it fails (its output names the checks)."""
    result = scenario_results[JOB_OF[name]]
    assert result.ok, result.output


def test_single_failure_scenario_catches_a_missing_guard(scenario_results: dict[str, promtool.Result]) -> None:
    [mutant] = MUTANTS
    result = scenario_results[mutant.name]
    guarded = next(sc for sc in SCENARIOS if sc.name == GUARDED).slo.name
    assert not result.ok and "RouteMonitorErrorBudgetBurn" in result.output and guarded in result.output


def test_maintenance_fixtures_catch_probes_absent_ignoring_excluded_probes(
        scenario_results: dict[str, promtool.Result]) -> None:
    result = scenario_results[ABSENT_MUTANT.name]
    assert not result.ok and "RouteMonitorProbesAbsent" in result.output, result.output


# --- the generator's own fixtures ---------------------------------------------------------------

FIXTURE_MONITORS = {
    "99.9-30s-latency": monitor("99.9", 30, latency=(500, "99"), labels=(("team", "shop"),)),
    "99.99-30s": monitor("99.99", 30),
    "99-1m-28d": monitor("99", 60, period_days=28),
    "99.5-15s-7d-latency": monitor("99.5", 15, period_days=7, latency=(300, "95")),
    "95-10s-tickets-only": monitor("95", 10, page=False),
    "99.9-2m-pages-only": monitor("99.9", 120, ticket=False),
}


@pytest.fixture(scope="module")
def fixture_results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, promtool.Result]:
    jobs = [Job(k, prometheus_rule_file([s]), promtool_tests(s, "rules.yml")) for k, s in FIXTURE_MONITORS.items()]
    return promtool.run_many(jobs, tmp_path_factory.mktemp("fixtures"))


def monitors_come_and_go_job() -> Job:
    """The hard-outage fixture of one monitor, while another monitor appears (its series start an
    hour in, with a latency SLO and one slow probe) and a third goes away (its series vanish 45
    minutes in): the burning monitor pages and resolves exactly as alone (the fixture's own
    checks), the new one is recorded as soon as it is scraped, the gone one's ratio ends."""
    burning, added, gone = monitor("99.9", 30), monitor("99.5", 30, name="new", latency=(500, "99")), \
        monitor("99", 30, name="gone")
    doc = promtool_tests(burning, "rules.yml")
    [outage] = [g for g in doc["tests"] if g["name"] == "hard outage pages, then resolves"]
    n = 165 * 2  # the fixture's 30m + 90m + 45m at 30s
    others = [Timeline("shop", "new", tuple(steps("gone", 120) + steps("ok", 60) + steps("slow", 1)
                                            + steps("ok", n - 181)), "0.5",
                       params=params.values(added.objective, added.interval_ms)),
              Timeline("shop", "gone", tuple(steps("ok", 90) + steps("gone", n - 90)),
                       params=params.values(gone.objective, gone.interval_ms))]
    ratio = "namespace_monitor:route_monitor_probe_errors:ratio_rate5m"
    slow = "namespace_monitor:route_monitor_probe_slow:ratio_rate30m"
    checks = [
        {"expr": f'{ratio}{{monitor="new"}}', "eval_time": "59m", "exp_samples": []},
        {"expr": f'{ratio}{{monitor="new"}}', "eval_time": "65m",
         "exp_samples": [{"labels": f'{ratio}{{namespace="shop",monitor="new"}}', "value": 0}]},
        {"expr": f'last_over_time({slow}{{monitor="new"}}[10m]) > bool 0', "eval_time": "100m",
         "exp_samples": [{"labels": '{namespace="shop",monitor="new"}', "value": 1}]},
        {"expr": f'{ratio}{{monitor="gone"}}', "eval_time": "44m",
         "exp_samples": [{"labels": f'{ratio}{{namespace="shop",monitor="gone"}}', "value": 0}]},
        {"expr": f'{ratio}{{monitor="gone"}}', "eval_time": "52m", "exp_samples": []},
    ]
    group = {**outage, "name": "monitors come and go while one burns",
             "input_series": outage["input_series"] + [s for tl in others for s in tl.input_series()],
             "promql_expr_test": outage["promql_expr_test"] + checks}
    return Job("monitors-come-and-go-while-one-burns", prometheus_rule_file([burning, added, gone]), {
        **doc, "group_eval_order": eval_order([burning, added, gone]), "tests": [group]})


def test_monitors_come_and_go_while_one_burns(tmp_path: Path) -> None:
    [result] = promtool.run_many([monitors_come_and_go_job()], tmp_path).values()
    assert result.ok, result.output


@pytest.mark.parametrize("name", list(FIXTURE_MONITORS))
def test_generated_promtool_fixtures_pass(fixture_results: dict[str, promtool.Result], name: str) -> None:
    result = fixture_results[name]
    assert result.ok, result.output


def test_generated_fixtures_cover_the_scenarios() -> None:
    doc = promtool_tests(FIXTURE_MONITORS["99.9-30s-latency"], "rules.yml")
    names = [g["name"] for g in doc["tests"]]
    for expected in ("hard outage pages, then resolves", "single failed probe fires nothing",
                     "steady slow burn tickets and never pages", "probes absent: series vanish",
                     "certificate expiring within 14 days", "slow probes page on latency, not availability",
                     "prober restart and move to another pod fire nothing, leave no gap",
                     "maintenance window over a healthy period fires nothing",
                     "target up within warm-up never pages",
                     "hard outage inside a maintenance window pages only after it ends",
                     "target failing from creation pages right after warm-up"):
        assert expected in names
    assert doc["rule_files"] == ["rules.yml"]


def test_period_error_ratio_and_budget_are_exact_from_hourly_tiles(tmp_path: Path) -> None:
    """The period group: 20 probes a minute, one in four failing, over 5 hours (and a prober restart
    in hour 3): an hourly tile holds exactly the hour's 1,200 probes (none counted twice), the recorded
    period ratio is exactly 0.25 and, at a 50% objective, half of the budget is left."""
    slo = monitor("50", 6, name="period")
    sel = 'namespace="shop",monitor="period"'
    restart = 150  # minutes: the counters start again from 0 (a prober restart)
    ok = f"0+15x{restart - 1} 0+15x{300 - restart}"
    bad = f"0+5x{restart - 1} 0+5x{300 - restart}"
    tests = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "group_eval_order": eval_order([slo]),
             "tests": [{
        "interval": "1m",
        "input_series": [
            {"series": f'route_monitor_probes_total{{{sel},result="success",instance="a"}}', "values": ok},
            {"series": f'route_monitor_probes_total{{{sel},result="failure",instance="a"}}', "values": bad},
            *engine_params.series(slo, 301),
        ],
        "promql_expr_test": [
            # off the 5-minute grid, as Prometheus' own evaluations are (its 2.x ranges include both
            # ends: on the grid a 1h range holds 13 five-minute steps)
            {"expr": f"namespace_monitor:route_monitor_probes:increase1h{{{sel}}}", "eval_time": "4h2m",
             "exp_samples": [{"labels": f"namespace_monitor:route_monitor_probes:increase1h{{{sel}}}", "value": 1200}]},
            {"expr": f"namespace_monitor:route_monitor_probe_errors:ratio_period{{{sel}}}", "eval_time": "5h",
             "exp_samples": [{"labels": f"namespace_monitor:route_monitor_probe_errors:ratio_period{{{sel}}}",
                              "value": 0.25}]},
            {"expr": f"namespace_monitor:route_monitor_error_budget_remaining:ratio_period{{{sel}}}",
             "eval_time": "5h",
             "exp_samples": [{"labels": f"namespace_monitor:route_monitor_error_budget_remaining:ratio_period{{{sel}}}",
                              "value": 0.5}]},
        ],
    }]}
    results = promtool.run_many([Job("period", prometheus_rule_file([slo]), tests)], tmp_path)
    assert results["period"].ok, results["period"].output
