"""The status before any probe result (a restart, a takeover), and the patch that writes it (pure).

Covers: without a last result, ``Probing``'s reason is what the spec and the clock say (paused,
inside a window, past warm-up: results count); within warm-up of the creation it is the reason
already written when that one says a success ended warm-up, else ``WarmingUp``; a status built
that way from a right status is not significant to write. The merge patch sends null for every
field the new status no longer has (else the API server keeps it), and nothing else.
The same on real operator processes: ``tests/cluster/test_operator_restart_replicas.py``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from route_monitor.operator import exclusion, status
from route_monitor.probe.result import Exclusion
from route_monitor.spec.monitor import MonitorSpec, parse_routemonitor
from route_monitor.targets.resolve import ResolvedTarget

RESOLVED = ResolvedTarget(url="http://web/", kind="url", name="http://web/")
CREATED = 1_800_000_000.0


def spec(**fields: Any) -> MonitorSpec:
    created = dt.datetime.fromtimestamp(CREATED, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return parse_routemonitor({"metadata": {"name": "web", "namespace": "ns", "creationTimestamp": created},
                               "spec": {"target": {"url": "http://web/"}, "slo": {"availability": "99"}, **fields}})


def written(reason: str | None) -> dict[str, Any] | None:
    if reason is None:
        return None
    return {"conditions": [{"type": "Probing", "status": "True", "reason": reason, "message": "probing"}]}


WINDOW = [{"start": "2027-01-15T08:00:00Z", "end": "2027-01-15T09:00:00Z"}]
IN_WINDOW = dt.datetime(2027, 1, 15, 8, 30, tzinfo=dt.UTC).timestamp()


@pytest.mark.parametrize(("fields", "now", "before", "expected"), [
    pytest.param({"paused": True}, CREATED + 5, "Probing", Exclusion.PAUSED, id="paused-over-everything"),
    pytest.param({"maintenance": WINDOW}, IN_WINDOW, "Probing", Exclusion.MAINTENANCE, id="inside-a-window"),
    pytest.param({"maintenance": WINDOW}, IN_WINDOW + 3600, "InMaintenance", None, id="window-over"),
    pytest.param({}, CREATED + 5, None, Exclusion.WARMUP, id="new-monitor-warming"),
    pytest.param({}, CREATED + 5, "WarmingUp", Exclusion.WARMUP, id="still-warming"),
    pytest.param({}, CREATED + 5, "Probing", None, id="a-success-ended-warm-up"),
    pytest.param({}, CREATED + 5, "InMaintenance", Exclusion.WARMUP, id="warming-after-a-window"),
    pytest.param({}, CREATED + 601, "WarmingUp", None, id="warm-up-time-over"),
    pytest.param({"probe": {"warmup": "0s"}}, CREATED + 5, None, None, id="no-warm-up"),
])
def test_the_exclusion_known_without_a_result(fields: dict[str, Any], now: float, before: str | None,
                                              expected: Exclusion | None) -> None:
    assert exclusion.known(spec(**fields), now, written(before)) is expected


@pytest.mark.parametrize("reason", ["WarmingUp", "InMaintenance", "Paused", "Probing"])
def test_a_right_status_is_not_rewritten_before_the_first_result(reason: str) -> None:
    fields = {"WarmingUp": {}, "InMaintenance": {"maintenance": WINDOW}, "Paused": {"paused": True},
              "Probing": {}}[reason]
    now = IN_WINDOW if reason == "InMaintenance" else CREATED + 5
    before_obs = status.Observed(1, target=RESOLVED, interval_ms=30_000,
                                 excluded_now=exclusion.known(spec(**fields), now, written(reason)))
    right = status.build(before_obs, None, now - 60, None)
    assert next(c for c in right["conditions"] if c["type"] == "Probing")["reason"] == reason
    after_restart = status.build(before_obs, right, now, None)
    assert status.significant(after_restart) == status.significant(right)
    assert after_restart["conditions"] == right["conditions"]  # transition times kept too


def test_the_merge_patch_removes_what_is_no_longer_there() -> None:
    failing = {"url": "http://web/", "nextMaintenance": "2027-01-15T08:00:00Z",
               "lastProbe": {"time": "t1", "result": "failure", "reason": "refused", "message": "refused"},
               "conditions": [{"type": "Ready"}], "slo": None}
    ok = {"url": "http://web/", "lastProbe": {"time": "t2", "result": "success"}, "conditions": [], "slo": None}
    assert status.merge_patch(failing, ok) == {
        "url": "http://web/", "nextMaintenance": None, "conditions": [], "slo": None,
        "lastProbe": {"time": "t2", "result": "success", "reason": None, "message": None}}
    assert status.merge_patch(None, ok) == ok
    assert status.merge_patch(ok, failing) == failing
