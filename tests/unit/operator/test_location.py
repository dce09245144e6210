"""Where a process probes from (pure parts): ``--location`` wins, else the Node's zone, else
``cluster`` with the reason said; the ``location`` label on every per-monitor series; the
``status.locations`` patches each owner writes (its own entry on a change only; stale ones dropped)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
from collections.abc import Mapping
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from alert_rules import names
from route_monitor.operator import locationstatus
from route_monitor.operator.replicas import location
from route_monitor.probe.metrics import ProbeMetrics, TargetInfo
from route_monitor.probe.result import Exclusion, FailureReason, ProbeResult


def _node(labels: dict[str, str]) -> Mapping[str, Any]:
    return {"metadata": {"name": "node-1", "labels": labels}}


async def _get_zone(path: str) -> Mapping[str, Any]:
    assert path == "/api/v1/nodes/node-1"
    return _node({names.NODE_ZONE_LABEL: "eu-west-1a"})


async def _forbidden(path: str) -> Mapping[str, Any]:
    raise RuntimeError("403 Forbidden")


async def _no_zone(path: str) -> Mapping[str, Any]:
    return _node({})


@pytest.mark.parametrize(("flag", "node", "get", "expected", "why"), [
    pytest.param("office", "node-1", _get_zone, "office", "--location", id="flag-wins"),
    pytest.param(None, "node-1", _get_zone, "eu-west-1a", "topology.kubernetes.io/zone", id="node-zone"),
    pytest.param(None, None, _get_zone, "cluster", "no $NODE_NAME", id="no-node"),
    pytest.param(None, "node-1", _forbidden, "cluster", "could not be read (403 Forbidden)", id="forbidden"),
    pytest.param(None, "node-1", _no_zone, "cluster", "has no topology.kubernetes.io/zone", id="no-zone-label"),
])
def test_location_resolution(flag: str | None, node: str | None, get: Any, expected: str, why: str) -> None:
    where, how = asyncio.run(location.resolve(flag, node, get))
    assert where == expected
    assert why in how


@pytest.mark.parametrize("bad", ["", "-a", "a b", "x" * 64, "zone/1"])
def test_a_bad_location_flag_is_refused(bad: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="not a location"):
        location.flag_value(bad)


@pytest.mark.parametrize("where", ["", "eu-west-1a"])
def test_every_series_carries_the_location(where: str) -> None:
    registry = CollectorRegistry()
    m = ProbeMetrics(registry, location=where)
    series = m.add(("shop", "web"), TargetInfo("http://web", "route", "web", ("dns:cluster",)), None)
    series.record(_result(True))
    labels = {"namespace": "shop", "monitor": "web", **({"location": where} if where else {})}
    assert registry.get_sample_value(names.PROBES_TOTAL, {**labels, "result": "success"}) == 1
    fast = m.exposition().decode()
    rows = [line for line in fast.splitlines() if line.startswith("route_monitor_") and 'monitor="web"' in line]
    assert rows and all(('location="eu-west-1a"' in r) == bool(where) for r in rows)


def _result(success: bool, reason: FailureReason | None = None) -> ProbeResult:
    return ProbeResult(key=("shop", "web"), url="http://web", timestamp=1_800_000_000.0, success=success,
                       reason=reason, duration_seconds=0.1, status_code=200 if success else 503, detail="")


def test_an_owner_writes_its_own_entry_only_when_it_changes() -> None:
    patch = locationstatus.own_patch({}, "a", "member-a", _result(True))
    assert patch == {"locations": {"a": {"member": "member-a", "result": "success", "time": "2027-01-15T08:00:00Z"}}}
    written = {"locations": patch["locations"]}
    assert locationstatus.own_patch(written, "a", "member-a", _result(True)) is None
    failed = locationstatus.own_patch(written, "a", "member-a", _result(False, FailureReason.HTTP_STATUS))
    assert failed == {"locations": {"a": {"member": "member-a", "result": "failure", "reason": "http_status",
                                          "time": "2027-01-15T08:00:00Z"}}}
    assert locationstatus.own_patch(written, "a", "member-a2", _result(True)) is not None  # a new member there
    recovered = locationstatus.own_patch({"locations": failed["locations"]}, "a", "member-a", _result(True))
    assert recovered is not None and recovered["locations"]["a"]["reason"] is None  # not kept from the failure
    assert locationstatus.own_patch(written, "a", "member-a", None) is None
    blind = dataclasses.replace(_result(False, FailureReason.CONNECTION_TIMEOUT), excluded=Exclusion.BLIND)
    assert locationstatus.own_patch(written, "a", "member-a", blind) is None  # being replaced: the first owner prunes


def test_the_first_owner_drops_locations_that_no_longer_probe() -> None:
    status = {"locations": {"a": {}, "b": {}, "c": {}}}
    assert locationstatus.prune_patch(status, ["a", "c"]) == {"locations": {"b": None}}
    assert locationstatus.prune_patch(status, ["a", "b", "c"]) is None
    assert locationstatus.prune_patch({}, ["a"]) is None
