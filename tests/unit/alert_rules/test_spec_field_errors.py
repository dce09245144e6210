"""Every field error of an object at once (issue 15): a user fixes a manifest in one round.

Covers: the RouteMonitor parser reports each invalid field of one object (probe, status ranges,
SLO, URL, alerting, maintenance windows, request headers), and annotations likewise; a check
that depends on a field in error is skipped instead of reporting noise; ``str()`` names every
field in one bounded line and never echoes a secret; an object with very many bad fields keeps
:data:`MAX_ERRORS` and counts the rest; ``route-monitor check`` (run as a user runs it) prints
one line per field error, each naming the file and the line in it, the object and the field, and
counts them;
``standalone`` prints the same lines and runs the good monitor beside the bad one.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from alert_rules import names
from alert_rules.fielderrors import MAX_ERRORS, MAX_MESSAGE, FieldError, InvalidSpec
from route_monitor.spec.monitor import parse_routemonitor
from route_monitor.targets.annotations import monitor_manifest
from tests.support import standalone


def rm(spec: dict[str, Any], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": "routemonitor.io/v1alpha1", "kind": "RouteMonitor",
            "metadata": meta or {"name": "shop", "namespace": "web"},
            "spec": {"target": {"url": "https://shop.example/"}, "slo": {"availability": "99.9"}, **spec}}


def errors_of(obj: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(InvalidSpec) as e:
        parse_routemonitor(obj)
    return {f.field: f.reason for f in e.value.errors}


SEVERAL_BAD = rm({"target": {"url": "http://shop.example:99999/"},
                  "probe": {"interval": "5x", "method": "PUT", "expectedStatus": ["2xx", "700", "abc"]},
                  "slo": {"availability": "101", "period": "forever"},
                  "alerting": {"page": "yes", "labels": {"team": 5}}})


def test_every_bad_field_of_one_routemonitor_is_reported() -> None:
    assert set(errors_of(SEVERAL_BAD)) == {
        "spec.target.url", "spec.probe.interval", "spec.probe.method", "spec.probe.expectedStatus[1]",
        "spec.probe.expectedStatus[2]", "spec.slo.availability", "spec.slo.period", "spec.alerting.page",
        "spec.alerting.labels.team"}


def test_str_names_every_field_on_one_bounded_line_and_the_first_error_stays_first() -> None:
    with pytest.raises(InvalidSpec) as e:
        parse_routemonitor(SEVERAL_BAD)
    text = str(e.value)
    assert text.startswith("9 field errors: ") and "\n" not in text and len(text) <= MAX_MESSAGE
    assert all(f.field in text for f in e.value.errors)
    assert (e.value.field, e.value.reason) == (e.value.errors[0].field, e.value.errors[0].reason)


@pytest.mark.parametrize(("spec", "expected"), [
    pytest.param({"probe": {"interval": "often", "timeout": "20s"}}, {"spec.probe.interval"},
                 id="timeout-vs-interval-skipped-when-the-interval-is-bad"),
    pytest.param({"probe": {"interval": "often"}, "slo": {"availability": "99", "latency": {"threshold": "20s",
                                                                                            "objective": "99"}}},
                 {"spec.probe.interval"}, id="latency-vs-timeout-skipped-when-the-interval-is-bad"),
    pytest.param({"probe": {"timeout": "soon"}, "slo": {"availability": "99", "latency": {"threshold": "20s",
                                                                                          "objective": "99"}}},
                 {"spec.probe.timeout"}, id="latency-vs-timeout-skipped-when-the-timeout-is-bad"),
    pytest.param({"probe": {"method": "PUT"}, "slo": {"availability": "99", "latency": {"threshold": "20s",
                                                                                        "objective": "99"}}},
                 {"spec.probe.method", "spec.slo.latency.threshold"}, id="latency-vs-timeout-kept-beside-a-bad-method"),
    pytest.param({"probe": {"method": "PUT", "bodyRegex": "ok"}}, {"spec.probe.method"},
                 id="head-vs-bodyregex-skipped-when-the-method-is-bad"),
    pytest.param({"slo": "99.9", "probe": {"interval": "0s"}}, {"spec.slo", "spec.probe.interval"},
                 id="a-non-mapping-slo-is-one-error-not-one-per-missing-field"),
    pytest.param({"maintenance": [{"schedule": "not cron", "timeZone": "Mars/Olympus", "duration": "2h"},
                                  {"start": "2026-12-01T03:00:00Z", "end": "yesterday"}]},
                 {"spec.maintenance[0].schedule", "spec.maintenance[0].timeZone", "spec.maintenance[1].end"},
                 id="every-bad-maintenance-window"),
    pytest.param({"maintenance": [{"start": "2026-12-01T03:00:00Z", "end": "2026-12-01T02:00:00Z"}]},
                 {"spec.maintenance[0].end"}, id="end-before-start-when-both-parse"),
    pytest.param({"probe": {"headers": {"Host": "x", "X-Ok": "fine", "X-Two": "a\nb"}, "tls": {"serverName": "_"}}},
                 {"spec.probe.headers.Host", "spec.probe.headers.X-Two", "spec.probe.tls.serverName"},
                 id="request-settings"),
])
def test_dependent_checks_are_skipped_independent_ones_kept(spec: dict[str, Any], expected: set[str]) -> None:
    assert set(errors_of(rm(spec))) == expected


def test_a_spec_that_is_not_a_mapping_is_one_error_beside_the_metadata_errors() -> None:
    obj = {"kind": "RouteMonitor", "metadata": {"name": "A/b", "namespace": "x]"}, "spec": ["nope"]}
    assert set(errors_of(obj)) == {"metadata.name", "metadata.namespace", "spec"}


@pytest.mark.parametrize("spec", [
    pytest.param({"target": {"url": "https://user:hunter2@shop.example:0/", "route": {"name": "x"}}},
                 id="two-targets"),
    pytest.param({"target": {"url": ["https://user:hunter2@shop.example/"]}}, id="url-not-a-string"),
    pytest.param({"probe": {"headers": {"Authorization": "Bearer hunter2", "Proxy-Authorization": "Basic hunter2"}}},
                 id="credential-headers"),
])
def test_no_secret_is_echoed(spec: dict[str, Any]) -> None:
    with pytest.raises(InvalidSpec) as e:
        parse_routemonitor(rm(spec))
    assert "hunter2" not in str(e.value) and all("hunter2" not in str(f) for f in e.value.errors)


def test_a_url_with_user_info_and_a_bad_port_gets_both_errors_without_the_password() -> None:
    obj = rm({"target": {"url": "https://user:hunter2@shop.example:0/"}, "probe": {"interval": "x"}})
    with pytest.raises(InvalidSpec) as e:
        parse_routemonitor(obj)
    assert [f.field for f in e.value.errors].count("spec.target.url") == 2  # user info, and the port
    assert "hunter2" not in str(e.value) and all("hunter2" not in str(f) for f in e.value.errors)


def test_very_many_bad_fields_are_bounded_and_counted() -> None:
    with pytest.raises(InvalidSpec) as e:
        parse_routemonitor(rm({"alerting": {"labels": {f"l{i}": i for i in range(50)}}}))
    assert len(e.value.errors) == MAX_ERRORS and e.value.omitted == 50 - MAX_ERRORS
    text = str(e.value)
    assert text.startswith("50 field errors: ") and len(text) <= MAX_MESSAGE and "more" in text


def test_summary_drops_values_then_fields_to_stay_bounded() -> None:
    long = "v" * 400
    e = InvalidSpec.of([FieldError.of(f"spec.f{i}", long, "bad") for i in range(6)])
    assert str(e).startswith("6 field errors: ") and len(str(e)) <= MAX_MESSAGE
    assert all(f"spec.f{i}" in str(e) for i in range(6))
    assert len(e.summary(60)) <= 60 and "spec.f0" in e.summary(60) and "more" in e.summary(60)


def test_every_bad_annotation_of_a_route_is_reported() -> None:
    route = {"kind": "Route", "metadata": {"name": "web", "namespace": "shop", "annotations": {
        names.ANN_SLO: "100", names.ANN_INTERVAL: "often", names.ANN_PATH: "healthz", names.ANN_PORT: "8080",
        names.ANN_LATENCY_THRESHOLD: "300ms", names.ANN_MAINTENANCE: "0 2 * * SUN 2h Mars/Olympus",
        names.ANN_PAUSED: "maybe"}}}
    with pytest.raises(InvalidSpec) as e:
        monitor_manifest(route, "route")
    assert {f.field for f in e.value.errors} == {f"metadata.annotations[{a}]" for a in (
        names.ANN_SLO, names.ANN_INTERVAL, names.ANN_PATH, names.ANN_PORT, names.ANN_LATENCY_SLO,
        names.ANN_MAINTENANCE, names.ANN_PAUSED)}
    assert "often" in str(e.value) and "Mars/Olympus" in str(e.value)


GOOD = ("apiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {name: good, namespace: web}\n"
        "spec:\n  target: {url: 'https://good.example/'}\n  slo: {availability: '99.9'}\n")
BAD = """apiVersion: routemonitor.io/v1alpha1
kind: RouteMonitor
metadata: {name: shop, namespace: web}
spec:
  target: {url: 'http://user:hunter2@shop.example:99999/'}
  probe:
    interval: 5x
    method: PUT
    expectedStatus: ["2xx", "700"]
  slo: {availability: "101"}
"""
BAD_LINES = {"spec.target.url": 12, "spec.probe.interval": 14, "spec.probe.method": 15,
             "spec.probe.expectedStatus[1]": 16, "spec.slo.availability": 17}
"""The line in the file (GOOD, ``---``, BAD) of each bad field."""
BAD_FIELDS = ("spec.target.url", "spec.probe.interval", "spec.probe.method", "spec.probe.expectedStatus[1]",
              "spec.slo.availability")


def test_check_prints_every_field_error_of_an_object_in_one_run(tmp_path: Path) -> None:
    path = tmp_path / "shop.yaml"
    path.write_text(GOOD + "---\n" + BAD)
    run = subprocess.run([sys.executable, "-m", "route_monitor.cli.main", "check", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 1
    errors = [line for line in run.stderr.splitlines() if ": error: " in line]
    at = re.compile(rf"^{re.escape(str(path))}:(\d+): error: RouteMonitor/web/shop: ([^:]+): ")
    assert all(at.match(line) for line in errors), run.stderr
    assert sorted({at.match(line)[2] for line in errors}) == sorted(BAD_FIELDS)  # type: ignore[index]
    assert {at.match(line)[2]: int(at.match(line)[1]) for line in errors} == BAD_LINES  # type: ignore[index]
    assert len(errors) == 6  # the URL has two: user info and the port
    assert run.stderr.splitlines()[-1] == "1 monitor(s), 6 error(s), 0 warning(s)"
    assert "hunter2" not in run.stderr + run.stdout
    assert "target: https://good.example/" in run.stdout


def test_standalone_prints_every_field_error_and_runs_the_good_monitor(tmp_path: Path) -> None:
    path = tmp_path / "shop.yaml"
    path.write_text(GOOD + "---\n" + BAD)
    with standalone.started(tmp_path) as lines:
        at = re.compile(rf"^{re.escape(str(path))}:\d+: error: RouteMonitor/web/shop: ([^:]+): ")
        errors = [m[1] for line in lines if (m := at.match(line))]
        assert sorted(set(errors)) == sorted(BAD_FIELDS), "".join(lines)
        assert any("monitoring web/good" in line for line in lines) and "hunter2" not in "".join(lines)
