"""Contract 11's failing records, read from the prober's verdict, once for every monitor.

The prober decides whether a monitor is failing from its own results and exports the verdict as
:data:`~alert_rules.names.PROBE_FAILING` (``alert_rules.failing``). Computing it here from the
probe counters cost a third of the shared rules' time (``benchmarks/RESULTS-rules-cost.md``:
increases over two windows, a count of counted increases, ratios and joins, for every monitor at
every evaluation) and needed one expression per failing window; reading the gauge costs one
aggregation, whatever the monitors' intervals.

A monitor probed from several locations (Contract 12) is failing while at least half of those
locations say so (the counters' version compared half of all locations' probes); a replica that
took the monitor over joins with its own series, like a location.

The per-path record (:data:`~alert_rules.names.FAILING_ON_PATH_RECORD`) is computed here for every
monitor, right after the failing records, from them.

Timing: every monitor's failing series is written at the same instant, by this group, from the
last scrape. A monitor's page reads them at most one evaluation late, which its settle
(``path_rules.settle_ms``) covers for its siblings' (``alert_rules.path_verdict``).
"""

from __future__ import annotations

from typing import Any

from alert_rules import failing, names, path_verdict, promql


def _share(condition: str) -> str:
    """The monitors for which at least half of their series (locations) meet ``condition`` (a ``bool`` comparison)."""
    ratio = promql.number(failing.RATIO)
    return f"group by ({promql.BY_MONITOR}) (\navg by ({promql.BY_MONITOR}) (\n{condition}\n) >= {ratio}\n)"


def failing_rules() -> list[dict[str, Any]]:
    """The failing records (any failure, then DNS errors), then every monitor's per-path failing record."""
    gauge = names.PROBE_FAILING
    every_monitor = path_verdict.failing_on_paths(f"{names.MONITOR_PATH_INFO}{{}}", f"{names.FAILING_RECORD}{{}}")
    return [{"record": names.FAILING_RECORD, "expr": _share(f"{gauge} >= bool {failing.FAILING}")},
            {"record": names.FAILING_RECORD, "expr": _share(f"{gauge} == bool {failing.FAILING_BY_DNS}"),
             "labels": {names.LABEL_REASON: names.REASON_DNS_ERROR}},
            {"record": names.FAILING_ON_PATH_RECORD, "expr": every_monitor}]
