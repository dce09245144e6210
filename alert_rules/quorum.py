"""Contract 12: a monitor probed from several locations, judged under a quorum (pure).

Per location ``l`` and window ``W`` the error ratio ``r_l`` = failed / counted probes of that
location (blind probes are excluded by the engine, so a blind location has fewer counted probes,
or none and then no ratio: it drops out instead of counting as failures). With ``k`` locations
reporting and a quorum ``q``, the monitor's ratio is ``r(k - q + 1)`` of the ascending ratios,
i.e. the q-th largest: a failure counts only as far as at least ``q`` locations see it. In PromQL
that is exact, with no interpolation: ``min(topk(q, r))``. With fewer locations than ``q``
reporting, the same expression takes the smallest ratio (every location left must see it), so a
monitor never goes unjudged because places went away. For ``k = 1`` it is the one ratio, so a
monitor of one vantage gets the numbers it has today (and the generator keeps today's rules for
it). The reachability ratio (all probes of all locations, no quorum) is recorded beside it.

The long windows are summed from tiles: a tile's failed probes under the quorum are its quorum
ratio times its probes (:func:`error_tile_expr`), so the slow pairs and the period's budget count
what the quorum sees, tile by tile. Beside it one more tile counts the failed probes of every
location (:func:`reachability_tile_rules`, the one rule more than the quorum needs), which the
operator sums over the SLO period for ``status.slo.reachability`` as it sums the tiles under the
quorum for the availability (``alert_rules.readback``).

``RouteMonitorPartiallyUnreachable{namespace, monitor, location}``: a location failing (half of
its probes over the short window, as a failing monitor of a shared path) while fewer than ``q``
locations fail: a ticket naming the location, never a page.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from alert_rules import alerts, durations, names, promql
from alert_rules.model import MonitorSLO

FAILING_RATIO = Decimal("0.5")
PARTIAL_WINDOW_MIN_MS = 120_000
PARTIAL_FOR = "5m"
"""A location must fail this long before the ticket: a short blip from one place is no news."""
BY_LOCATION = f"{promql.BY_MONITOR}, {names.LABEL_LOCATION}"


def _sel(namespace: str, monitor: str, *extra: tuple[str, str]) -> str:
    return promql.selector(names.PROBES_TOTAL, promql.monitor_matchers(namespace, monitor, *extra))


def location_ratio_expr(namespace: str, monitor: str, window: str) -> str:
    """Per location: failed / counted probes over ``window`` (no series without counted probes)."""
    failed = _sel(namespace, monitor, (names.LABEL_RESULT, names.RESULT_FAILURE))
    every = _sel(namespace, monitor)
    return (f"sum by ({BY_LOCATION}) (increase({failed}[{window}]))\n/\n"
            f"(sum by ({BY_LOCATION}) (increase({every}[{window}])) > 0)")


def quorum_ratio_expr(location_ratios: str, quorum: int) -> str:
    """The q-th largest of the per-location ratios (``location_ratios``, a selector of them)."""
    return f"min by ({promql.BY_MONITOR}) (\n  topk by ({promql.BY_MONITOR}) ({quorum}, {location_ratios})\n)"


def reachability_expr(namespace: str, monitor: str, window: str) -> str:
    failed = _sel(namespace, monitor, (names.LABEL_RESULT, names.RESULT_FAILURE))
    every = _sel(namespace, monitor)
    return (f"{promql.by_monitor(promql.increase(failed, window))}\n/\n"
            f"({promql.by_monitor(promql.increase(every, window))} > 0)")


def _labels(namespace: str, monitor: str) -> dict[str, str]:
    return {names.LABEL_NAMESPACE: namespace, names.LABEL_MONITOR: monitor}


def quorum_records(namespace: str, monitor: str, window: str, quorum: int) -> list[dict[str, Any]]:
    """For one window: the per-location ratios, the monitor's ratio under the quorum (today's
    record name) and its reachability ratio."""
    per_location = names.location_error_ratio_record(window)
    located = promql.selector(per_location, promql.monitor_matchers(namespace, monitor))
    return [
        {"record": per_location, "expr": location_ratio_expr(namespace, monitor, window),
         "labels": _labels(namespace, monitor)},
        {"record": names.error_ratio_record(window), "expr": quorum_ratio_expr(located, quorum),
         "labels": _labels(namespace, monitor)},
        {"record": names.reachability_record(window), "expr": reachability_expr(namespace, monitor, window),
         "labels": _labels(namespace, monitor)},
    ]


def partial_window(interval_ms: int) -> str:
    return durations.format_ms(max(4 * interval_ms, PARTIAL_WINDOW_MIN_MS))


def partially_unreachable(namespace: str, monitor: str, interval_ms: int, quorum: int,
                          runbook_base: str = names.DEFAULT_RUNBOOK_BASE) -> dict[str, Any]:
    """The ticket for locations that fail while fewer than ``quorum`` do."""
    ratios = location_ratio_expr(namespace, monitor, partial_window(interval_ms))
    failing = f"(\n{ratios}\n) >= {promql.number(FAILING_RATIO)}"
    expr = (f"{failing}\nand on ({promql.BY_MONITOR})\n"
            f"(count by ({promql.BY_MONITOR}) (\n{failing}\n) < {quorum})")
    alert = names.ALERT_PARTIALLY_UNREACHABLE
    return {
        "alert": alert, "expr": expr, "for": PARTIAL_FOR,
        "labels": {**_labels(namespace, monitor), names.LABEL_SEVERITY: names.SEVERITY_WARNING},
        "annotations": {
            names.ANNOTATION_SUMMARY: "{{ $labels.namespace }}/{{ $labels.monitor }} fails from {{ $labels.location }}",
            names.ANNOTATION_DESCRIPTION: (
                "Probes from {{ $labels.location }} fail while fewer than " f"{quorum} locations see failures: "
                "users near that place (its zone, network or resolver) may be affected, the others are not. "
                "Pages and the error budget count only what the quorum sees."),
            names.ANNOTATION_RUNBOOK_URL: f"{runbook_base.rstrip('/')}#{names.slug(alert)}",
        },
    }


# --- the generator's hook: rules of one monitor -----------------------------------------------
def marker_rule(namespace: str, monitor: str, quorum: int) -> dict[str, Any]:
    """The monitor's quorum as a series, recorded only for a monitor of several vantages: the
    shared groups (``alert_rules.shared``) leave out the monitors that carry it, so the records
    below are written by one rule each, never by the shared one too."""
    return {"record": names.QUORUM_RECORD, "expr": promql.constant(quorum), "labels": _labels(namespace, monitor)}


def error_tile_expr(namespace: str, monitor: str, tile: str, quorum: int) -> str:
    """Failed probes of one tile under the quorum: the tile's quorum ratio (of the per-location
    exact increases, as the tiles of one vantage) times all its probes, so the long windows, the
    slow pairs and the period's budget summed from tiles count what the quorum sees."""
    failed = _sel(namespace, monitor, (names.LABEL_RESULT, names.RESULT_FAILURE))
    every = _sel(namespace, monitor)
    per = f"sum by ({BY_LOCATION}) ({promql.tile_increase(failed, tile)})"
    all_per = f"sum by ({BY_LOCATION}) ({promql.tile_increase(every, tile)})"
    ratios = f"(\n{per}\n/\n({all_per} > 0)\n)"
    return (f"{quorum_ratio_expr(ratios, quorum)}\n*\n"
            f"{promql.by_monitor(promql.tile_increase(every, tile))}")


def ratio_rules(slo: MonitorSLO, windows: tuple[str, ...], tile: str) -> list[dict[str, Any]]:
    """What a monitor of several vantages records instead of the shared groups (none for one
    vantage): the marker, for each of ``windows`` the per-location, quorum (under the shared
    ratio's name) and reachability records, and the error tile under the quorum (recorded at every
    evaluation, each the exact increase over the tile before it, as a latency SLI's tiles: the
    shared window sums step on tile boundaries and take one per step). Everything downstream (the
    window sums, guards, burning records, alerts, path rules) reads these unchanged."""
    if slo.vantages <= 1:
        return []
    rules = [marker_rule(slo.namespace, slo.name, slo.quorum)]
    for window in windows:
        rules += quorum_records(slo.namespace, slo.name, window, slo.quorum)
    rules.append({"record": names.errors_increase_record(tile),
                  "expr": error_tile_expr(slo.namespace, slo.name, tile, slo.quorum),
                  "labels": _labels(slo.namespace, slo.name)})
    rules += reachability_tile_rules(slo, tile)
    return rules


def reachability_tile_rules(slo: MonitorSLO, tile: str) -> list[dict[str, Any]]:
    """Failed probes of every location within one tile, no quorum (none for one vantage, whose
    reachability is its availability). The exact increase of the error tile of one vantage, so a
    counter reset or a location appearing or leaving within a tile leaves the same probes out of it
    as out of the tile of all probes it is divided by; recorded beside the error tile under the
    quorum, at every evaluation (the operator's read takes one tile of each per step)."""
    if slo.vantages <= 1:
        return []
    failed = _sel(slo.namespace, slo.name, (names.LABEL_RESULT, names.RESULT_FAILURE))
    return [{"record": names.reachability_errors_increase_record(tile),
             "expr": promql.by_monitor(promql.tile_increase(failed, tile)), "labels": _labels(slo.namespace, slo.name)}]


def alert_rules(slo: MonitorSLO) -> list[dict[str, Any]]:
    """``RouteMonitorPartiallyUnreachable`` of a monitor of several vantages, with its own labels
    and annotations (none for one vantage)."""
    if slo.vantages <= 1:
        return []
    rule = partially_unreachable(slo.namespace, slo.name, slo.interval_ms, slo.quorum, slo.alerting.runbook_base)
    own = {k: alerts.literal(v) for k, v in slo.alerting.labels if k not in alerts.RESERVED_LABELS}
    rule["labels"] = {**own, **rule["labels"]}
    rule["annotations"] = {**rule["annotations"], **{k: alerts.literal(v) for k, v in slo.alerting.annotations}}
    return [rule]
