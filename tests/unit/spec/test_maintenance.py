"""Maintenance windows (Contract 9): parsing and "is this instant in a window".

Covers: cron windows in an IANA zone and one-off windows, from ``spec.maintenance`` and from the
``routemonitor.io/maintenance`` annotation (on a RouteMonitor, a Route or a Service), the pause
annotation and ``spec.probe.warmup``; half-open windows; what a 2h window at 02:00 does on
both daylight-saving nights in Europe/Paris; every bad input as an InvalidSpec naming the
field (invalid cron, unknown zone, a window longer than the time between its starts, an end
before its start, a line that is neither form); ``check`` prints the next window start with
its offset.
"""

from __future__ import annotations

import argparse
import datetime as dt
import io
import textwrap
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from alert_rules.model import InvalidSpec
from route_monitor.cli.commands import check
from route_monitor.spec.maintenance import CronWindow, OneOffWindow, local_time, span_at, state_at, upcoming
from route_monitor.spec.monitor import DEFAULT_WARMUP_MS, parse_routemonitor
from route_monitor.targets.annotations import monitor_manifest

PARIS = ZoneInfo("Europe/Paris")
ANN = "metadata.annotations[routemonitor.io/maintenance]"


def at(*args: int, tz: dt.tzinfo = dt.UTC) -> float:
    return dt.datetime(*args, tzinfo=tz).timestamp()  # type: ignore[misc]


def rm(spec: dict | None = None, annotations: dict | None = None) -> dict:
    return {"apiVersion": "routemonitor.io/v1alpha1", "kind": "RouteMonitor",
            "metadata": {"name": "web", "namespace": "shop", "annotations": annotations or {}},
            "spec": {"target": {"url": "https://web.example"}, "slo": {"availability": "99.9"}, **(spec or {})}}


def test_defaults_no_windows_not_paused_ten_minute_warmup() -> None:
    m = parse_routemonitor(rm())
    assert m.maintenance == () and not m.paused
    assert m.probe.warmup_ms == DEFAULT_WARMUP_MS == 600_000
    for off in ("0s", "0m", "0ms", "0"):
        assert parse_routemonitor(rm({"probe": {"warmup": off}})).probe.warmup_ms == 0
    assert parse_routemonitor(rm({"probe": {"warmup": "30m"}})).probe.warmup_ms == 1_800_000


def test_spec_and_own_annotations_are_merged() -> None:
    m = parse_routemonitor(rm(
        {"maintenance": [{"schedule": "0 2 * * SUN", "duration": "2h", "timeZone": "Europe/Paris"},
                         {"start": "2026-12-01T02:00:00Z", "end": "2026-12-01T04:00:00+00:00"}]},
        {"routemonitor.io/maintenance": "# nightly backup\n30 1 * * * 15m\n", "routemonitor.io/paused": "true"}))
    assert m.maintenance == (CronWindow("0 2 * * SUN", 7_200_000, "Europe/Paris"),
                             OneOffWindow(at(2026, 12, 1, 2), at(2026, 12, 1, 4)),
                             CronWindow("30 1 * * *", 900_000, "UTC"))
    assert m.paused
    assert not parse_routemonitor(rm({"paused": False}, {"routemonitor.io/paused": "false"})).paused


def test_annotated_route_becomes_spec_maintenance_and_paused() -> None:
    route = {"kind": "Route", "metadata": {"name": "web", "namespace": "shop", "annotations": {
        "routemonitor.io/slo": "99.9", "routemonitor.io/paused": "true",
        "routemonitor.io/maintenance": "0 2 * * SUN 2h Europe/Paris\n2026-12-01T02:00:00Z 2026-12-01T04:00:00Z"}}}
    spec = monitor_manifest(route, "route")["spec"]
    assert spec["maintenance"] == [{"schedule": "0 2 * * SUN", "duration": "2h", "timeZone": "Europe/Paris"},
                                   {"start": "2026-12-01T02:00:00Z", "end": "2026-12-01T04:00:00Z"}]
    assert spec["paused"] is True


def test_windows_are_half_open_and_state_says_until_when() -> None:
    w = CronWindow("0 2 * * *", 7_200_000, "UTC")
    assert span_at(w, at(2026, 11, 23, 1, 59, 59)) is None
    assert span_at(w, at(2026, 11, 23, 2)) == (at(2026, 11, 23, 2), at(2026, 11, 23, 4))
    assert span_at(w, at(2026, 11, 23, 3, 59, 59)) is not None
    assert span_at(w, at(2026, 11, 23, 4)) is None
    assert state_at((w,), at(2026, 11, 23, 3)) == (True, at(2026, 11, 23, 4))
    assert state_at((w,), at(2026, 11, 23, 5)) == (False, at(2026, 11, 24, 2))
    one = OneOffWindow(at(2026, 12, 1, 2), at(2026, 12, 1, 4))
    assert state_at((one,), at(2026, 12, 1, 3)) == (True, at(2026, 12, 1, 4))
    assert state_at((one,), at(2026, 12, 2)) == (False, float("inf"))


@pytest.mark.parametrize(("night", "starts", "ends"), [
    # clocks jump 02:00 CET -> 03:00 CEST: the 02:00 start happens at the first instant after the jump
    pytest.param(dt.datetime(2026, 3, 29), "2026-03-29T03:00:00+02:00", "2026-03-29T05:00:00+02:00",
                 id="spring-forward-starts-at-03:00-and-lasts-2h"),
    # clocks fall back 03:00 CEST -> 02:00 CET: the start happens once, at the first 02:00
    pytest.param(dt.datetime(2026, 10, 25), "2026-10-25T02:00:00+02:00", "2026-10-25T03:00:00+01:00",
                 id="fall-back-starts-at-the-first-02:00-and-lasts-2h"),
    pytest.param(dt.datetime(2026, 11, 22), "2026-11-22T02:00:00+01:00", "2026-11-22T04:00:00+01:00",
                 id="ordinary-sunday"),
])
def test_a_2h_window_at_02_00_on_daylight_saving_nights(night: dt.datetime, starts: str, ends: str) -> None:
    w = CronWindow("0 2 * * SUN", 7_200_000, "Europe/Paris")
    found = upcoming((w,), night.replace(tzinfo=PARIS).timestamp() - 86_400)
    assert found is not None
    start = found[1]
    assert local_time(w, start) == starts
    span = span_at(w, start + 3600)
    assert span is not None and local_time(w, span[1]) == ends
    assert span[1] - span[0] == 7200  # always two hours of elapsed time
    assert span_at(w, span[1]) is None


def test_next_start_is_shown_with_its_offset() -> None:
    w = CronWindow("0 2 * * SUN", 7_200_000, "Europe/Paris")
    found = upcoming((w, OneOffWindow(at(2026, 12, 1, 2), at(2026, 12, 1, 4))), at(2026, 11, 23, 10))
    assert found is not None and local_time(*found) == "2026-11-29T02:00:00+01:00"
    found = upcoming((w, OneOffWindow(at(2026, 11, 24, 2), at(2026, 11, 24, 4))), at(2026, 11, 23, 10))
    assert found is not None and local_time(*found) == "2026-11-24T02:00:00+00:00"
    assert upcoming((), at(2026, 11, 23)) is None


@pytest.mark.parametrize(("spec", "annotations", "field", "says"), [
    pytest.param({"maintenance": [{"schedule": "0 25 * * *", "duration": "1h"}]}, None,
                 "spec.maintenance[0].schedule", "cron", id="invalid-cron"),
    pytest.param({"maintenance": [{"schedule": "0 2 * *", "duration": "1h"}]}, None,
                 "spec.maintenance[0].schedule", "5-field", id="four-fields"),
    pytest.param({"maintenance": [{"schedule": "0 2 * * *", "duration": "1h", "timeZone": "Europe/Atlantis"}]},
                 None, "spec.maintenance[0].timeZone", "IANA", id="unknown-zone"),
    pytest.param({"maintenance": [{"schedule": "*/30 * * * *", "duration": "45m"}]}, None,
                 "spec.maintenance[0].duration", "30m", id="longer-than-the-time-between-starts"),
    # daily at 02:00 in Paris: 23h apart on the spring night, so a 23h30m window would overlap itself
    pytest.param({"maintenance": [{"schedule": "0 2 * * *", "duration": "23h30m", "timeZone": "Europe/Paris"}]},
                 None, "spec.maintenance[0].duration", "23h", id="overlaps-itself-on-the-spring-night"),
    pytest.param({"maintenance": [{"schedule": "0 2 * * *"}]}, None, "spec.maintenance[0].duration", "required",
                 id="no-duration"),
    pytest.param({"maintenance": [{"start": "2026-12-01T04:00:00Z", "end": "2026-12-01T02:00:00Z"}]}, None,
                 "spec.maintenance[0].end", "after the start", id="end-before-start"),
    pytest.param({"maintenance": [{"start": "2026-12-01T02:00:00", "end": "2026-12-01T04:00:00Z"}]}, None,
                 "spec.maintenance[0].start", "offset", id="start-without-offset"),
    pytest.param({"maintenance": [{"start": "2026-12-01T02:00:00Z"}]}, None, "spec.maintenance[0].end", "required",
                 id="start-without-end"),
    pytest.param({"maintenance": {"schedule": "0 2 * * *"}}, None, "spec.maintenance", "list", id="not-a-list"),
    pytest.param({"probe": {"warmup": "ten minutes"}}, None, "spec.probe.warmup", "duration", id="bad-warmup"),
    pytest.param({"paused": "yes"}, None, "spec.paused", "true or false", id="paused-not-a-bool"),
    pytest.param(None, {"routemonitor.io/maintenance": "0 2 * * SUN 2h\n0 2 * * MON 2h Mars/Olympus"}, ANN,
                 "window 2 (timeZone)", id="annotation-names-the-window"),
    pytest.param(None, {"routemonitor.io/maintenance": "0 2 * SUN 2h"}, ANN, "line 1", id="annotation-bad-line"),
    pytest.param(None, {"routemonitor.io/paused": "yes"}, "metadata.annotations[routemonitor.io/paused]",
                 '"true" or "false"', id="paused-annotation"),
])
def test_bad_input_names_the_field(spec: dict | None, annotations: dict | None, field: str, says: str) -> None:
    with pytest.raises(InvalidSpec) as e:
        parse_routemonitor(rm(spec, annotations))
    assert e.value.field == field
    assert says in str(e.value)


@pytest.mark.parametrize(("value", "says"), [
    pytest.param("0 2 * * SUN 2h Europe/Atlantis", "window 1 (timeZone)", id="unknown-zone"),
    pytest.param("0 2 * * * 25h", "window 1 (duration)", id="too-long"),
    pytest.param("2026-12-01T04:00:00Z 2026-12-01T02:00:00Z", "window 1 (end)", id="end-before-start"),
    pytest.param("every sunday at 2", "line 1", id="neither-form"),
    pytest.param("sunday 2h", "window 1 (start)", id="two-words-are-start-and-end"),
])
def test_bad_annotation_on_a_route_names_the_annotation(value: str, says: str) -> None:
    route = {"kind": "Route", "metadata": {"name": "web", "namespace": "shop", "annotations": {
        "routemonitor.io/slo": "99.9", "routemonitor.io/maintenance": value}}}
    with pytest.raises(InvalidSpec) as e:
        monitor_manifest(route, "route")
    assert e.value.field == ANN
    assert says in str(e.value)


def test_check_prints_the_next_window_start_with_its_offset(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(textwrap.dedent("""\
        apiVersion: routemonitor.io/v1alpha1
        kind: RouteMonitor
        metadata:
          name: web
          namespace: shop
          annotations: {routemonitor.io/maintenance: "0 2 * * SUN 2h Europe/Paris"}
        spec:
          target: {url: "https://web.example"}
          slo: {availability: "99.9"}
          probe: {warmup: 0s}
          paused: true
          maintenance: [{start: "2026-11-24T02:00:00Z", end: "2026-11-24T04:00:00Z"}]
        ---
        apiVersion: v1
        kind: Service
        metadata:
          name: api
          namespace: shop
          annotations: {routemonitor.io/slo: "99", routemonitor.io/maintenance: "30 1 * * * 30m America/New_York"}
        spec: {ports: [{port: 80}]}
        """))
    out, err = io.StringIO(), io.StringIO()
    assert check.run(argparse.Namespace(paths=[str(tmp_path)]), out=out, err=err, now=at(2026, 11, 24, 3)) == 0
    web = out.getvalue().split("\n\n")[1]
    assert "  paused: probes go on, no result counts in the SLO" in web
    assert "  maintenance: 2 window(s), next starts 2026-11-29T02:00:00+01:00 (0 2 * * SUN, 2h, Europe/Paris)" in web
    assert "warm-up" not in web
    api = out.getvalue().split("\n\n")[0]
    assert "  maintenance: 1 window(s), next starts 2026-11-24T01:30:00-05:00 (30 1 * * *, 30m, America/New_York)" in api
    assert "  warm-up: 10m after creation or a URL change" in api
