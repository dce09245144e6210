"""``spec.probe.vantages`` and ``spec.probe.quorum``: defaults, every field error at once, the
CRD's schema agreeing, and ``check`` saying what a monitor's vantages mean."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from alert_rules.fielderrors import InvalidSpec
from route_monitor.cli.commands import check
from route_monitor.cli.main import parse
from route_monitor.spec.crdschema import schema_errors
from route_monitor.spec.monitor import parse_routemonitor
from route_monitor.spec.vantages import Vantages, majority


def _monitor(probe: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "routemonitor.io/v1alpha1", "kind": "RouteMonitor",
            "metadata": {"name": "checkout", "namespace": "shop"},
            "spec": {"target": {"url": "https://checkout.example.com"}, "slo": {"availability": "99.9"},
                     "probe": probe}}


@pytest.mark.parametrize(("probe", "expected"), [
    pytest.param({}, Vantages(1, 1), id="default-one-vantage"),
    pytest.param({"vantages": 2}, Vantages(2, 2), id="majority-of-two-is-two"),
    pytest.param({"vantages": 3}, Vantages(3, 2), id="majority-of-three"),
    pytest.param({"vantages": 5}, Vantages(5, 3), id="majority-of-five"),
    pytest.param({"vantages": 3, "quorum": 1}, Vantages(3, 1), id="any-location"),
    pytest.param({"vantages": 3, "quorum": 3}, Vantages(3, 3), id="every-location"),
])
def test_vantages_and_quorum(probe: dict[str, Any], expected: Vantages) -> None:
    assert parse_routemonitor(_monitor(probe)).probe.vantages == expected


@pytest.mark.parametrize(("probe", "errors"), [
    pytest.param({"vantages": 0}, {"spec.probe.vantages": "between 1 and 16"}, id="zero-vantages"),
    pytest.param({"vantages": 17}, {"spec.probe.vantages": "between 1 and 16"}, id="too-many"),
    pytest.param({"vantages": "3"}, {"spec.probe.vantages": "whole number"}, id="string"),
    pytest.param({"vantages": True}, {"spec.probe.vantages": "whole number"}, id="boolean"),
    pytest.param({"vantages": 3, "quorum": 4}, {"spec.probe.quorum": "between 1 and spec.probe.vantages (3)"},
                 id="quorum-above-vantages"),
    pytest.param({"quorum": 2}, {"spec.probe.quorum": "between 1 and spec.probe.vantages (1)"},
                 id="quorum-without-vantages"),
    pytest.param({"vantages": 3, "quorum": 0}, {"spec.probe.quorum": "between 1 and"}, id="zero-quorum"),
    pytest.param({"vantages": 0, "quorum": "x", "interval": "0s"},
                 {"spec.probe.vantages": "between 1 and 16", "spec.probe.quorum": "whole number",
                  "spec.probe.interval": ""}, id="all-at-once"),
])
def test_field_errors_all_at_once(probe: dict[str, Any], errors: dict[str, str]) -> None:
    with pytest.raises(InvalidSpec) as e:
        parse_routemonitor(_monitor(probe))
    found = {err.field: err.reason for err in e.value.errors}
    assert set(found) == set(errors)
    for field, reason in errors.items():
        assert reason in found[field]


@pytest.mark.parametrize("count", range(1, 17))
def test_majority_is_more_than_half(count: int) -> None:
    assert majority(count) * 2 > count >= (majority(count) - 1) * 2


@pytest.mark.parametrize(("probe", "valid"), [
    ({"vantages": 3, "quorum": 2}, True), ({"vantages": 0}, False), ({"quorum": 17}, False),
    ({"vantages": "3"}, False)])
def test_crd_schema_agrees(probe: dict[str, Any], valid: bool) -> None:
    assert (not schema_errors(_monitor(probe))) is valid


def test_check_says_how_many_locations(tmp_path: Path) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text(json.dumps(_monitor({"vantages": 3})))
    out, err = io.StringIO(), io.StringIO()
    assert check.run(parse(["check", str(manifest)], {}), out=out, err=err) == 0, err.getvalue()
    assert "  vantages: 3 locations, a failure counts when 2 of them see it\n" in out.getvalue()
    out = io.StringIO()
    assert check.run(parse(["check", "-o", "json", str(manifest)], {}), out=out, err=err) == 0
    shown = json.loads(out.getvalue())["monitors"][0]
    assert (shown["vantages"], shown["quorum"]) == (3, 2)
