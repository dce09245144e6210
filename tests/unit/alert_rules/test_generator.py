"""The rule generator's output as data (no promtool here; see test_generator_promtool.py).

Covers: Contract 4's alerts (names, labels, annotations, page/ticket toggles, the monitor's own
labels and annotations, reserved labels), literal (non-template) annotation text, PromQL
escaping of names, aggregation by (namespace, monitor), the cost shape (no raw window over 1h,
long windows from tiles in a shared 5m group that no fast group reads; what is the same for every
monitor recorded once), deterministic output,
the ``le`` label as client_python renders it, the PrometheusRule object, and the findings.
"""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
import yaml
from prometheus_client.utils import floatToGoString

from alert_rules import findings, names, prometheus_rule_file, prometheus_rule_object, rule_groups, shared
from alert_rules.model import Alerting, LatencyObjective, MonitorSLO, Objective
from alert_rules.promql import string_literal
from alert_rules.shared import shared_rule_groups

DAY = 86_400_000


def slo(availability: str = "99.9", *, interval: int = 30_000, period: int = 30 * DAY, latency: bool = False,
        page: bool = True, ticket: bool = True, labels: dict[str, str] | None = None,
        annotations: dict[str, str] | None = None, name: str = "checkout") -> MonitorSLO:
    lat = LatencyObjective(500, Decimal("99")) if latency else None
    return MonitorSLO("shop", name, Objective(Decimal(availability), period, lat), interval,
                      Alerting(page, ticket, tuple(sorted((labels or {}).items())),
                               tuple(sorted((annotations or {}).items()))))


def alerts(s: MonitorSLO) -> list[dict]:
    return [r for g in rule_groups(s) for r in g["rules"] if "alert" in r]


def keys(s: MonitorSLO) -> set[tuple[str, str, str, str]]:
    return {(r["alert"], r["labels"]["severity"], r["labels"].get("long", ""), r["labels"].get("short", ""))
            for r in alerts(s)}


BURN = {("page", "critical", "1h", "5m"), ("page", "critical", "6h", "30m"),
        ("ticket", "warning", "1d", "2h"), ("ticket", "warning", "3d", "6h")}


@pytest.mark.parametrize(("page", "ticket", "latency"), [
    pytest.param(True, True, False, id="availability-page-and-ticket"),
    pytest.param(True, True, True, id="with-latency-slo"),
    pytest.param(False, True, True, id="page-off"),
    pytest.param(True, False, False, id="ticket-off"),
    pytest.param(False, False, False, id="both-off"),
])
def test_contract_4_alerts_and_toggles(page: bool, ticket: bool, latency: bool) -> None:
    wanted = {"page": page, "ticket": ticket}
    expected = {(names.ALERT_PROBES_ABSENT, "warning", "", ""), (names.ALERT_CERTIFICATE_EXPIRY, "warning", "", ""),
                (names.ALERT_RULES_INCOMPLETE, "warning", "", "")}
    for alert in [names.ALERT_ERROR_BUDGET_BURN] + ([names.ALERT_LATENCY_BUDGET_BURN] if latency else []):
        expected |= {(alert, sev, long, short) for kind, sev, long, short in BURN if wanted[kind]}
    assert keys(slo(page=page, ticket=ticket, latency=latency)) == expected


def test_every_alert_carries_identity_annotations_and_the_monitors_own() -> None:
    s = slo(latency=True, labels={"team": "payments", "severity": "low", "namespace": "x"},
            annotations={"dashboard": "https://grafana/d/1", "runbook_url": "https://runbooks/checkout"})
    assert len(alerts(s)) >= 6
    for rule in alerts(s):
        labels, ann = rule["labels"], rule["annotations"]
        assert labels["namespace"] == "shop" and labels["monitor"] == "checkout"
        assert labels["team"] == "payments"
        assert labels["severity"] in ("critical", "warning")  # the monitor's "severity" never wins
        assert ann["runbook_url"] == "https://runbooks/checkout"
        assert ann["dashboard"] == "https://grafana/d/1"
        assert "shop/checkout" in ann["summary"] and "shop/checkout" in ann["description"]
    assert {f.field for f in findings(s) if f.severity == "warning"} >= {
        "spec.alerting.labels.severity", "spec.alerting.labels.namespace"}


def test_default_runbook_points_at_the_alerts_anchor() -> None:
    assert alerts(slo())
    for rule in alerts(slo()):
        assert rule["annotations"]["runbook_url"].endswith("#" + rule["alert"].lower())


def test_burn_description_states_the_numbers() -> None:
    [page] = [r for r in alerts(slo()) if r["labels"].get("long") == "1h"]
    d = page["annotations"]["description"]
    assert "More than 1.44% of the probes of shop/checkout failed over the last 1h and 5m" in d
    assert "99.9% of probes succeeding over 30d" in d and "14.4x" in d and "2% of the budget" in d
    burning_sel = 'namespace_monitor:route_monitor_probe_errors:burning1h{namespace="shop",monitor="checkout"}'
    assert page["expr"] == f"{burning_sel} == 1"  # the shared record alone
    [burning] = [r["expr"] for r in shared_rule_groups()[0]["rules"]
                 if r["record"] == names.burning_record("availability", "1h")]
    # not while a path is down, nor as soon as this evaluation sees enough of its siblings failing on it
    assert names.FAILING_ON_PATH_RECORD in burning and names.PATH_DOWN_THRESHOLD_RECORD in burning
    burn = burning.split("\nunless on (namespace, monitor)\n")[0].lstrip("(\n")
    assert burn.splitlines()[-2].endswith(">= bool 2)")  # the single-probe guard
    assert "/ 3600 * 0.02" in burn  # the threshold from the monitor's objective and period: 14.4 x budget


def test_annotations_and_labels_are_literal_text_not_templates() -> None:
    s = slo(labels={"team": "a{{b"}, annotations={"note": "see {{ $value }}"})
    assert alerts(s)
    for rule in alerts(s):
        assert rule["labels"]["team"] == 'a{{ "{{" }}b'
        assert rule["annotations"]["note"] == 'see {{ "{{" }} $value }}'
        assert "$labels" not in rule["annotations"]["description"]


@pytest.mark.parametrize(("value", "literal"), [
    pytest.param("shop", '"shop"', id="plain"),
    pytest.param('a"b', '"a\\"b"', id="quote"),
    pytest.param("a\\b", '"a\\\\b"', id="backslash"),
    pytest.param("a\nb", '"a\\nb"', id="newline"),
    pytest.param("ä{x}", '"ä{x}"', id="unicode-and-braces"),
])
def test_promql_string_literal(value: str, literal: str) -> None:
    assert string_literal(value) == literal


_RAW = re.compile(r"(route_monitor_[a-z_]+)\{[^}]*\}(?:\[(\w+)\]| offset (\w+))?")


def test_every_raw_read_is_aggregated_by_monitor_and_at_most_an_hour() -> None:
    """The monitor's own rules read only its own raw series, the shared ones every monitor's; both
    aggregate by monitor and read at most an hour of raw samples (longer windows sum tiles)."""
    reads = 0
    own = [(g, True) for g in rule_groups(slo(latency=True))]
    for group, is_own in [*own, *((g, False) for g in shared.shared_rule_groups())]:
        for rule in group["rules"]:
            raw = list(_RAW.finditer(rule["expr"]))
            reads += len(raw)
            for m in raw:
                assert not is_own or 'namespace="shop",monitor="checkout"' in m.group(0)
                window = m.group(2) or m.group(3)
                assert window in (None, "1m", "2m", "4m", "5m", "10m", "30m", "1h"), (rule.get("record") or rule["alert"], window)
            if raw and "record" in rule:
                # the path info is per (monitor, path): aggregated by both (whichever replica exported it)
                by_monitor = ("sum by (namespace, monitor)", f"max by (namespace, monitor, path) ({names.MONITOR_PATH_INFO}{{")
                assert any(agg in rule["expr"] for agg in by_monitor), rule
    assert reads >= 10, "no raw read of the probe series found: the pattern no longer matches the rules"


def test_long_windows_come_from_tiles_in_a_shared_5m_group_the_fast_groups_never_read() -> None:
    fast, long = rule_groups(slo(latency=True))  # 30 days: no period group of its own
    shared_fast, shared_long, _shared_period = shared_rule_groups()
    assert "interval" not in fast and long["interval"] == "5m" and shared_long["interval"] == "5m"
    long_records = {r["record"] for r in shared_long["rules"]}
    assert names.error_ratio_record("3d") in long_records and names.error_count_record("5m") in long_records
    assert names.slow_ratio_record("3d") in long_records and names.slow_count_record("6h") in long_records
    for rule in [*fast["rules"], *shared_fast["rules"]]:
        assert not any(rec + "{" in rule["expr"] for rec in long_records), rule
    three_days = next(r for r in shared_long["rules"] if r["record"] == names.error_ratio_record("3d"))
    assert "[3d:5m]" in three_days["expr"] and "route_monitor_probes_total" not in three_days["expr"]
    assert "[3d:5m]" not in prometheus_rule_file([slo(latency=True)], shared=False)


def _rules_per_kind(text: str) -> tuple[int, int]:
    rules = [r for g in yaml.safe_load(text)["groups"] for r in g["rules"]]
    return sum("record" in r for r in rules), sum("alert" in r for r in rules)


def test_what_is_the_same_for_every_monitor_is_recorded_once() -> None:
    """The shared groups do not grow with the monitors; a monitor adds its alerts and one record,
    the marker that its rules are loaded (every tile), whatever its SLIs: its objective, period and
    failing window come from the engine's series (recorded by the shared group for every monitor),
    its failing records are shared (probed every 30s), so are its period ratio and budget (30 days)
    and its latency SLI (the engine counts its fast probes under one name). Its fast group (every
    evaluation) holds its page, and no record and no constant."""
    def text(n: int, latency: bool = False) -> str:
        return prometheus_rule_file([slo(name=f"m{i}", latency=latency) for i in range(n)])
    shared_records = sum(len(g["rules"]) for g in shared_rule_groups())
    one, two = _rules_per_kind(text(1)), _rules_per_kind(text(2))
    assert one[0] == shared_records + 1 and two[0] == shared_records + 2 * 1
    assert two[1] == 2 * one[1] == 2 * 7
    assert _rules_per_kind(text(2, latency=True))[0] == shared_records + 2 * 1
    assert prometheus_rule_file([slo(name="a")], shared=False).count("- record:") == 1
    fast = rule_groups(slo())[0]["rules"]
    assert [r.get("alert") for r in fast] == [names.ALERT_ERROR_BUDGET_BURN]
    for group in rule_groups(slo(latency=True)):
        for rule in group["rules"]:
            assert "vector(" not in rule["expr"] or rule.get("record") == names.RULES_OBJECTIVE_RECORD


def test_output_is_deterministic_and_independent_of_input_order() -> None:
    a, b = slo(name="a", latency=True), slo(name="b", availability="99")
    text = prometheus_rule_file([a, b])
    assert text == prometheus_rule_file([b, a])
    assert text.startswith("# Code generated by route-monitor. DO NOT EDIT.\n")
    groups = yaml.safe_load(text)["groups"]
    assert [g["name"] for g in groups] == [*shared.GROUPS, *(f"route-monitor/shop/{m}{suffix}" for m in ("a", "b")
                                                            for suffix in ("", "/long-windows"))]  # 30 days: shared


@pytest.mark.parametrize("threshold_ms", [1, 5, 100, 250, 300, 500, 1000, 1500, 2500, 10_000, 12_000, 30_000])
def test_le_label_matches_client_python(threshold_ms: int) -> None:
    assert names.le_label(threshold_ms / 1000) == floatToGoString(threshold_ms / 1000)


def test_the_latency_sli_reads_the_fast_counter_not_a_bucket() -> None:
    """Every monitor's fast probes are one counter (``route_monitor_probes_fast_total``), whatever its
    threshold: the latency ratios are shared rules, and no rule depends on a bucket's ``le``."""
    shared_fast = next(r for g in shared_rule_groups() for r in g["rules"]
                       if r.get("record") == names.slow_ratio_record("5m"))
    assert f"rate({names.PROBES_FAST_TOTAL}[5m])" in shared_fast["expr"] and "le=" not in shared_fast["expr"]
    own = prometheus_rule_file([slo(latency=True)], shared=False)
    assert "_bucket" not in own and names.slow_ratio_record("5m") not in own


def test_prometheusrule_object() -> None:
    obj = prometheus_rule_object(slo(latency=True))
    assert obj["apiVersion"] == "monitoring.coreos.com/v1" and obj["kind"] == "PrometheusRule"
    assert obj["metadata"]["name"] == "route-monitor-checkout" and obj["metadata"]["namespace"] == "shop"
    assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "route-monitor"
    assert "ownerReferences" not in obj["metadata"]
    assert obj["spec"]["groups"] == rule_groups(slo(latency=True))


@pytest.mark.parametrize(("monitor", "expected"), [
    pytest.param(slo(), [], id="default-99.9-30s-is-clean"),
    pytest.param(slo("90"), [("error", "spec.slo.availability", "1h/5m page can never fire")], id="90-page-never-fires"),
    pytest.param(slo("90", page=False), [], id="90-with-page-off"),
    pytest.param(slo("60", page=False), [("error", "spec.slo.availability", "1d/2h ticket can never fire")],
                 id="60-ticket-never-fires"),
    pytest.param(slo("99.99"), [("warning", "spec.probe.interval", "a single bad probe never alerts")],
                 id="99.99-at-30s-guard-binds"),
    pytest.param(slo("99.9", interval=60_000), [("warning", "spec.probe.interval", "1h/5m needs 2 in 1h")],
                 id="99.9-at-1m-guard-binds"),
    pytest.param(slo(interval=600_000), [("error", "spec.probe.interval", "probe at least every 5m")],
                 id="interval-10m"),
    pytest.param(slo(interval=120_000), [("warning", "spec.probe.interval", "only 2 probe(s)")], id="interval-2m"),
    pytest.param(slo(interval=300_000), [("error", "spec.probe.interval", "probe at least every 2m")],
                 id="interval-5m-with-page"),
    pytest.param(slo(interval=300_000, page=False), [("warning", "spec.probe.interval", "only 1 probe(s)")],
                 id="interval-5m-page-off"),
    pytest.param(slo(period=2 * DAY), [("error", "spec.slo.period", "3d/6h ticket window is longer")],
                 id="period-shorter-than-3d"),
    pytest.param(slo(period=7 * DAY, ticket=False), [("warning", "spec.probe.interval", "1h/5m needs 2")],
                 id="7d-pages-only"),
    pytest.param(slo(period=28 * DAY, page=False), [("warning", "spec.slo.period", "3d/6h ticket fires at 0.93x")],
                 id="28d-ticket-below-1x"),
    pytest.param(slo(page=False, ticket=False), [("warning", "spec.alerting", "no burn-rate alert")], id="all-off"),
    pytest.param(slo(labels={"bad-name": "x"}), [("error", "spec.alerting.labels.bad-name", "label name")],
                 id="invalid-label-name"),
    pytest.param(slo(annotations={"runbook url": "x"}), [("error", "spec.alerting.annotations.runbook url",
                                                          "annotation name")], id="invalid-annotation-name"),
])
def test_findings(monitor: MonitorSLO, expected: list[tuple[str, str, str]]) -> None:
    got = findings(monitor)
    for severity, field, text in expected:
        assert any((f.severity, f.field) == (severity, field) and text in f.message for f in got), got
    assert [f for f in got if f.severity == "error"] == [f for f in got if f.severity == "error" and any(
        (f.field, "error") == (field, sev) for sev, field, _ in expected)]
    if not expected:
        assert got == []


def test_objective_that_cannot_page_names_the_lowest_that_can() -> None:
    [f] = findings(slo("90"))
    assert "use an objective above 93.06%" in f.message and "spec.alerting.page: false" in f.message


@pytest.mark.parametrize("monitor", [
    pytest.param("checkout", id="short"),
    pytest.param("a" * 49, id="longest-without-hash"),
    pytest.param("b" * 63, id="63-character-route-name"),
    pytest.param("c" * 62 + "-x", id="hyphen-at-the-cut"),
    pytest.param(".".join(["d" * 60] * 4), id="253-character-subdomain"),
])
def test_generated_rule_names_are_prefixed_stable_and_short(monitor: str) -> None:
    """A team's own PrometheusRule named after its application can never be taken for ours; the
    name is a function of the monitor's name alone and a valid DNS label (<= 63 characters)."""
    name = names.prometheus_rule_name(monitor)
    assert name.startswith("route-monitor-") and len(name) <= 63
    assert re.fullmatch(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?", name)
    assert name == names.prometheus_rule_name(monitor)
    if len("route-monitor-" + monitor) <= 63:
        assert name == "route-monitor-" + monitor


def test_long_names_that_share_a_prefix_get_different_rules() -> None:
    a, b = "x" * 70 + "-east", "x" * 70 + "-west"
    assert names.prometheus_rule_name(a) != names.prometheus_rule_name(b)


def test_a_usual_period_is_summed_by_the_shared_rules_another_by_the_monitors_own_group() -> None:
    """A week, two or four weeks and 30 days: the shared period group records the period ratio and
    budget of every monitor of those periods; a monitor of another period has a group of its own
    for them, which the shared rules leave alone (its recorded period matches none of theirs)."""
    usual = [slo(name=f"p{days}", period=days * DAY) for days in (7, 14, 28, 30)]
    assert all(len(rule_groups(s)) == 2 for s in usual)
    [*_, own] = rule_groups(slo(name="odd", period=21 * DAY))
    assert own["name"].endswith("/period") and "[21d:1h]" in own["rules"][0]["expr"]
    shared_period = shared_rule_groups()[2]
    ratio = next(r for r in shared_period["rules"] if r["record"] == names.PERIOD_ERROR_RATIO_RECORD)
    for days in (7, 14, 28, 30):
        assert f"[{days}d:1h]" in ratio["expr"] and f"== {days * 86400})" in ratio["expr"]
    assert "21d" not in ratio["expr"] and "== 1814400" not in ratio["expr"]
