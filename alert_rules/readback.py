"""PromQL that reads SLOs back out of Prometheus: the operator's ``status.slo`` and the report.

Every query covers *all* monitors at once (one query per recording rule, never one per
monitor); callers pick their monitors out of the result by the ``namespace``/``monitor`` labels.

Status (every few minutes, at "now"):

- availability over the SLO period: the generator records no period-long ratio (a 30d ratio
  recorded every 5 minutes would cost a rule per monitor for one reader), so it is summed here
  from the same 5-minute tiles the long-window alerts sum (``alert_rules.rules``):
  ``sum_over_time(tile[30d:5m])`` for failed probes and for all probes. The subquery steps are
  aligned to tile boundaries, so each tile counts once whatever the evaluation offset. Monitors
  with another period are left out by matching the recorded period, so one query per distinct
  period serves every monitor that has it;
- for monitors of several vantages, reachability over the SLO period (every probe of every
  location, no quorum) alike: their reachability tiles summed over the period, divided by the
  tiles of all probes recorded beside them (each aligned step takes one of each, whatever the
  offsets of the groups writing them), and only those, so a monitor whose tiles of all probes
  reach further back (rules from before the reachability tile, or a monitor that had one
  vantage) is not divided by probes whose failures were never summed;
- the 1h burn rate: the recorded 1h error ratio (the page's long window), divided by the
  budget by the caller; for monitors of several vantages, beside it the recorded 1h
  reachability ratio (all probes of every location, no quorum).

Report (once, for a past range ``[end - range, end]``, evaluated at ``end``): the raw counters'
last samples at the edges of each day of the range, their resets, and the raw samples of the
few series that reset or started within a day (``route_monitor.reports.exactcount``: exact counts,
never ``increase()``'s extrapolation; a day at a time, to stay under Prometheus' limit of samples
per query), for monitors of several vantages the tiles under the quorum summed over the range
and how many locations reported, the objective in force at the end of the range, and the burn alerts that fired
(``ALERTS``).
"""

from __future__ import annotations

from collections.abc import Mapping

from alert_rules import durations, names, promql
from alert_rules.tiles import DEFAULT_TILE_MS

TILE = durations.format_ms(DEFAULT_TILE_MS)
"""The operator generates only the default tile (``alert_rules.tiles``), so that is what it reads."""
BURN_WINDOW = "1h"
ALERT_NAMES = "RouteMonitor.+"


def _matchers(namespaces: tuple[str, ...]) -> str:
    """``{namespace=~"a|b"}`` (names are DNS labels: no regex metacharacters) or nothing."""
    if not namespaces:
        return ""
    return f"{{{names.LABEL_NAMESPACE}=~{promql.string_literal('|'.join(namespaces))}}}"


def period_tiles(record: str, period_seconds: int) -> str:
    """Sum of ``record``'s tiles over the last ``period_seconds``, for monitors with that period."""
    window = f"{period_seconds}s"
    period = f"{names.SLO_PERIOD_RECORD} == {period_seconds}"
    return f"{promql.tiles_sum(record, window, TILE)}\nand on ({promql.BY_MONITOR})\n{period}"


def failed_over_period(period_seconds: int) -> str:
    return period_tiles(names.errors_increase_record(TILE), period_seconds)


def probes_over_period(period_seconds: int) -> str:
    return period_tiles(names.probes_increase_record(TILE), period_seconds)


def reachability_over_period(period_seconds: int) -> str:
    """Monitors of several vantages with that period: the error ratio of all their probes over the
    period, from the tiles of every location's failures and the tiles of all probes beside them."""
    window, reach = f"{period_seconds}s", names.reachability_errors_increase_record(TILE)
    failed = promql.tiles_sum(reach, window, TILE)
    probes = promql.tiles_sum(f"({names.probes_increase_record(TILE)} and on ({promql.BY_MONITOR}) {reach})",
                              window, TILE)
    period = f"{names.SLO_PERIOD_RECORD} == {period_seconds}"
    return f"(\n{failed}\n/ on ({promql.BY_MONITOR})\n({probes} > 0)\n)\nand on ({promql.BY_MONITOR})\n{period}"


def error_ratio_1h() -> str:
    return names.error_ratio_record(BURN_WINDOW)


def reachability_ratio_1h() -> str:
    """Monitors of several vantages only (Contract 12): the 1h ratio of all probes of every location."""
    return names.reachability_record(BURN_WINDOW)


def probe_counters(range_seconds: int, namespaces: tuple[str, ...] = ()) -> str:
    """Every probe counter series' last sample within the range (all its labels kept)."""
    return f"last_over_time({names.PROBES_TOTAL}{_matchers(namespaces)}[{range_seconds}s])"


def probe_counter_resets(range_seconds: int, namespaces: tuple[str, ...] = ()) -> str:
    """How many times each probe counter series went down (a prober restart) within the range."""
    return f"resets({names.PROBES_TOTAL}{_matchers(namespaces)}[{range_seconds}s])"


def raw_probe_counter(labels: Mapping[str, str], range_seconds: int) -> str:
    """One probe counter series (all its labels) as raw samples over the range."""
    matchers = tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))
    return f"{promql.selector(names.PROBES_TOTAL, matchers)}[{range_seconds}s]"


def locations_in_range(range_seconds: int, namespaces: tuple[str, ...] = ()) -> str:
    """Each monitor of several vantages with the number of locations whose 1h ratio was recorded
    within the range (a one-vantage monitor has no per-location record)."""
    record = names.location_error_ratio_record(BURN_WINDOW)
    return f"count by ({promql.BY_MONITOR}) (last_over_time({record}{_matchers(namespaces)}[{range_seconds}s]))"


def quorum_tiles(record: str, range_seconds: int, namespaces: tuple[str, ...] = ()) -> str:
    """Monitors of several vantages: ``record``'s tiles (failed probes under the quorum, or all
    probes) summed over the range, tile-aligned: the steps after the range's start (a subquery's
    window includes its start in Prometheus 2), each tile covering the 5 minutes before its step."""
    tiles = promql.tiles_sum(f"{record}{_matchers(namespaces)}", f"{range_seconds - 1}s", TILE)
    return f"{tiles}\nand on ({promql.BY_MONITOR})\n{locations_in_range(range_seconds, namespaces)}"


def objectives(range_seconds: int, namespaces: tuple[str, ...] = ()) -> str:
    """Each monitor's objective (a ratio) as last recorded within the range: from its probers' series,
    or for a monitor never probed in the range from its own rules."""
    ms = _matchers(namespaces)
    return (f"last_over_time({names.SLO_OBJECTIVE_RECORD}{ms}[{range_seconds}s])\nor on ({promql.BY_MONITOR})\n"
            f"last_over_time({names.RULES_OBJECTIVE_RECORD}{ms}[{range_seconds}s])")


def alerts_fired(range_seconds: int, namespaces: tuple[str, ...] = ()) -> str:
    """One series per route-monitor alert (name, severity, windows) that was firing within the range."""
    inner = ",".join([f"alertname=~{promql.string_literal(ALERT_NAMES)}", 'alertstate="firing"',
                      *([f"{names.LABEL_NAMESPACE}=~{promql.string_literal('|'.join(namespaces))}"]
                        if namespaces else [])])
    by = ", ".join((*names.IDENTITY_LABELS, "alertname", names.LABEL_SEVERITY, names.LABEL_LONG, names.LABEL_SHORT))
    return f"max by ({by}) (max_over_time(ALERTS{{{inner}}}[{range_seconds}s]))"
