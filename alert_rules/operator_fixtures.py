"""``promtool test rules`` fixtures for the operator's own alerts (:mod:`alert_rules.operator_alerts`).

One test group per alert, each with a case that must fire (with its exact labels and rendered
annotations) and the quiet cases that must not: two SLOs and route-monitor down -> one page saying
"2 SLOs are blind", not two; one of two replicas still up -> quiet; no SLOs at all -> quiet.
Series are sampled every minute; expected values follow from the series (e.g. a counter rising
by 1 a minute has an ``increase(...[15m])`` of 15).
"""

from __future__ import annotations

from typing import Any

from alert_rules import names
from alert_rules.operator_alerts import (
    MONITORS_NOT_READY,
    OPERATOR_DOWN,
    PROBER_BLIND,
    PROBES_SKIPPED,
    RECONCILE_ERRORS,
    SCHEDULE_LAG,
    STATUS_THROTTLED,
    OperatorAlerting,
    operator_rule_groups,
)


def _expected(settings: OperatorAlerting, alert: str, values: dict[str, str], severity: str = "",
              **labels: str) -> dict[str, Any]:
    [rule] = [r for g in operator_rule_groups(settings) for r in g["rules"] if r["alert"] == alert
              and (not severity or r["labels"][names.LABEL_SEVERITY] == severity)]
    annotations = {}
    for key, text in rule["annotations"].items():
        for placeholder, value in values.items():
            text = text.replace(placeholder, value)
        annotations[key] = text
    return {"exp_labels": {**rule["labels"], **labels}, "exp_annotations": annotations}


def _group(name: str, series: list[tuple[str, str]], cases: list[tuple[str, str, list[dict[str, Any]]]]
           ) -> dict[str, Any]:
    return {"name": name, "interval": "1m", "input_series": [{"series": s, "values": v} for s, v in series],
            "alert_rule_test": [{"eval_time": at, "alertname": alert, "exp_alerts": exp}
                                for at, alert, exp in cases]}


def operator_promtool_tests(settings: OperatorAlerting | None, rule_file: str) -> dict[str, Any]:
    s = settings or OperatorAlerting()
    job = f'job="{s.job}"'
    loaded = names.RULES_OBJECTIVE_RECORD  # recorded every tile: once in five of these steps
    objectives = [(f'{loaded}{{namespace="shop",monitor="checkout"}}', "1 _x4 1 _x4 1 _x4 1 _x4 1 _x4 1 _x4 1 _x4 1"),
                  (f'{loaded}{{namespace="shop",monitor="cart"}}', "1 _x4 1 _x4 1 _x4 1 _x4 1 _x4 1 _x4 1 _x4 1")]
    down = _expected(s, OPERATOR_DOWN, {"{{ $value }}": "2"})
    groups = [
        _group("operator down: one page for all blind SLOs", [
            *objectives, (f'up{{{job},instance="a"}}', "1x5 0x30"), (f'up{{{job},instance="b"}}', "1x5 0x30")],
            [("4m", OPERATOR_DOWN, []), ("9m", OPERATOR_DOWN, []), ("15m", OPERATOR_DOWN, [down])]),
        _group("operator down: one replica still up is not down", [
            *objectives, (f'up{{{job},instance="a"}}', "1x40"), (f'up{{{job},instance="b"}}', "1x5 0x30")],
            [("20m", OPERATOR_DOWN, [])]),
        _group("operator down: no SLOs, nothing blind", [(f'up{{{job},instance="a"}}', "0x40")],
               [("20m", OPERATOR_DOWN, [])]),
        _group("operator down where the SLOs of other namespaces are invisible: the monitors it last owned",
               [(f'up{{{job},instance="a"}}', "1x5 0x30"), (f'up{{{job},instance="b"}}', "1x5 0x30"),
                (f'{names.OWNED_MONITORS}{{{job},instance="a"}}', "2x5"),
                (f'{names.OWNED_MONITORS}{{{job},instance="b"}}', "1x5")],
               [("15m", OPERATOR_DOWN, [_expected(s, OPERATOR_DOWN, {"{{ $value }}": "3"})])]),
        _group("reconcile errors", [(f'{names.RECONCILE_ERRORS_TOTAL}{{{job},reason="forbidden"}}', "0+1x40")],
               [("10m", RECONCILE_ERRORS, []),
                ("30m", RECONCILE_ERRORS, [_expected(s, RECONCILE_ERRORS, {"{{ $value | humanize }}": "15"})])]),
        _group("reconcile errors: a few retried errors are quiet",
               [(f'{names.RECONCILE_ERRORS_TOTAL}{{{job},reason="conflict"}}', "0x5 3x35")],
               [("30m", RECONCILE_ERRORS, [])]),
        _group("schedule lag", [
            (f'{names.SCHEDULE_LAG_SECONDS}_bucket{{{job},instance="a",le="1.0"}}', "0x40"),
            (f'{names.SCHEDULE_LAG_SECONDS}_bucket{{{job},instance="a",le="10.0"}}', "0x40"),
            (f'{names.SCHEDULE_LAG_SECONDS}_bucket{{{job},instance="a",le="30.0"}}', "0+10x40"),
            (f'{names.SCHEDULE_LAG_SECONDS}_bucket{{{job},instance="a",le="+Inf"}}', "0+10x40")],
            [("10m", SCHEDULE_LAG, []),
             # every start in the (10s, 30s] bucket: p99 interpolates to 10 + 0.99 * 20 = 29.8 s
             ("30m", SCHEDULE_LAG, [_expected(s, SCHEDULE_LAG, {"{{ $labels.instance }}": "a",
                                                                "{{ $value | humanizeDuration }}": "29.8s"},
                                              instance="a")])]),
        _group("schedule lag: fast starts are quiet", [
            (f'{names.SCHEDULE_LAG_SECONDS}_bucket{{{job},instance="a",le="1.0"}}', "0+10x40"),
            (f'{names.SCHEDULE_LAG_SECONDS}_bucket{{{job},instance="a",le="+Inf"}}', "0+10x40")],
            [("30m", SCHEDULE_LAG, [])]),
        _group("probes skipped", [(f'{names.PROBES_SKIPPED_TOTAL}{{{job},instance="a"}}', "0+1x40")],
               [("5m", PROBES_SKIPPED, []),
                ("30m", PROBES_SKIPPED, [_expected(s, PROBES_SKIPPED, {"{{ $labels.instance }}": "a",
                                                                        "{{ $value | humanize }}": "10"},
                                                   instance="a")])]),
        _group("monitors not ready", [
            (f'{names.MONITORS}{{{job},instance="a",state="ready"}}', "5x40"),
            (f'{names.MONITORS}{{{job},instance="a",state="invalid"}}', "0x5 2x35"),
            (f'{names.MONITORS}{{{job},instance="b",state="invalid"}}', "0x40")],
            [("10m", MONITORS_NOT_READY, []),
             ("30m", MONITORS_NOT_READY, [_expected(s, MONITORS_NOT_READY, {"{{ $value }}": "2"})])]),
        _group("status writes throttled", [(f'{names.STATUS_WRITES_DEFERRED_TOTAL}{{{job},instance="a"}}',
                                            "0+120x40")],
               [("30m", STATUS_THROTTLED, [_expected(s, STATUS_THROTTLED, {"{{ $value | humanize }}": "2"})])]),
    ]
    return {"rule_files": [rule_file], "evaluation_interval": "1m", "tests": [*groups, *_blind_groups(s)]}


def _blind_groups(s: OperatorAlerting) -> list[dict[str, Any]]:
    """One blind replica of three: a ticket (not before 5m), no page; all blind: a page and no ticket;
    a short blip: nothing; a blind replica that stopped reporting (its Lease expired, its scrape
    fails) leaves the seeing ones: quiet."""
    job = f'job="{s.job}"'

    def blind(member: str, values: str) -> tuple[str, str]:
        return f'{names.PROBER_BLIND}{{{job},instance="{member}",member="{member}"}}', values

    ticket = _expected(s, PROBER_BLIND, {"{{ $value }}": "1"}, names.SEVERITY_WARNING)
    page = _expected(s, PROBER_BLIND, {"{{ $value }}": "3"}, names.SEVERITY_CRITICAL)
    return [
        _group("prober blind: one of three replicas is a ticket, not a page",
               [blind("a", "0x5 1x30"), blind("b", "0x40"), blind("c", "0x40")],
               [("8m", PROBER_BLIND, []), ("15m", PROBER_BLIND, [ticket])]),
        _group("prober blind: every replica is a page, and the ticket gives way to it",
               [blind("a", "0x5 1x30"), blind("b", "0x5 1x30"), blind("c", "0x5 1x30")],
               [("7m", PROBER_BLIND, []), ("15m", PROBER_BLIND, [page])]),
        _group("prober blind: a blip shorter than the wait is quiet",
               [blind("a", "0x5 1x2 0x30"), blind("b", "0x40")], [("9m", PROBER_BLIND, [])]),
        _group("prober blind: a blind replica that stopped reporting leaves the others seeing",
               [blind("a", "0x5 1x2 stale"), blind("b", "0x40")], [("20m", PROBER_BLIND, [])]),
    ]
