"""The benchmark harness measures what it says (``benchmarks/``; the numbers are in RESULTS.md).

Covers: quantiles from histogram bucket increases (as ``histogram_quantile`` computes them);
CPU read from ``/proc`` grows with work; one tiny real run of each side against the real
target server: our engine in its own process and Debian's blackbox_exporter driven by the load
generator, each probing 20 local targets, every probe counted and successful; and the soak
(``benchmarks/soak.py``) for two one-second samples of 20 monitors through ``standalone`` and
through the operator on the real control plane, every series sampled. No timing
assertions: those are the benchmark's job, not the tests'.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trustme

from benchmarks import blackbox, measure, ours, protocols, soak, soak_sample, targets
from tests.support.cluster import Cluster

INF = float("inf")


@pytest.mark.parametrize(("q", "buckets", "expected"), [
    pytest.param(0.5, [(0.1, 50.0), (1.0, 100.0), (INF, 100.0)], 0.1, id="median-on-a-bucket-edge"),
    pytest.param(0.75, [(0.1, 50.0), (1.0, 100.0), (INF, 100.0)], 0.55, id="interpolated-inside-a-bucket"),
    pytest.param(0.5, [(0.1, 100.0), (INF, 100.0)], 0.05, id="first-bucket-starts-at-zero"),
    pytest.param(0.99, [(0.1, 90.0), (INF, 100.0)], 0.1, id="beyond-the-last-finite-bucket-is-a-floor"),
    pytest.param(0.5, [(0.1, 0.0), (INF, 0.0)], None, id="no-observations"),
])
def test_quantile_from_buckets(q: float, buckets: list[tuple[float, float]], expected: float | None) -> None:
    got = measure.quantile(q, buckets)
    assert got == pytest.approx(expected) if expected is not None else got is None


def test_bucket_delta_sums_series_and_subtracts_the_first_scrape() -> None:
    name = "lag_bucket"
    before = {(name, (("le", "0.1"), ("x", "a"))): 5.0, (name, (("le", "+Inf"), ("x", "a"))): 6.0}
    after = {(name, (("le", "0.1"), ("x", "a"))): 7.0, (name, (("le", "+Inf"), ("x", "a"))): 10.0,
             (name, (("le", "0.1"), ("x", "b"))): 1.0, (name, (("le", "+Inf"), ("x", "b"))): 1.0}
    assert measure.bucket_delta(before, after, "lag") == [(0.1, 3.0), (INF, 5.0)]


def test_cpu_seconds_of_a_process_grow_with_its_work() -> None:
    first = measure.sample(os.getpid())
    deadline = first.cpu_seconds + 0.05
    while measure.sample(os.getpid()).cpu_seconds < deadline:
        sum(range(10_000))
    assert measure.sample(os.getpid()).rss_bytes > 1 << 20


@pytest.fixture(scope="module")
def target_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    proc, ready = measure.start([sys.executable, "-m", "benchmarks.targets", "--ports", "2"], ready_line=True)
    assert ready is not None
    yield ready
    assert measure.stop(proc) == 0


def _check(row: dict[str, Any], count: int, interval: float, window: float) -> None:
    expected = count * window / interval
    assert 0.8 * expected <= row["probes"] <= 1.2 * expected, row
    assert row["success_ratio"] == 1.0, row
    assert row["cpu_seconds"] > 0 and row["cpu_ms_per_probe"] > 0, row
    assert row["rss_mb"] > 1, row


@pytest.mark.timeout(60)
def test_our_engine_probes_every_target_in_the_window(target_server: dict[str, Any], tmp_path: Path) -> None:
    urls = targets.target_urls(target_server, 20)
    row = asyncio.run(ours.run(targets=urls, interval=1.0, warmup=1.0, measure_s=3.0, workdir=tmp_path))
    _check(row, 20, 1.0, 3.0)
    assert row["skipped"] == 0 and row["exit_code"] == 0, row
    assert row["lag_p99_s"] is not None, row


@pytest.mark.timeout(60)
@pytest.mark.skipif(shutil.which(blackbox.EXPORTER) is None, reason="prometheus-blackbox-exporter not installed")
def test_blackbox_exporter_probes_every_target_in_the_window(target_server: dict[str, Any], tmp_path: Path) -> None:
    urls = targets.target_urls(target_server, 20)
    row = asyncio.run(blackbox.run(targets=urls, interval=1.0, warmup=1.0, measure_s=3.0, workdir=tmp_path))
    _check(row, 20, 1.0, 3.0)
    assert row["errors"] == 0, row


@pytest.mark.timeout(120)
@pytest.mark.skipif(shutil.which(blackbox.EXPORTER) is None, reason="prometheus-blackbox-exporter not installed")
@pytest.mark.parametrize("scenario", ["tcp", "grpc-tls", "dns"])
def test_protocols_benchmark_probes_every_target_on_both_sides(scenario: str, tmp_path: Path) -> None:
    """Both sides probe the protocol's servers with success (a failing probe costs another CPU)."""
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    rows = asyncio.run(protocols.one(scenario, 20, 1.0, 1.0, 3.0, tmp_path, ca, str(tmp_path / "ca.pem")))
    for row in rows:
        _check(row, 20, 1.0, 3.0)


@pytest.mark.timeout(60)
def test_soak_samples_standalone_and_reports_slopes(tmp_path: Path) -> None:
    out = tmp_path / "soak.json"
    assert soak.main(["--monitors", "20", "--interval", "1s", "--minutes", str(2 / 60), "--sample-every", "1",
                      "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert len(result["samples"]) == 2, result
    for row in result["samples"]:
        assert 10 <= row["probes"] <= 30, row  # 20 monitors, once a second
        assert row["asyncio_tasks"] >= 1 and row["open_fds"] >= 3 and row["threads"] >= 1, row  # idle monitors: timers
        assert row["rss_mib"] > 1 and row["schedule_lag_p99_ms"] is not None, row
    assert set(result["slope_per_minute"]) == {"rss_mib", "open_fds", "threads", "asyncio_tasks"}, result


@pytest.mark.cluster
@pytest.mark.timeout(120)
def test_soak_operator_path_samples_the_operator(cluster: Cluster, target_server: dict[str, Any],
                                                 tmp_path: Path) -> None:
    from benchmarks.soak_operator import NS, operator_soak

    urls = targets.target_urls(target_server, 20)
    with operator_soak(urls, "1s", tmp_path, cluster, ("--namespace", NS)) as soaked:
        rows = soak_sample.sample_run(soaked, 2, 1.0)
    for row in rows:
        assert 10 <= (row["probes"] or 0) <= 30, row
        assert (row["asyncio_tasks"] or 0) >= 1 and row["api_writes"] is not None, row  # idle monitors: timers
        assert row["kube_requests"] is not None, row
