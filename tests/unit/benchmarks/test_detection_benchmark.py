"""The detection benchmark's own pieces (benchmarks/detection*.py): the math it compares against and
the reference rules it runs are what they claim to be.

Covers: the idealised burn-rate math for a hard outage at 99.9% over 30 days (the 1h/5m pair may
fire after 14.4 x 0.1% of an hour = 51.8 s; the page must stop once the 6h/30m pair's 30-minute
window has less than 6 x 0.1% of failures in it); a 0.5% steady error ratio never pages; the
reference operator's rule shape is valid for ``promtool check rules``.
"""

from __future__ import annotations

import subprocess
from decimal import Decimal
from pathlib import Path

import pytest

from benchmarks import detection_math as math
from benchmarks.detection import reference_rules

OBJ = Decimal("99.9")


@pytest.mark.parametrize(("severity", "failure_every", "outage_s", "expected"), [
    pytest.param("critical", 1, 600, 52, id="hard-outage-page-after-52s"),
    pytest.param("warning", 1, 600, 260, id="hard-outage-ticket-after-260s"),
    pytest.param("critical", 200, 86_400, None, id="half-percent-never-pages"),
])
def test_math_first_fire(severity: str, failure_every: int, outage_s: int, expected: int | None) -> None:
    assert math.first_fire(OBJ, severity, failure_every, outage_s) == expected


def test_math_page_reset_is_held_by_the_30m_window() -> None:
    assert 29 * 60 <= math.reset(OBJ, "critical", 1, 600) <= 30 * 60


@pytest.mark.prometheus
def test_reference_rules_pass_promtool(tmp_path: Path) -> None:
    path = tmp_path / "reference.yml"
    path.write_text(reference_rules(OBJ, 30))
    result = subprocess.run(["promtool", "check", "rules", str(path)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 rules found" in result.stdout
