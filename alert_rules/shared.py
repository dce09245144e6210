"""The SLI records of every monitor at once: rules whose cost does not grow with the monitor count.

A recording rule costs Prometheus an evaluation, an index lookup per selector and a stored
series, whatever it selects: one rule per monitor per window (what each monitor's groups used to
hold) made the rules cost 4-7x the probing at thousands of monitors. Nothing in the error ratios,
the tiles, the window sums or the bad-probe counts depends on a monitor's thresholds, so they are
computed here once for every monitor (``sum by (namespace, monitor)``), under the same record
names, and each monitor's own groups (``alert_rules.rules``) keep only what does depend on it:
its alerts (thresholds, labels, annotations), its failing record if it is probed less often than
once a minute (its probe interval: ``alert_rules.shared_failing``), the objectives as series
and its period ratio (its period). The latency SLI is shared too: its fast probes are counted
under one name for every monitor (``route_monitor_probes_fast_total``), whatever the threshold.

Three groups, once per Prometheus (the PrometheusRule the operator keeps,
``route_monitor.operator.outputs.sharedrule``; ``route-monitor rules --operator``; the plain rule
file ``route-monitor rules`` prints; ``route-monitor standalone``'s rule folder). Each monitor's
``RouteMonitorRulesIncomplete`` says when they are missing.

A monitor of several vantages (Contract 12) records its availability ratios over 5m and 1h and
its error tiles under its quorum in its own fast group (``alert_rules.quorum``), with a marker
series these groups skip (``unless on (namespace, monitor)``); every record downstream of them
(window sums, guards, burning records) is computed here for it as for any other monitor.

``route-monitor-slis`` (the global evaluation interval)
    The failing records of shared-path detection for every monitor probed at least once a minute
    and every monitor's per-path failing record (``alert_rules.shared_failing``), then the 5m and 1h
    error ratios from the raw counters and the failed probes counted within 1h
    (the 1h/5m page's guard), for availability and every monitor with a latency SLI, and the
    1h/5m pairs' burning records: the fast pages' inputs, read by each monitor's fast group one
    evaluation later at most.
``route-monitor-slis/long-windows`` (``interval``: the tile)
    The tiles (all probes, failed probes, failed probes counted, fast probes, slow probes counted)
    and the window sums over them (30m to 3d), ratios and guard counts, for availability and for
    every monitor with a latency SLI. The tile sums are
    subqueries stepped on tile boundaries (``promql.tiles_sum``): one tile per step whatever
    the evaluation cadence, which a range over the recorded tiles cannot promise (``promtool
    test rules`` evaluates every group at every step: a range would sum overlapping tiles).
``route-monitor-slis/period`` (``interval``: twelve tiles, an hour by default)
    The hourly tiles, and the period ratio and budget left of every monitor of a usual period
    (``alert_rules.shared_period``; a monitor of another period sums the tiles in its own group).

Each monitor's alerts read these records with ``last_over_time`` over two tiles
(:func:`recent`): a group reading another group's record may run just before that group writes
its sample, which then is one interval old, and at a 5-minute interval past the default
lookback; the alerts would then see nothing for a whole evaluation.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from alert_rules import durations, names, params, path_verdict, promql, shared_failing, shared_period, tiles
from alert_rules.alerts import ABSENT_AFTER, GUARD_MIN_BAD_PROBES
from alert_rules.sli import SLI
from alert_rules.windows import WORKBOOK_WINDOWS, WindowRow, alert_windows, windows_of

GROUP = "route-monitor-slis"
LONG_GROUP = f"{GROUP}/long-windows"
PERIOD_GROUP = f"{GROUP}/period"
GROUPS = (GROUP, LONG_GROUP, PERIOD_GROUP)
FAST_WINDOWS = ("5m", "1h")
"""The 1h/5m page's windows: from the raw counters, every evaluation."""
FAST_COUNT_WINDOW = "1h"
TILED_COUNT_WINDOWS_MS = tuple(sorted({w.long_ms for w in alert_windows(30 * 86_400_000)} - {3_600_000}))
"""The long windows of the tiled pairs (6h, 1d, 3d): their guards' counts, summed from tiles."""
TILES_PER_HOUR_TILE = 12
FAST_MAX_MS = 3_600_000
"""Pairs whose long window is at most 1h (the 1h/5m page) read the raw counters' ratios."""

_AVAILABILITY = SLI("availability", "", "", Decimal(0), everyone=True)
_LATENCY = SLI("latency", "", "", Decimal(0), everyone=True)


def tiled_windows_ms() -> tuple[int, ...]:
    """Every window summed from tiles: all of the workbook's windows but the 1h/5m page's."""
    fast = {durations.parse_ms(w) for w in FAST_WINDOWS}
    return tuple(ms for ms in windows_of(alert_windows(30 * 86_400_000)) if ms not in fast)


recent = tiles.recent
"""A shared record as another group reads it: its last sample within two tiles."""


def _record(record: str, expr: str) -> dict[str, Any]:
    return {"record": record, "expr": expr}


def _one_vantage(expr: str) -> str:
    """``expr`` without the monitors of several vantages (those carrying the quorum marker), whose
    own rules record it under the quorum (``alert_rules.quorum``): one rule per series. Groups run at
    their own offsets, so when a monitor gains or loses vantages one evaluation of this group may
    still read the marker's previous state: the series may then hold one sample of this rule (every
    location's ratio) among the quorum rule's, and from the next evaluation on one rule's alone."""
    return promql.unless(expr, names.QUORUM_RECORD)


def threshold(sli: SLI, row: WindowRow, tile_ms: int) -> str:
    """Each monitor's burn threshold for ``row`` from its recorded objective and period:
    ``budget share x period / long window x (1 - objective)``, as ``AlertWindow.threshold``."""
    objective = names.SLO_OBJECTIVE_RECORD if sli.kind == "availability" else names.LATENCY_OBJECTIVE_RECORD
    share = promql.number(row.budget_share)
    period = f"{recent(names.SLO_PERIOD_RECORD, tile_ms)} / {row.long_ms // 1000} * {share}"
    return f"(1 - {recent(objective, tile_ms)}) * {period}"


def _held_back(expr: str, short: str) -> str:
    """``expr`` without the monitors behind a shared path that is down (``alert_rules.path_rules``)."""
    failing = promql.selector(names.FAILING_RECORD, ((names.LABEL_REASON, ""),))
    return promql.unless_path_down(expr, names.MONITOR_PATH_INFO, names.PATH_DOWN_RECORD, failing, short)


def burning(sli: SLI, row: WindowRow, tile_ms: int) -> str:
    """1 where both ratios are above the monitor's threshold and the guard is met (at least two bad
    probes counted within the long window), 0 elsewhere (and behind a shared path that is down):
    always a sample, so that a reader in another group can take the last one (:func:`recent`).

    The 1h/5m pair, in the group that records every monitor's failing series just before, is also
    0 behind a path this evaluation sees down (``alert_rules.path_verdict``: enough siblings failing
    on it), before the path group says so: the page reads one consistent verdict, one evaluation
    late at most, as it read its siblings' failing series before they were shared."""
    long, short = durations.format_ms(row.long_ms), durations.format_ms(row.short_ms)
    thr = threshold(sli, row, tile_ms)
    on = f"on ({promql.BY_MONITOR})"
    ratio_long = sli.record_sel(sli.ratio_record(long))
    both = (f"(\n{ratio_long} > bool {on} ({thr})\n)\n* {on}\n"
            f"(\n{sli.record_sel(sli.ratio_record(short))} > bool {on} ({thr})\n)\n* {on}\n"
            f"({sli.record_sel(sli.count_record(long))} >= bool {GUARD_MIN_BAD_PROBES})")
    held = _held_back(both, short)
    if row.long_ms <= FAST_MAX_MS:  # and as soon as enough siblings fail, in this very evaluation
        held = promql.unless_seen_down(held, names.MONITOR_PATH_INFO, path_verdict.down_now())
    return f"(\n{held}\n)\nor {on}\n0 * {ratio_long}"


def probes_absent(tile_ms: int) -> str:
    """1 for every monitor with rules (its :data:`~alert_rules.names.RULES_OBJECTIVE_RECORD`) whose 5m
    error ratio is 0/0 or gone,
    unless excluded probes (a maintenance window, a pause, warm-up) were recorded within 5m, and
    not behind a shared path that is down (``alert_rules.alerts.probes_absent_alert``)."""
    a = _AVAILABILITY
    ratio = a.record_sel(a.ratio_record("5m"))
    excluded = f"{promql.by_monitor(promql.rate(names.PROBES_EXCLUDED_TOTAL, '5m'))} > 0"
    on = f"on ({promql.BY_MONITOR})"
    silent = (f"group by ({promql.BY_MONITOR}) (\n{recent(names.RULES_OBJECTIVE_RECORD, tile_ms)}\n)\n"
              f"unless {on}\n({ratio} == {ratio})\nunless {on}\n{excluded}")
    return _held_back(silent, ABSENT_AFTER)


def _fast_group(tile_ms: int) -> dict[str, Any]:
    a, lat = _AVAILABILITY, _LATENCY
    rules = params.copy_rules()  # first: every rule below reads the thresholds
    rules += shared_failing.failing_rules()  # then: the burning records below read them
    rules += [_record(a.ratio_record(w), _one_vantage(a.ratio_from_counters(w))) for w in FAST_WINDOWS]
    rules += [_record(lat.ratio_record(w), lat.ratio_from_counters(w)) for w in FAST_WINDOWS]
    for sli in (a, lat):
        rules.append(_record(sli.count_record(FAST_COUNT_WINDOW), sli.bad_count_from_counters(FAST_COUNT_WINDOW)))
    for sli in (a, lat):
        rules += [_record(names.burning_record(sli.kind, durations.format_ms(row.long_ms)), burning(sli, row, tile_ms))
                  for row in WORKBOOK_WINDOWS if row.long_ms <= FAST_MAX_MS]
    rules.append(_record(names.PROBES_ABSENT_RECORD, probes_absent(tile_ms)))
    return {"name": GROUP, "rules": rules}


def _long_group(tile: str) -> dict[str, Any]:
    a, lat = _AVAILABILITY, _LATENCY
    all_tile = promql.by_monitor(promql.tile_increase(a.all_probes, tile))
    rules = [_record(names.probes_increase_record(tile), all_tile),
             _record(a.good_or_bad_tile_record(tile), _one_vantage(a.tile_from_counters(tile))),
             _record(a.count_record(tile), a.bad_count_from_counters(tile)),
             _record(lat.good_or_bad_tile_record(tile), lat.tile_from_counters(tile)),
             _record(lat.count_record(tile), lat.bad_count_from_counters(tile))]
    for sli in (a, lat):
        for ms in tiled_windows_ms():
            w = durations.format_ms(ms)
            rules.append(_record(sli.ratio_record(w), sli.ratio_from_tiles(w, tile)))
        for ms in TILED_COUNT_WINDOWS_MS:
            w = durations.format_ms(ms)
            rules.append(_record(sli.count_record(w), sli.count_from_tiles(w, tile)))
    for sli in (a, lat):
        rules += [_record(names.burning_record(sli.kind, durations.format_ms(row.long_ms)),
                          burning(sli, row, durations.parse_ms(tile))) for row in WORKBOOK_WINDOWS
                  if row.long_ms > FAST_MAX_MS]
    return {"name": LONG_GROUP, "interval": tile, "rules": rules}


def _period_group(tile: str, hour: str) -> dict[str, Any]:
    """Hourly tiles summed from the tiles (see ``alert_rules.rules._period_group``)."""
    a = _AVAILABILITY
    rules = [_record(record(hour), promql.tiles_sum(a.record_sel(record(tile)), hour, tile))
             for record in (names.probes_increase_record, names.errors_increase_record)]
    rules += shared_period.period_rules(hour, durations.parse_ms(tile))
    return {"name": PERIOD_GROUP, "interval": hour, "rules": rules}


def shared_rule_groups(tile_ms: int = tiles.DEFAULT_TILE_MS) -> list[dict[str, Any]]:
    """The three shared groups for an installation whose tile is ``tile_ms``."""
    tiles.check(tile_ms)
    tile = durations.format_ms(tile_ms)
    hour = durations.format_ms(TILES_PER_HOUR_TILE * tile_ms)
    return [_fast_group(tile_ms), _long_group(tile), _period_group(tile, hour)]
