"""The replicas benchmark's own pieces (``benchmarks/replicas_math.py``, ``targets.py --log``)
compute what RESULTS-replicas.md says they do.

Covers: missed and doubled probe slots on a monitor's own grid (a steady monitor misses none, a
takeover gap of two intervals misses one, an early probe after a takeover doubles one, a slot
whose window is not over yet is not judged); the longest gap; owner moves over member sets with
the operator's own rendezvous hashing (a member joining then leaving moves a monitor twice or
not at all); the request log read incrementally (a half-written line waits); the operator's
health series picked out of a ``/metrics`` page without the probe series, and the writes a
monitor costs summed from them; the apiserver's request counts by verb, resource and code; the
member sets a replica logged; the real target server logging each request's path.
"""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from alert_rules import names
from benchmarks import measure
from benchmarks import replicas_math as rm
from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.operator.replicas.sharding import owner_of
from tests.support.net import wait_for

INTERVAL = 30.0


@pytest.mark.parametrize(("times", "end", "expected"), [
    pytest.param([30.2, 60.1, 90.3, 120.0], 136, (0, 0), id="steady-monitor-misses-nothing"),
    pytest.param([30.2, 90.3, 120.0], 136, (1, 0), id="a-two-interval-gap-misses-one-slot"),
    pytest.param([30.2, 47.5, 60.1, 90.3], 106, (0, 1), id="an-early-probe-doubles-a-slot"),
    pytest.param([30.2, 60.1], 74, (0, 0), id="a-slot-whose-window-is-not-over-is-not-judged"),
    pytest.param([], 136, (4, 0), id="never-probed-misses-every-slot"),
])
def test_missed_slots_on_the_monitors_own_grid(times: list[float], end: float, expected: tuple[int, int]) -> None:
    assert rm.missed_slots(times, anchor=0.4, interval=INTERVAL, end=end) == expected


def test_max_gap_counts_the_edges_of_the_window() -> None:
    assert rm.max_gap([10.0, 40.0, 55.0], start=0.0, end=100.0) == 45.0
    assert rm.max_gap([], start=5.0, end=20.0) == 15.0


def test_owner_moves_follow_rendezvous_hashing() -> None:
    keys = [("bench", f"r{i:05d}") for i in range(300)]
    moves = rm.owner_moves(keys, [{"a", "b", "c"}, {"a", "b", "c", "d"}, {"a", "b", "c"}])
    assert set(moves.values()) == {0, 2}
    assert {k for k, n in moves.items() if n} == {k for k in keys if owner_of(k, ["a", "b", "c", "d"]) == "d"}
    assert rm.owner_moves(keys[:1], [{"a"}]) == {keys[0]: 0}


def test_hit_log_reads_new_complete_lines_only(tmp_path: Path) -> None:
    path = tmp_path / "hits.log"
    path.write_text("100.000 /r00001\n101.500 /r00002\n130.000 /r0")
    log = rm.HitLog(path).refresh()
    assert log.times("r00001") == [100.0] and log.times("r00002") == [101.5]
    with open(path, "a") as f:
        f.write("0001\n")
    log.refresh()
    assert log.times("r00001") == [100.0, 130.0]
    assert log.first_after("r00001", 100.0) == 130.0 and log.last_before("r00001", 130.0) == 100.0
    assert log.first_after("r00002", 101.5) is None and log.count(100.0, 130.0) == 2


def test_operator_series_and_writes_from_a_metrics_page() -> None:
    registry = CollectorRegistry()
    metrics = OperatorMetrics(registry)
    for verb, resource, n in (("create", names.PLURAL, 3), ("patch", names.PLURAL + "/status", 6),
                              ("create", "prometheusrules", 3), ("get", "prometheusrules", 9),
                              ("patch", "leases", 40), ("list", "leases", 2), ("create", "events", 1)):
        metrics.kube_requests.labels(verb=verb, resource=resource).inc(n)
    metrics.set_state(("bench", "r1"), "ready")
    probe_line = f'{names.PROBE_SUCCESS}{{namespace="bench",monitor="r1"}} 1.0\n'
    samples = rm.operator_samples(generate_latest(registry).decode() + probe_line)
    assert all(name in rm.OPERATOR_SERIES for name, _ in samples)
    assert measure.total(samples, names.MONITORS, state="ready") == 1
    assert rm.writes(samples) == {"create routemonitors": 3, "patch routemonitors/status": 6,
                                  "create prometheusrules": 3, "create events": 1}
    assert rm.lease_requests(samples) == 42


def test_apiserver_requests_by_verb_resource_and_code() -> None:
    page = (
        '# TYPE apiserver_request_total counter\n'
        'apiserver_request_total{code="409",component="apiserver",group="monitoring.coreos.com",resource="prometheusrules",'
        'scope="resource",subresource="",verb="POST",version="v1"} 7\n'
        'apiserver_request_total{code="200",component="apiserver",group="routemonitor.io",resource="routemonitors",'
        'scope="resource",subresource="status",verb="PATCH",version="v1"} 5\n'
        'apiserver_request_total{code="200",component="apiserver",group="",resource="pods",'
        'scope="namespace",subresource="",verb="LIST",version="v1"} 9\n'
        'apiserver_request_duration_seconds_count{resource="routemonitors",verb="PATCH"} 5\n')
    assert rm.apiserver_requests(page, ["routemonitors", "prometheusrules"]) == {
        "POST prometheusrules 409": 7, "PATCH routemonitors/status 200": 5}


def test_member_sets_from_an_operator_log() -> None:
    lines = [
        "2026-11-23 10:53:11,335 INFO route_monitor.operator.membership: live members: replica-2, replica-3 "
        "(were replica-1, replica-2, replica-3)",
        "2026-11-23 10:53:11,374 INFO route_monitor.operator.supervisor: 2 live replicas: this one gains 521 monitors",
        "2026-11-23 10:54:09,707 INFO route_monitor.operator.membership: live members: replica-1, replica-2, replica-3 "
        "(were replica-2, replica-3)",
    ]
    changes = rm.member_changes(lines)
    assert [members for _, members in changes] == [{"replica-2", "replica-3"}, {"replica-1", "replica-2", "replica-3"}]
    assert changes[1][0] - changes[0][0] == pytest.approx(58.372)


def test_the_target_server_logs_each_request_path(tmp_path: Path) -> None:
    log = tmp_path / "hits.log"
    proc, ready = measure.start([sys.executable, "-m", "benchmarks.targets", "--ports", "1", "--log", str(log)],
                                ready_line=True)
    try:
        assert ready is not None and isinstance(ready["http"], list)
        for path in ("/r00001", "/r00002?x=1"):
            assert httpx.get(f"http://127.0.0.1:{ready['http'][0]}{path}", timeout=5).text == "ok"
        hits = rm.HitLog(log)
        wait_for(lambda: len(hits.refresh().hits) == 2, timeout=5, what="two logged requests")
        assert set(hits.hits) == {"/r00001", "/r00002?x=1"}
    finally:
        assert measure.stop(proc) == 0
