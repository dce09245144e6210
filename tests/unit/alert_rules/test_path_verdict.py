"""The path's threshold (``path:route_monitor_path_down_threshold:count``) that each monitor's fast
page compares its siblings' failing series with (``alert_rules.path_verdict``): ``failing >=
threshold`` holds exactly when at least K monitors fail and they are at least F of the path's
monitors, for every K, F and path size, including the shares whose product with the path size is
no exact float (0.1 x 30 is 3.0000000000000004).

The generated expression itself is evaluated (with Python's float division and ``floor``, as
Prometheus' float64 ones), not a copy of its arithmetic.
"""

from __future__ import annotations

import math
from decimal import Decimal

import pytest

from alert_rules import path_verdict

MONITORS = "m"


def threshold_of(min_monitors: int, min_ratio: Decimal, monitors: int) -> float:
    expr = path_verdict.threshold(MONITORS, min_monitors, min_ratio)
    value = eval(expr, {"__builtins__": {}}, {"clamp_min": max, "floor": math.floor, MONITORS: float(monitors)})
    return float(value)


@pytest.mark.parametrize("min_ratio", [Decimal(r) for r in ("0.5", "0.1", "0.33", "0.333", "0.7", "1", "0.01", "0.25")])
@pytest.mark.parametrize("min_monitors", [1, 3, 5])
def test_threshold_is_k_and_f_exactly(min_monitors: int, min_ratio: Decimal) -> None:
    for monitors in range(1, 301):
        threshold = threshold_of(min_monitors, min_ratio, monitors)
        for failing in range(monitors + 1):
            down = failing >= min_monitors and Decimal(failing) / monitors >= min_ratio
            assert (failing >= threshold) == down, (min_monitors, min_ratio, monitors, failing, threshold)


def test_the_defaults_read_simply() -> None:
    assert path_verdict.threshold(MONITORS, 3, Decimal("0.5")) == f"clamp_min(floor(({MONITORS} + 1) / 2), 3)"
    assert path_verdict.threshold(MONITORS, 3, Decimal("1")) == f"clamp_min({MONITORS}, 3)"
