"""One incident per outage in time: the slow-burn page never opens a new incident for an outage
whose page has already resolved.

Both page tiers share an alert name, so Alertmanager groups them into one incident (one
PagerDuty dedup key) per monitor, but only while one of them fires. The 6h/30m page reads
windows summed from 5-minute tiles, evaluated every 5 minutes at the group's offset, so it
sees an outage up to two tiles late; the 1h/5m page resolves about 5 minutes after recovery.
A short outage then pages twice: the 1h/5m page opens and resolves an incident, and the
6h/30m page opens a new one 6 to 10 minutes after recovery, for an outage that is over (its
30m window holds it for half an hour).

So the slow page does not *start* while a page of the same alert name fired within the hold-off
(its short window plus one tile: how long the recovered outage stays in that window) and none
fires now. It still *keeps* an incident: a slow page already firing at its previous evaluation,
or one starting while the fast page fires, goes on (Alertmanager groups it with the fast page);
a new hard outage pages through the 1h/5m pair, which is never held off. The cost: a slow burn
that only crosses its threshold within the hold-off after a page resolved pages up to that
long later (35 minutes with 5-minute tiles).

The alerts' own ``ALERTS`` series (written by Prometheus for every firing alert, with a stale
marker when it resolves) carry that history; the expression reads them in the slow page's own
group, so nothing depends on another group's timing beyond the fast page's ``ALERTS``, written
every evaluation of the fast group.
"""

from __future__ import annotations

from alert_rules import durations, names, promql
from alert_rules.model import MonitorSLO
from alert_rules.sli import SLI
from alert_rules.windows import AlertWindow


def hold_off_ms(window: AlertWindow, tile_ms: int) -> int:
    """How long after a page was last firing the slow page may not start: its short window and a tile."""
    return window.short_ms + tile_ms


def _alerts(slo: MonitorSLO, sli: SLI, *extra: tuple[str, str]) -> str:
    matchers = (("alertname", sli.alert), ("alertstate", "firing"), *extra,
                *promql.monitor_matchers(slo.namespace, slo.name))
    return promql.selector("ALERTS", matchers)


def _windows(w: AlertWindow) -> tuple[tuple[str, str], ...]:
    return ((names.LABEL_LONG, w.long), (names.LABEL_SHORT, w.short))


def held_off(slo: MonitorSLO, sli: SLI, slow: AlertWindow, fast: tuple[AlertWindow, ...]) -> str:
    """When the slow page ``slow`` may not start: a page fired within the hold-off, no fast page
    fires now, and ``slow`` itself was not firing at its previous evaluation (within 1.5 tiles)."""
    recent = durations.format_ms(hold_off_ms(slow, slo.tile_ms))
    previous = durations.format_ms(slo.tile_ms * 3 // 2)
    paged = promql.max_over(_alerts(slo, sli, (names.LABEL_SEVERITY, names.SEVERITY_CRITICAL)), recent)
    open_now = [_alerts(slo, sli, *_windows(w)) for w in fast]
    open_now.append(promql.max_over(_alerts(slo, sli, *_windows(slow)), previous))
    return promql.unless(paged, promql.any_of(*open_now))
