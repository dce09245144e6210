"""Contract 9 in the RouteMonitor status (pure): ``Probing`` reasons and ``nextMaintenance``.

Covers: while results are excluded, ``Probing`` stays True (probes go on) with reason
``InMaintenance``, ``Paused`` or ``WarmingUp`` and Ready stays True; ``lastProbe.excluded``
says the last result did not count, and a change of it is significant (written); the next
window start is ``status.nextMaintenance`` (RFC 3339, UTC) and its change is written too; the
per-probe outcome the supervisor compares includes the exclusion.
"""

from __future__ import annotations

import pytest

from route_monitor.operator import status
from route_monitor.probe.result import Exclusion, FailureReason, ProbeResult
from route_monitor.targets.resolve import ResolvedTarget

RESOLVED = ResolvedTarget(url="http://web/", kind="route", name="web")


def result(success: bool, excluded: Exclusion | None = None) -> ProbeResult:
    return ProbeResult(("ns", "web"), "http://web/", 100.0, success, None if success else FailureReason.HTTP_STATUS,
                       0.01, 200 if success else 503, "", excluded=excluded)


def conds(obs: status.Observed) -> dict[str, dict]:
    return {c["type"]: c for c in status.conditions(obs)}


@pytest.mark.parametrize(("excluded", "reason"), [
    pytest.param(Exclusion.MAINTENANCE, "InMaintenance", id="maintenance"),
    pytest.param(Exclusion.PAUSED, "Paused", id="paused"),
    pytest.param(Exclusion.WARMUP, "WarmingUp", id="warmup"),
    pytest.param(None, "Probing", id="counted"),
])
def test_probing_reason_says_why_results_do_not_count(excluded: Exclusion | None, reason: str) -> None:
    c = conds(status.Observed(1, target=RESOLVED, interval_ms=30_000, last_result=result(False, excluded)))
    assert c["Probing"]["status"] == "True" and c["Probing"]["reason"] == reason
    assert c["Probing"]["message"].startswith("probing http://web/ every 30s")
    if excluded is not None:
        assert "do not count" in c["Probing"]["message"]
    assert c["Ready"]["status"] == "True"


def test_last_probe_says_it_was_excluded_and_a_change_is_written() -> None:
    obs = status.Observed(1, target=RESOLVED, interval_ms=30_000)
    warming = status.build(obs, None, 0, status.last_probe(result(False, Exclusion.WARMUP)))
    counted = status.build(obs, warming, 0, status.last_probe(result(False)))
    assert warming["lastProbe"]["excluded"] == "warmup" and "excluded" not in counted["lastProbe"]
    assert status.significant(warming) != status.significant(counted)
    assert status.result_outcome(result(False, Exclusion.WARMUP)) != status.result_outcome(result(False))


def test_next_maintenance_is_written_in_utc_and_its_change_is_significant() -> None:
    base = status.Observed(1, target=RESOLVED, interval_ms=30_000)
    none = status.build(base, None, 0, None)
    soon = status.build(status.Observed(1, target=RESOLVED, interval_ms=30_000, next_maintenance=1_796_090_400),
                        none, 0, None)
    assert "nextMaintenance" not in none
    assert soon["nextMaintenance"] == "2026-12-01T02:00:00Z"
    assert status.significant(none) != status.significant(soon)
