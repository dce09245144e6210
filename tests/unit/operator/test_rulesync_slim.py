"""What a replica keeps of each PrometheusRule listed at start-up: enough to skip a rewrite, no more.

Every replica lists all of route-monitor's rules when it starts and keeps each one until the
monitor's owner writes it; a replica of three keeps two thirds of them for good. The kept form
must decide "already as desired" exactly as the whole rule does, at a small fraction of its size.
"""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from typing import Any

import pytest

from alert_rules.model import LatencyObjective, MonitorSLO, Objective
from alert_rules.render import prometheus_rule_object
from route_monitor.operator.outputs.rulesync import matches, slim

OWNER = {"apiVersion": "routemonitor.io/v1alpha1", "kind": "RouteMonitor", "name": "checkout", "uid": "u-1",
         "controller": True, "blockOwnerDeletion": True}


def desired() -> dict[str, Any]:
    slo = MonitorSLO("shop", "checkout", Objective(Decimal("99.9"), latency=LatencyObjective(300, Decimal("99"))))
    rule = prometheus_rule_object(slo)
    rule["metadata"]["ownerReferences"] = [dict(OWNER)]
    return rule


def as_stored(rule: dict[str, Any]) -> dict[str, Any]:
    """``rule`` as the API server returns it: with its server-side metadata, and a label someone added."""
    stored = copy.deepcopy(rule)
    stored["metadata"].update(uid="r-1", resourceVersion="42", generation=1, creationTimestamp="2026-11-27T00:00:00Z",
                              managedFields=[{"manager": "route-monitor", "operation": "Update",
                                              "fieldsV1": {"f:spec": {"f:groups": {}}}}])
    stored["metadata"]["labels"]["team"] = "payments"
    return stored


def test_a_slim_rule_is_as_desired_when_the_whole_rule_is() -> None:
    stored = as_stored(desired())
    assert matches(stored, desired()) and matches(slim(stored), desired())


def _spec_changed(r: dict[str, Any]) -> None:
    r["spec"]["groups"][0]["rules"][0]["for"] = "7m"


def _our_label_gone(r: dict[str, Any]) -> None:
    del r["metadata"]["labels"]["app.kubernetes.io/managed-by"]


def _owner_gone(r: dict[str, Any]) -> None:
    r["metadata"]["ownerReferences"] = []


@pytest.mark.parametrize("change", [_spec_changed, _our_label_gone, _owner_gone])
def test_a_slim_rule_differs_where_the_whole_rule_does(change: Any) -> None:
    stored = as_stored(desired())
    change(stored)
    assert not matches(stored, desired())
    assert not matches(slim(stored), desired())


def test_a_slim_rule_keeps_what_a_write_reads_and_is_small() -> None:
    stored = as_stored(desired())
    kept = slim(stored)
    meta = kept["metadata"]
    assert (meta["name"], meta["namespace"], meta["uid"], meta["resourceVersion"]) == \
        ("route-monitor-checkout", "shop", "r-1", "42")
    assert meta["ownerReferences"] == [OWNER] and meta["labels"]["team"] == "payments"
    assert "spec" not in kept and "managedFields" not in meta
    assert slim(kept) == kept, "a slim rule stays as it is (the listing slims each rule as it arrives)"
    assert len(repr(kept)) * 5 < len(json.dumps(stored))
