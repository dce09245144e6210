"""Stage 3: one monitor's SLO -> Prometheus rule groups (plain data, deterministic order).

What does not depend on a monitor's thresholds (its error ratios, tiles, window sums and the
guards' counts) is recorded once for every monitor by the shared groups
(:mod:`alert_rules.shared`), under the same record names; a monitor's own groups hold what does:

``route-monitor/<namespace>/<name>`` (the global evaluation interval, e.g. 30s)
    What must be fresh at every evaluation and depends on the monitor: the 1h/5m pages (what
    pages on a hard outage, within about a minute of the budget math allowing it), for a monitor of several vantages
    its ratios and error tiles under the quorum with the marker that keeps the shared groups off
    them, and
    ``RouteMonitorPartiallyUnreachable`` (``alert_rules.quorum``). Every rule here is evaluated
    every 30 seconds for every monitor: what does not need that cadence lives in the next group.

``route-monitor/<namespace>/<name>/long-windows`` (``interval: 5m``, the tile)
    The alerts on windows summed from tiles (6h/30m page, tickets), reading the shared
    records through ``last_over_time`` over two tiles (another group's 5-minute record may be one
    interval old when read), ``RouteMonitorCertificateExpiry``, ``RouteMonitorProbesAbsent`` (the
    5m ratio is 0/0 or gone, or no probe series at all, for 5m: a warning, 10 to 15 minutes after
    the last probe, that need not cost an evaluation every 30 seconds), ``RouteMonitorRulesIncomplete``
    (the shared groups are missing: ``for: 10m``), and the marker that the monitor's rules are
    loaded (what ``RouteMonitorProbesAbsent`` expects probes for). Its objective and period
    are not rules: the engine exports them beside its probes
    (``alert_rules.params``) and the shared group records them for every monitor. A test or demo
    stack may shorten the tile (``alert_rules.tiles``: ``30s`` records and sums 30-second tiles every 30
    seconds, with the same windows and thresholds); record names carry the tile.

``route-monitor/<namespace>/<name>/period`` (``interval: 1h``, twelve tiles)
    The availability over the whole SLO period and the error budget left, for dashboards
    (the shared hourly tiles summed over the monitor's period: see ``_period_group``), for a
    monitor whose period is not one the shared groups compute (a week, two or four weeks, 30 days:
    ``alert_rules.shared_period``).

Correctness across prober restarts and moves: every expression aggregates
``sum by (namespace, monitor)``, so ``instance``/``pod`` labels never split an SLO; ``rate``
and ``increase`` handle counter resets; a prober that moves to another pod yields a new series
that starts at 0 (Contract 3 creates both result series at 0), which adds its own increases and
nothing else; when probes stop, ratios become 0/0 (NaN, never above a threshold, so no burn
alert) and ``RouteMonitorProbesAbsent`` takes over.

The single-probe guard: a burn alert fires only if, besides both error ratios exceeding
``factor x budget``, at least two bad probes were seen within the long window. Without it one
failure pages whenever ``1 / probes-per-long-window`` exceeds the threshold: 99.99% at 30s
(one failure in an hour is 0.83%, threshold 0.144%), 99.9% at 1m, or any objective right after
a prober restart when the window holds few probes. The count is ``changes() - resets()`` of the
raw counters: an integer of scrapes that saw the counter rise, never extrapolated (``increase``
can turn one failure on a fresh series into 2.1). Requiring the second failure within the
*long* window, not the short one, keeps steady slow burns alerting: 2% failures at 30s is one
failure every 25 minutes, two or three per hour, and the 1h/5m pair pages on the one that
lands in its 5m window. ``findings`` reports where the guard makes an alert less sensitive
than the budget math.
"""

from __future__ import annotations

from typing import Any

from alert_rules import (
    alerts,
    durations,
    holdoff,
    names,
    path_rules,
    promql,
    quorum,
    shared,
    shared_period,
    tiles,
)
from alert_rules.model import MonitorSLO
from alert_rules.sli import SLI, slis
from alert_rules.windows import AlertWindow, alert_windows

TILES_PER_HOUR_TILE = shared.TILES_PER_HOUR_TILE
"""The period group records one *hourly tile* of 12 tiles per evaluation, its ``interval``: an hour
at the default 5-minute tile; a shortened tile (``--tile``) shortens it alike (2 minutes for 10s
tiles), so a test or demo stack sees its period records within minutes, not an hour."""
FAST_MAX_MS = 3_600_000
"""Window pairs whose long window is at most 1h (the 1h/5m page) are evaluated in the fast
group, their windows computed from the raw counters; every other window is summed from tiles."""


def enabled_windows(slo: MonitorSLO) -> tuple[AlertWindow, ...]:
    wanted = {"page": slo.alerting.page, "ticket": slo.alerting.ticket}
    return tuple(w for w in alert_windows(slo.objective.period_ms) if wanted[w.severity])


def is_fast(window: AlertWindow) -> bool:
    return window.long_ms <= FAST_MAX_MS


def tile_of(slo: MonitorSLO) -> str:
    """The monitor's tile as a duration (``5m``): also the long-window group's interval."""
    tiles.check(slo.tile_ms)
    return durations.format_ms(slo.tile_ms)


def hour_tile_of(slo: MonitorSLO) -> str:
    """The period group's interval and the length of its hourly tiles (``1h`` by default)."""
    tiles.check(slo.tile_ms)
    return durations.format_ms(TILES_PER_HOUR_TILE * slo.tile_ms)


def group_names(slo: MonitorSLO) -> tuple[str, ...]:
    """The monitor's groups, in order: fast, long windows, and its period group unless its period
    is one the shared groups sum (``alert_rules.shared_period``)."""
    base = f"route-monitor/{slo.namespace}/{slo.name}"
    own_period = () if shared_period.shares_period(slo) else (f"{base}/period",)
    return base, f"{base}/long-windows", *own_period


def _record(slo: MonitorSLO, record: str, expr: str) -> dict[str, Any]:
    """A recording rule; its static ``namespace``/``monitor`` labels repeat what the expression
    yields, and make every monitor's rules distinct (``promtool check rules`` lints rules with
    the same name and labels as duplicates when many monitors share one file)."""
    return {"record": record, "expr": expr, "labels": alerts.identity(slo)}


def _burn_expr(slo: MonitorSLO, sli: SLI, w: AlertWindow, tile: str) -> str:
    """The shared burning record of the pair (:func:`alert_rules.shared.burning`: both ratios above
    the threshold, the guard met, not while a shared path of the monitor is down), read from another
    group: the last sample within two tiles for a tiled pair. The 1h/5m pages' records are written
    beside every monitor's failing series and already leave out a monitor whose path is seen down
    (``alert_rules.path_verdict``), so a page reads its record alone."""
    record = sli.record_sel(names.burning_record(sli.kind, w.long))
    if is_fast(w):
        return f"{record} == 1"
    return f"{shared.recent(record, slo.tile_ms)} == 1"


def _burn(slo: MonitorSLO, sli: SLI, w: AlertWindow, tile: str, windows: tuple[AlertWindow, ...]) -> dict[str, Any]:
    """A burn alert that waits until a shared outage would have been seen (``for:``): the fast
    pairs :func:`path_rules.settle_ms`, the tiled ones one tile (their group's interval)."""
    wait = durations.format_ms(path_rules.settle_ms(slo.interval_ms, slo.evaluation_ms)) if is_fast(w) else tile
    return {**alerts.burn_alert(slo, sli, w, _alert_expr(slo, sli, w, tile, windows)), "for": wait}


def _alert_expr(slo: MonitorSLO, sli: SLI, w: AlertWindow, tile: str, windows: tuple[AlertWindow, ...]) -> str:
    """The pair's expression; a slow page (summed from tiles) is held off after a page resolved
    (``holdoff``)."""
    expr = _burn_expr(slo, sli, w, tile)
    if is_fast(w) or w.severity != "page":
        return expr
    fast = tuple(f for f in windows if is_fast(f) and f.severity == "page")
    return promql.unless(expr, holdoff.held_off(slo, sli, w, fast))


def _fast_group(slo: MonitorSLO, windows: tuple[AlertWindow, ...]) -> dict[str, Any]:
    rules = quorum.ratio_rules(slo, shared.FAST_WINDOWS, tile_of(slo))
    rules += quorum.alert_rules(slo)
    for sli in slis(slo):
        rules += [_burn(slo, sli, w, tile_of(slo), windows) for w in windows if is_fast(w)]
    return {"name": group_names(slo)[0], "rules": rules}


def _probes_absent(slo: MonitorSLO) -> str:
    """The shared record (probe series whose 5m ratio is 0/0 or gone, for a monitor whose rules are
    loaded), or no probe series of the monitor at all within 5 minutes: a monitor never scraped
    (the shared record waits for the rules' marker, recorded every tile) or whose prober is gone."""
    matchers = promql.monitor_matchers(slo.namespace, slo.name)
    shared_sel = promql.selector(names.PROBES_ABSENT_RECORD, matchers)
    never = f"absent_over_time({promql.selector(names.PROBES_TOTAL, matchers)}[{alerts.ABSENT_FOR}])"
    return f"{shared_sel}\nor\n{never}"


def _rules_incomplete(slo: MonitorSLO) -> dict[str, Any]:
    """The check that the shared groups run for this monitor: their 1h bad-probe count is written
    for every monitor with a probe counter (of one vantage or several), and by them alone."""
    matchers = promql.monitor_matchers(slo.namespace, slo.name)
    shared_sel = promql.selector(names.error_count_record(shared.FAST_COUNT_WINDOW), matchers)
    return alerts.rules_incomplete_alert(slo, promql.selector(names.PROBES_TOTAL, matchers), shared_sel)


def _rules_objective(slo: MonitorSLO) -> dict[str, Any]:
    """The marker that this Prometheus evaluates the monitor's rules, valued its objective: what
    ``RouteMonitorProbesAbsent`` expects probes for and what a report shows for a monitor without
    probes (its thresholds come from the engine's series, ``alert_rules.params``, which vanish with
    the probes). Every tile is often enough: the marker is read over two tiles, and a new monitor
    has no probes to miss for the first ten minutes anyway."""
    return _record(slo, names.RULES_OBJECTIVE_RECORD, promql.constant(slo.objective.availability / 100))


def _long_group(slo: MonitorSLO, windows: tuple[AlertWindow, ...]) -> dict[str, Any]:
    tile = tile_of(slo)
    rules = []
    for sli in slis(slo):
        rules += [_burn(slo, sli, w, tile, windows) for w in windows if not is_fast(w)]
    gauge = promql.selector(names.TLS_CERT_EXPIRY, promql.monitor_matchers(slo.namespace, slo.name))
    rules.append(alerts.certificate_expiry_alert(slo, gauge))
    rules.append(alerts.probes_absent_alert(slo, _probes_absent(slo)))
    rules.append(_rules_incomplete(slo))
    return {"name": group_names(slo)[1], "interval": tile, "rules": [_rules_objective(slo), *rules]}


def _period_group(slo: MonitorSLO) -> dict[str, Any]:
    """The availability SLI over the whole SLO period, for dashboards and readers of the budget:
    the shared hourly tiles (:mod:`alert_rules.shared`, summed from the 5-minute or shortened
    ones) summed over the monitor's period (720 samples for 30 days, once an hour, instead of
    8,640 five-minute tiles or a 30-day ``increase()`` over raw samples at every dashboard
    refresh). Up to two hours behind (the period sum reads the hourly tiles of earlier
    evaluations); no alert reads it. Until the hourly tiles' second evaluation (up to two hours
    after the rules load) the series is absent.

    The hourly tiles are recorded once an hour at their group's own offset within the hour
    (Prometheus spreads groups by a hash of their name and file), which a subquery's whole-hour
    steps cannot see with the 5-minute lookback: each step takes the last hourly tile within
    the hour before it (``promql.sparse_tiles_sum``), whatever the offset, lookback or cadence."""
    sli, hour = slis(slo)[0], hour_tile_of(slo)
    period = durations.format_ms(slo.objective.period_ms)
    probes, errors = names.probes_increase_record, names.errors_increase_record
    over_period = [promql.sparse_tiles_sum(sli.record_sel(record(hour)), period, hour)
                   for record in (errors, probes)]
    rules = [_record(slo, names.PERIOD_ERROR_RATIO_RECORD, promql.ratio(*over_period))]
    remaining = f"1 - {sli.record_sel(names.PERIOD_ERROR_RATIO_RECORD)} / {promql.number(sli.budget)}"
    rules.append(_record(slo, names.BUDGET_REMAINING_RECORD, remaining))
    return {"name": group_names(slo)[2], "interval": hour, "rules": rules}


def rule_groups(slo: MonitorSLO) -> list[dict[str, Any]]:
    """Prometheus rule groups for one monitor: recording rules and Contract 4's alerts (no period
    group for a usual period: the shared groups record its period ratio, ``alert_rules.shared_period``)."""
    windows = enabled_windows(slo)
    own_period = [_period_group(slo)] if len(group_names(slo)) > 2 else []
    return [_fast_group(slo, windows), _long_group(slo, windows), *own_period]
