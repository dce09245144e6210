"""Exact counts of a report's chunk (``route_monitor/reports/exactcount.py``), on hand-made samples.

Covers: a regular series is its last sample minus the one before the chunk; a series that reset
in the chunk, one that started in it and one with no sample in the hour before are read from
their raw samples; raw samples count each rise, the whole value after a reset, nothing before
the chunk and nothing for a new series' first sample; sums by namespace, monitor and result.
The same against a real Prometheus with samples off the day's edges: ``test_slo_history.py``.
"""

from __future__ import annotations

from route_monitor.reports.exactcount import Chunk, by_result, counted, key_of, split
from route_monitor.slo.promapi import Sample


def s(value: float, monitor: str = "web", result: str = "failure", instance: str = "a") -> Sample:
    return Sample({"__name__": "route_monitor_probes_total", "namespace": "shop", "monitor": monitor,
                   "result": result, "instance": instance}, value)


def test_regular_series_telescope_and_others_are_read_raw() -> None:
    chunk = Chunk(1000.0,
                  at_end=[s(130), s(5, "restarted"), s(7, "new"), s(40, "gap")],
                  at_start=[s(100), s(90, "restarted"), s(30, "gap", instance="b")],
                  resets_to_end=[s(0), s(1, "restarted"), s(0, "new")],
                  resets_to_start=[s(0), s(0, "restarted")])
    counts, irregular = split(chunk)
    assert counts == {key_of(s(0).labels): 30.0}
    assert irregular == sorted(key_of(x.labels) for x in (s(0, "restarted"), s(0, "new"), s(0, "gap")))


def test_raw_samples_count_rises_and_restarts() -> None:
    points = [(900.0, 80.0), (990.0, 90.0), (1010.0, 95.0), (1020.0, 3.0), (1030.0, 5.0)]
    assert counted(points, 1000.0) == 5 + 3 + 2
    assert counted(points, 1010.0) == 3 + 2, "a sample at the chunk's start belongs to the chunk before"
    assert counted([(1010.0, 2.0), (1020.0, 6.0)], 1000.0) == 4, "a new series counts from its first sample"
    assert counted([], 1000.0) == 0


def test_sums_by_monitor_and_result() -> None:
    counts = {key_of(s(0, instance="a").labels): 3.0, key_of(s(0, instance="b").labels): 4.0,
              key_of(s(0, result="success").labels): 10.0}
    assert by_result(counts) == [
        Sample({"namespace": "shop", "monitor": "web", "result": "failure"}, 7.0),
        Sample({"namespace": "shop", "monitor": "web", "result": "success"}, 10.0)]
