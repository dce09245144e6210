"""Synthetic probe histories for ``promtool test rules``: what a prober would have exported.

A :class:`Timeline` is a list of probe outcomes, one per probe interval, plus the events a
real deployment has (prober restart: counters back to 0; move to another pod: a new
``instance`` whose series start at 0, the old ones marked stale; scrapes stopping). It renders
to promtool's ``input_series`` and can count bad probes in any window, which the fixtures use to
pick check times whose expected outcome is unambiguous.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Literal

from alert_rules import names, promql

Outcome = Literal["ok", "fail", "slow", "idle", "gone", "excluded"]
"""ok/fail/slow: one probe (slow = succeeded, slower than the latency threshold); idle: the
series are scraped but no probe happened; gone: nothing is scraped (series stale); excluded:
a probe whose result did not count (Contract 9: maintenance window, pause, warm-up), so only
``route_monitor_probes_excluded_total`` rises (its series appears at the first one)."""


@dataclass(frozen=True)
class Step:
    outcome: Outcome
    instance: str = "prober-0:8080"
    restart: bool = False
    """The prober restarted just before this step: its counters start again from 0."""


def steps(outcome: Outcome, count: int, instance: str = "prober-0:8080", restart: bool = False) -> list[Step]:
    return [Step(outcome, instance, restart and i == 0) for i in range(count)]


def compress(values: list[float | None]) -> str:
    """promtool's expanding notation: ``0+1x9 _x3 stale``; ``None`` is a missing sample."""
    out: list[str] = []
    i = 0
    while i < len(values):
        v = values[i]
        if v is not None and math.isnan(v):
            out.append("stale")
            i += 1
            continue
        if v is None:
            j = i
            while j < len(values) and values[j] is None:
                j += 1
            out.append(f"_x{j - i}" if j - i > 1 else "_")
            i = j
            continue
        j = i + 1
        nxt = values[j] if j < len(values) else None
        delta = nxt - v if nxt is not None and not math.isnan(nxt) else 0.0
        while j < len(values):
            cur, prev = values[j], values[j - 1]
            if cur is None or prev is None or math.isnan(cur) or cur - prev != delta:
                break
            j += 1
        start, d = promql.number(v), promql.number(delta)
        out.append(f"{start}+{d}x{j - i - 1}" if j - i > 1 else start)
        i = j
    return " ".join(out)


@dataclass(frozen=True)
class Timeline:
    namespace: str
    monitor: str
    steps: tuple[Step, ...]
    threshold_le: str | None = None
    """``le`` of the latency threshold bucket, when the monitor has a latency SLO."""
    initial_failures: int = 0
    """Failure counter of the first prober at the start (failures from long before the scenario)."""
    excluded_reason: str = names.EXCLUDED_MAINTENANCE
    params: tuple[tuple[str, float], ...] = ()
    """The monitor's objectives and interval as the engine exports them (``alert_rules.params``),
    beside its probe counters for as long as a prober exports those."""

    def _counters(self, instance: str) -> dict[str, list[float | None]]:
        keys = ("success", "failure", "count", "fast", "excluded")
        out: dict[str, list[float | None]] = {k: [] for k in keys}
        values = dict.fromkeys(keys, 0.0)
        seen = False
        for st in self.steps:
            if st.instance != instance or st.outcome == "gone":
                for k in keys:
                    out[k].append(None)
                continue
            if st.restart or not seen:
                values = dict.fromkeys(keys, 0.0)
                if not seen and instance == self.steps[0].instance:
                    values["failure"] = float(self.initial_failures)
                seen = True
            if st.outcome == "fail":
                values["failure"] += 1
            elif st.outcome in ("ok", "slow"):
                values["success"] += 1
                values["count"] += 1
                values["fast"] += st.outcome == "ok"
            values["excluded"] += st.outcome == "excluded"
            for k in keys:
                out[k].append(values[k])
        return out

    def input_series(self) -> list[dict[str, str]]:
        series = []
        for instance in sorted({s.instance for s in self.steps if s.outcome != "gone"}):
            c = self._counters(instance)
            ident = (("instance", instance), ("job", "route-monitor"),
                     (names.LABEL_NAMESPACE, self.namespace), (names.LABEL_MONITOR, self.monitor))
            rows: list[tuple[str, tuple[tuple[str, str], ...], list[float | None]]] = [
                (names.PROBES_TOTAL, ((names.LABEL_RESULT, names.RESULT_SUCCESS),), c["success"]),
                (names.PROBES_TOTAL, ((names.LABEL_RESULT, names.RESULT_FAILURE),), c["failure"])]
            first = next((i for i, v in enumerate(c["excluded"]) if v), None)  # created lazily, like /metrics
            if first is not None:
                lazy: list[float | None] = [None] * first
                rows.append((names.PROBES_EXCLUDED_TOTAL, ((names.LABEL_REASON, self.excluded_reason),),
                             lazy + c["excluded"][first:]))
            if self.threshold_le is not None:
                hist = names.PROBE_DURATION_SECONDS
                rows += [(f"{hist}_count", (), c["count"]),
                         (f"{hist}_bucket", (("le", self.threshold_le),), c["fast"]),
                         (f"{hist}_bucket", (("le", "+Inf"),), c["count"]),
                         (names.PROBES_FAST_TOTAL, (), c["fast"])]
            rows += [(name, (), [None if v is None else value for v in c["success"]]) for name, value in self.params]
            for metric, extra, values in rows:
                text = compress(_with_stale_markers(values))
                series.append({"series": promql.selector(metric, (*ident, *extra)), "values": text})
        return series

    @cached_property
    def _prefix(self) -> dict[str, list[int]]:
        sums = {"probes": [0], "availability": [0], "latency": [0]}
        for st in self.steps:
            probed = st.outcome in ("ok", "fail", "slow")
            sums["probes"].append(sums["probes"][-1] + probed)
            sums["availability"].append(sums["availability"][-1] + (st.outcome == "fail"))
            sums["latency"].append(sums["latency"][-1] + (st.outcome in ("fail", "slow")))
        return sums

    def bad(self, start: int, end: int, kind: str) -> tuple[int, int]:
        """(bad probes, probes) among steps ``start < i <= end``; latency counts slow as bad."""
        lo, hi = max(0, start + 1), max(0, min(end + 1, len(self.steps)))
        lo = min(lo, hi)
        p = self._prefix
        return p[kind][hi] - p[kind][lo], p["probes"][hi] - p["probes"][lo]


def _with_stale_markers(values: list[float | None]) -> list[float | None]:
    """Mark the end of a series (a pod gone) the way Prometheus does: a stale sample."""
    out: list[float | None] = list(values)
    for i in range(1, len(out)):
        if values[i] is None and values[i - 1] is not None:
            out[i] = float("nan")
    return out
