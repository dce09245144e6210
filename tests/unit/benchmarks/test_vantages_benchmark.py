"""``benchmarks/vantages_cost.py`` measures what it says: a tiny real run at k = 1 and 2 locations
(5 monitors probed every second by real ``standalone`` processes, one real Prometheus), where each
location adds the same probe series per monitor and rules are loaded and evaluated. No timing
assertions: the numbers are the benchmark's (``benchmarks/RESULTS-vantages.md``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.vantages_cost import run_one

pytestmark = pytest.mark.prometheus


def test_each_location_adds_the_same_series_and_the_rules_are_evaluated(tmp_path: Path) -> None:
    one, two = (run_one(5, k, interval_s=1, warmup=6, measure_s=3, workdir=tmp_path) for k in (1, 2))
    assert one["series_per_monitor"] > 0
    assert two["series_per_monitor"] == 2 * one["series_per_monitor"], (one, two)
    for row in (one, two):
        assert row["rules_per_monitor"] > 0 and row["rule_eval_ms_per_monitor"] > 0, row
        assert row["probe_cores"] > 0 and row["prometheus_cores"] > 0, row
