"""Our side: start :mod:`benchmarks.engine_proc`, let it warm up, measure one window.

Probes in the window are the increase of the schedule-lag histogram's count (one observation
per probe started); lag quantiles come from its bucket increases (interpolated like
``histogram_quantile``, so they are only as fine as the buckets). The heavy per-monitor series
are rendered once, after the window's last CPU sample, for the success ratio.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

from alert_rules import names
from benchmarks import measure

HEALTH = (names.SCHEDULE_LAG_SECONDS, names.EVENT_LOOP_LAG_SECONDS, names.PROBES_SKIPPED_TOTAL)


def _health_url(port: int) -> str:
    return f"http://127.0.0.1:{port}/metrics?" + "&".join(
        f"name[]={n}{suffix}" for n in HEALTH for suffix in ("_bucket", "_count", "_sum", "_total", ""))


async def run(*, targets: list[str], interval: float, warmup: float, measure_s: float, workdir: Path,
              ca_file: str | None = None, max_concurrency: int = 500) -> dict[str, Any]:
    workdir.mkdir(parents=True, exist_ok=True)
    urls = workdir / "urls.txt"
    urls.write_text("\n".join(targets) + "\n")
    argv = [sys.executable, "-m", "benchmarks.engine_proc", "--urls", str(urls), "--interval", f"{interval:g}",
            "--max-concurrency", str(max_concurrency)] + (["--ca", ca_file] if ca_file else [])
    proc, ready = await asyncio.to_thread(measure.start, argv, ready_line=True, log_path=str(workdir / "engine.log"))
    assert ready is not None
    port = int(str(ready["metrics_port"]))
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
        "engine": "route-monitor",
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
