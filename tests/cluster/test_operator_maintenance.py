"""Contract 9 through the operator, against the real control plane (``pytest -m cluster``).

Covers: a Route annotated ``routemonitor.io/paused`` and ``routemonitor.io/maintenance`` becomes a
RouteMonitor with ``spec.paused`` and ``spec.maintenance``; it is probed, but its results go to
``route_monitor_probes_excluded_total{reason="paused"}``, ``route_monitor_maintenance`` is 1,
``Probing`` has reason ``Paused`` and ``status.nextMaintenance`` is the next window start;
un-pausing counts results again. A bad window (unknown zone) is a Warning event naming the
annotation, the window and the value, and the monitor keeps its last good spec; a hand-written
RouteMonitor edited into an invalid cron is ``InvalidSpec`` naming the field, and probing goes on
with its last valid spec; a target failing from its creation is ``WarmingUp`` (failures excluded)
until its first success, after which failures count.
"""

from __future__ import annotations

import datetime as dt
import time
from zoneinfo import ZoneInfo

import pytest
from lightkube import Client
from lightkube.types import PatchType

from alert_rules import names
from tests.support.net import wait_for
from tests.support.operator import (
    Operator,
    Target,
    annotations,
    condition,
    get,
    route,
    wait_monitor,
    warnings_for,
)
from tests.support.resources import Route, RouteMonitor

pytestmark = pytest.mark.cluster
WINDOW = "0 2 * * SUN 2h Europe/Paris"


def test_paused_route_is_probed_but_not_counted_and_status_says_so(
        kube: Client, operator: Operator, ns: str, target: Target) -> None:
    kube.create(route(ns, "shop", target.host, annotations(paused="true", maintenance=WINDOW)))
    monitor = wait_monitor(kube, ns, "shop", lambda m: condition(m, "Probing").get("reason") == "Paused",
                           "Probing reason Paused")
    assert monitor["spec"]["paused"] is True
    assert monitor["spec"]["maintenance"] == [{"schedule": "0 2 * * SUN", "duration": "2h",
                                               "timeZone": "Europe/Paris"}]
    assert condition(monitor, "Probing")["status"] == "True" and condition(monitor, "Ready")["status"] == "True"
    nxt = dt.datetime.fromisoformat(monitor["status"]["nextMaintenance"]).astimezone(ZoneInfo("Europe/Paris"))
    assert 0 < nxt.timestamp() - time.time() <= 7 * 86_400
    assert (nxt.weekday(), nxt.hour, nxt.minute) == (6, 2, 0)  # the next Sunday, 02:00 in Paris
    assert monitor["status"]["lastProbe"]["excluded"] == "paused"

    labels = {"namespace": ns, "monitor": "shop"}
    wait_for(lambda: (operator.sample(names.PROBES_EXCLUDED_TOTAL, **labels, reason="paused") or 0) >= 2,
             timeout=15, what="excluded probes")
    assert operator.sample(names.PROBES_TOTAL, **labels, result="success") == 0
    assert operator.sample(names.MAINTENANCE, **labels) == 1
    assert target.count() >= 2

    kube.patch(Route, "shop", [{"op": "remove", "path": "/metadata/annotations/routemonitor.io~1paused"}],
               namespace=ns, patch_type=PatchType.JSON)
    wait_monitor(kube, ns, "shop", lambda m: condition(m, "Probing").get("reason") == "Probing", "Probing again")
    wait_for(lambda: (operator.sample(names.PROBES_TOTAL, **labels, result="success") or 0) >= 1, timeout=15,
             what="results counted again")
    assert operator.sample(names.MAINTENANCE, **labels) == 0


def test_bad_window_is_a_warning_and_the_last_good_spec_stays(
        kube: Client, operator: Operator, ns: str, target: Target) -> None:
    kube.create(route(ns, "keep", target.host, annotations(maintenance=WINDOW)))
    good = wait_monitor(kube, ns, "keep", lambda m: condition(m, "Ready").get("status") == "True", "Ready")
    kube.patch(Route, "keep", {"metadata": {"annotations": {names.ANN_MAINTENANCE: "0 2 * * SUN 2h Mars/Olympus"}}},
               namespace=ns, patch_type=PatchType.MERGE)
    wait_for(lambda: warnings_for(kube, ns, "Route", "keep", "InvalidAnnotation"), timeout=20,
             what="a Warning event on the Route")
    [message] = warnings_for(kube, ns, "Route", "keep", "InvalidAnnotation")
    assert names.ANN_MAINTENANCE in message and "window 1 (timeZone)" in message and "Mars/Olympus" in message
    still = get(kube, RouteMonitor, "keep", ns)
    assert still is not None and still["spec"] == good["spec"]


def test_invalid_edit_of_a_routemonitor_names_the_field_and_probing_goes_on(
        kube: Client, operator: Operator, ns: str, target: Target) -> None:
    kube.create(route(ns, "web", target.host))  # not annotated: the RouteMonitor below is written by hand
    kube.create(RouteMonitor.from_dict({
        "apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": "web", "namespace": ns},
        "spec": {"target": {"route": {"name": "web"}}, "probe": {"interval": "1s"}, "slo": {"availability": "99.9"},
                 "maintenance": [{"schedule": "0 2 * * SUN", "duration": "2h", "timeZone": "Europe/Paris"}]}}))
    wait_monitor(kube, ns, "web", lambda m: condition(m, "Ready").get("status") == "True", "Ready")
    kube.patch(RouteMonitor, "web", {"spec": {"maintenance": [{"schedule": "0 25 * * SUN", "duration": "2h"}]}},
               namespace=ns, patch_type=PatchType.MERGE)
    m = wait_monitor(kube, ns, "web", lambda m: condition(m, "Ready").get("reason") == "InvalidSpec", "InvalidSpec")
    message = condition(m, "Ready")["message"]
    assert "spec.maintenance[0].schedule" in message and "'0 25 * * SUN'" in message
    assert "probing goes on with the last valid spec" in message
    hits = target.count()
    wait_for(lambda: target.count() >= hits + 2, timeout=10, what="probing to go on with the last valid spec")


def test_target_failing_from_creation_is_warming_up_until_its_first_success(
        kube: Client, operator: Operator, ns: str, target: Target) -> None:
    target.status = 503
    kube.create(route(ns, "new", target.host, annotations()))
    m = wait_monitor(kube, ns, "new", lambda m: condition(m, "Probing").get("reason") == "WarmingUp", "WarmingUp")
    assert m["status"]["lastProbe"]["result"] == "failure" and m["status"]["lastProbe"]["excluded"] == "warmup"
    labels = {"namespace": ns, "monitor": "new"}
    wait_for(lambda: (operator.sample(names.PROBES_EXCLUDED_TOTAL, **labels, reason="warmup") or 0) >= 2,
             timeout=15, what="excluded warm-up probes")
    assert operator.sample(names.PROBES_TOTAL, **labels, result="failure") == 0
    target.status = 200  # the first success ends warm-up: from then on every result counts
    wait_monitor(kube, ns, "new", lambda m: condition(m, "Probing").get("reason") == "Probing", "warm-up over")
    target.status = 503
    wait_for(lambda: (operator.sample(names.PROBES_TOTAL, **labels, result="failure") or 0) >= 1, timeout=15,
             what="failures counted after warm-up")
