"""The two SLIs of a monitor (availability, latency) as one shape: the rest of the generator
asks an :class:`SLI` for PromQL and never switches on which one it is.

Both are ratios of bad probes to all probes, from Contract 3's counters:

- availability: bad = ``route_monitor_probes_total{result="failure"}``;
- latency: bad = failed, or successful but slower than the threshold. The duration histogram
  counts successful probes only; ``route_monitor_probes_fast_total`` counts the fast ones (its
  bucket at the threshold, under one name for every monitor, so these rules are shared), so
  slow ratio = 1 - fast / all probes.

Each SLI yields: its bad ratio over a window from the raw counters, the count of bad probes
within a window (the single-probe guard, see ``alert_rules.rules``), and the per-tile
increases from which long windows are summed.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from alert_rules import names, promql
from alert_rules.model import MonitorSLO

Kind = Literal["availability", "latency"]


@dataclass(frozen=True)
class SLI:
    kind: Kind
    namespace: str
    monitor: str
    objective: Decimal
    """Percent of probes that must be good."""
    threshold_ms: int = 0
    """Latency only: a successful probe slower than this is bad."""
    everyone: bool = False
    """Selectors match every monitor (the shared rules, ``alert_rules.shared``), not this one."""

    # --- what the SLI is called ---------------------------------------------------------
    @property
    def alert(self) -> str:
        return names.ALERT_ERROR_BUDGET_BURN if self.kind == "availability" else names.ALERT_LATENCY_BUDGET_BURN

    @property
    def budget(self) -> Decimal:
        """Allowed bad ratio, e.g. 0.001 for 99.9%."""
        return (Decimal(100) - self.objective) / Decimal(100)

    def ratio_record(self, window: str) -> str:
        return (names.error_ratio_record if self.kind == "availability" else names.slow_ratio_record)(window)

    def count_record(self, window: str) -> str:
        return (names.error_count_record if self.kind == "availability" else names.slow_count_record)(window)

    def good_or_bad_tile_record(self, tile: str) -> str:
        """Availability sums failed probes per tile; latency sums fast ones (bad = all - fast)."""
        return (names.errors_increase_record if self.kind == "availability" else names.fast_increase_record)(tile)

    # --- selectors ------------------------------------------------------------------------
    def _sel(self, metric: str, *extra: tuple[str, str]) -> str:
        if self.everyone:
            return promql.selector(metric, extra)
        return promql.selector(metric, promql.monitor_matchers(self.namespace, self.monitor, *extra))

    def record_sel(self, record: str) -> str:
        return self._sel(record)

    @property
    def all_probes(self) -> str:
        return self._sel(names.PROBES_TOTAL)

    @property
    def failed_probes(self) -> str:
        return self._sel(names.PROBES_TOTAL, (names.LABEL_RESULT, names.RESULT_FAILURE))

    @property
    def fast_probes(self) -> str:
        return self._sel(names.PROBES_FAST_TOTAL)

    @property
    def successful_probes(self) -> str:
        return self._sel(f"{names.PROBE_DURATION_SECONDS}_count")

    # --- PromQL ---------------------------------------------------------------------------
    def ratio_from_counters(self, window: str) -> str:
        total = promql.by_monitor(promql.rate(self.all_probes, window))
        if self.kind == "availability":
            return promql.ratio(promql.by_monitor(promql.rate(self.failed_probes, window)), total)
        return promql.one_minus_ratio(promql.by_monitor(promql.rate(self.fast_probes, window)), total)

    def bad_count_from_counters(self, window: str) -> str:
        """Bad probes counted within ``window`` (scrapes that saw them). Latency's reads the failed
        probes' count from availability's record of the same window, which its group records just
        before it (a group's rules run in order, each reading what the ones before wrote at that
        evaluation): the same count, not computed twice."""
        if self.kind == "availability":
            return promql.by_monitor(promql.counted_increases(self.failed_probes, window))
        failed = self.record_sel(names.error_count_record(window))
        # scrapes where a success was counted but no fast one: only-slow successes (never more)
        slow = promql.by_monitor(promql.counted_increases(self.successful_probes, window))
        fast = promql.by_monitor(promql.counted_increases(self.fast_probes, window))
        return f"{failed}\n+\n{slow}\n-\n{fast}"

    def tile_from_counters(self, tile: str) -> str:
        sel = self.failed_probes if self.kind == "availability" else self.fast_probes
        return promql.by_monitor(promql.tile_increase(sel, tile))

    def ratio_from_tiles(self, window: str, tile: str) -> str:
        part = promql.tiles_sum(self.record_sel(self.good_or_bad_tile_record(tile)), window, tile)
        total = promql.tiles_sum(self.record_sel(names.probes_increase_record(tile)), window, tile)
        if self.kind == "availability":
            return promql.ratio(part, total)
        return promql.one_minus_ratio(part, total)

    def count_from_tiles(self, window: str, tile: str) -> str:
        return promql.tiles_sum(self.record_sel(self.count_record(tile)), window, tile)


def slis(slo: MonitorSLO) -> tuple[SLI, ...]:
    """The monitor's SLIs: availability always, latency when a latency objective is set."""
    out = [SLI("availability", slo.namespace, slo.name, slo.objective.availability)]
    lat = slo.objective.latency
    if lat is not None:
        out.append(SLI("latency", slo.namespace, slo.name, lat.objective, lat.threshold_ms))
    return tuple(out)
