"""Our side: start ``route-monitor standalone`` on generated manifests (or the engine alone,
:mod:`benchmarks.engine_proc`), let it warm up, measure one window.

Probes in the window are the increase of the schedule-lag histogram's count (one observation
per probe started); lag quantiles come from its bucket increases (interpolated like
``histogram_quantile``, so they are only as fine as the buckets). The heavy per-monitor series
are rendered once, after the window's last CPU sample, for the success ratio.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from alert_rules import names
from benchmarks import measure

HEALTH = (names.SCHEDULE_LAG_SECONDS, names.EVENT_LOOP_LAG_SECONDS, names.PROBES_SKIPPED_TOTAL)


def _health_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/metrics?" + "&".join(
        f"name[]={n}{suffix}" for n in HEALTH for suffix in ("_bucket", "_count", "_sum", "_total", ""))


def write_manifests(path: Path, targets: list[str], interval_ms: int, probe: str = "") -> None:
    """One RouteMonitor per target (URL target), all in one multi-document YAML file; ``probe``:
    more ``spec.probe`` fields in flow style (``protocol: tcp, tcp: {...}``)."""
    timeout_ms = min(10_000, interval_ms * 4 // 5)
    docs = (f"apiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {{name: t{i:05d}, namespace: bench}}\n"
            f"spec:\n  target: {{url: '{url}'}}\n  probe: {{interval: {interval_ms}ms, timeout: {timeout_ms}ms"
            f"{', ' + probe if probe else ''}}}\n"
            f"  slo: {{availability: '99.9'}}\n" for i, url in enumerate(targets))
    path.write_text("---\n".join(docs))


def _start_standalone(workdir: Path, targets: list[str], interval: float, ca_file: str | None,
                      max_concurrency: int, root: Path | None = None, probe: str = "",
                      ) -> tuple[subprocess.Popen[str], int]:
    """``route-monitor standalone`` (the product command) on generated manifests; ready when it
    prints where its metrics are, which it does after every monitor is set."""
    manifests = workdir / "monitors.yaml"
    write_manifests(manifests, targets, round(interval * 1000), probe)
    port = measure.free_port()
    log = workdir / "standalone.log"
    env = dict(os.environ, **({"SSL_CERT_FILE": ca_file} if ca_file else {}))
    proc, _ = measure.start([sys.executable, "-m", "route_monitor.cli.main", "standalone", str(manifests),
                             "--metrics-address", f"127.0.0.1:{port}", "--max-concurrency", str(max_concurrency)],
                            env=env, log_path=str(log), cwd=root)
    deadline = time.monotonic() + 120
    while "metrics: http" not in log.read_text():
        if proc.poll() is not None or time.monotonic() > deadline:
            measure.stop(proc)
            raise RuntimeError(f"route-monitor standalone did not start (see {log})")
        time.sleep(0.2)
    return proc, port


def _start_engine(workdir: Path, targets: list[str], interval: float, ca_file: str | None,
                  max_concurrency: int, root: Path | None = None) -> tuple[subprocess.Popen[str], int]:
    urls = workdir / "urls.txt"
    urls.write_text("\n".join(targets) + "\n")
    argv = [sys.executable, "-m", "benchmarks.engine_proc", "--urls", str(urls), "--interval", f"{interval:g}",
            "--max-concurrency", str(max_concurrency)] + (["--ca", ca_file] if ca_file else [])
    proc, ready = measure.start(argv, ready_line=True, log_path=str(workdir / "engine.log"), cwd=root)
    assert ready is not None
    return proc, int(str(ready["metrics_port"]))


def _commit(root: Path) -> str:
    return subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True, check=False).stdout.strip() or root.name


async def run(*, targets: list[str], interval: float, warmup: float, measure_s: float, workdir: Path,
              ca_file: str | None = None, max_concurrency: int = 500, mode: str = "standalone",
              root: Path | None = None, probe: str = "") -> dict[str, Any]:
    """Measure one window of our engine; ``mode`` is ``standalone`` (the product command) or
    ``engine`` (:mod:`benchmarks.engine_proc`, the engine alone). ``root``: run the code of
    another checkout (``run.py --baseline``), default this one."""
    workdir.mkdir(parents=True, exist_ok=True)
    if mode == "standalone":
        proc, port = await asyncio.to_thread(_start_standalone, workdir, targets, interval, ca_file,
                                             max_concurrency, root, probe)
    else:
        proc, port = await asyncio.to_thread(_start_engine, workdir, targets, interval, ca_file, max_concurrency, root)
    try:
        await asyncio.sleep(warmup)
        first = await asyncio.to_thread(measure.scrape, _health_url(port))
        before = measure.sample(proc.pid)
        await asyncio.sleep(measure_s)
        after = measure.sample(proc.pid)
        last = await asyncio.to_thread(measure.scrape, _health_url(port))
        full = await asyncio.to_thread(measure.scrape, f"http://127.0.0.1:{port}/metrics")
    finally:
        code = measure.stop(proc)
    lag = names.SCHEDULE_LAG_SECONDS
    probes = measure.total(last, f"{lag}_count") - measure.total(first, f"{lag}_count")
    buckets = measure.bucket_delta(first, last, lag)
    loop_buckets = measure.bucket_delta(first, last, names.EVENT_LOOP_LAG_SECONDS)
    skipped = measure.total(last, names.PROBES_SKIPPED_TOTAL) - measure.total(first, names.PROBES_SKIPPED_TOTAL)
    ok = measure.total(full, names.PROBES_TOTAL, result=names.RESULT_SUCCESS)
    done = ok + measure.total(full, names.PROBES_TOTAL, result=names.RESULT_FAILURE)
    elapsed = after.at - before.at
    cpu = after.cpu_seconds - before.cpu_seconds
    return {
        "engine": "route-monitor" if root is None else f"route-monitor@{_commit(root)}",
        "mode": mode,
        "probes": int(probes),
        "scheduled_per_s": len(targets) / interval,
        "achieved_per_s": probes / elapsed,
        "success_ratio": ok / done if done else 0.0,
        "skipped": int(skipped),
        "cpu_seconds": cpu,
        "cpu_ms_per_probe": 1000 * cpu / probes if probes else None,
        "probes_per_cpu_second": probes / cpu if cpu else None,
        "cpu_cores_used": cpu / elapsed,
        "lag_p50_s": measure.quantile(0.50, buckets),
        "lag_p99_s": measure.quantile(0.99, buckets),
        "lag_source": f"{lag} (engine histogram)",
        "loop_lag_p99_s": measure.quantile(0.99, loop_buckets),
        "rss_mb": after.rss_bytes / 2**20,
        "window_s": elapsed,
        "exit_code": code,
    }
