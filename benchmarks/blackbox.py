"""The peer: Debian's ``prometheus-blackbox-exporter`` probing the same targets at the same rate,
driven by :mod:`benchmarks.loadgen`. Only the exporter's CPU and RSS are measured.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path
from typing import Any

from benchmarks import loadgen, measure

EXPORTER = "/usr/bin/prometheus-blackbox-exporter"


def write_config(path: Path, *, timeout_s: float, ca_file: str | None) -> None:
    """One ``http_2xx`` module: GET, 2xx expected, IPv4, TLS verified against ``ca_file`` if given."""
    tls = f"\n      tls_config:\n        ca_file: {ca_file}" if ca_file else ""
    path.write_text(
        "modules:\n"
        "  http_2xx:\n"
        "    prober: http\n"
        f"    timeout: {timeout_s:g}s\n"
        "    http:\n"
        "      method: GET\n"
        "      preferred_ip_protocol: ip4\n"
        "      ip_protocol_fallback: false\n"
        "      no_follow_redirects: false" + tls + "\n"
    )


def available() -> bool:
    return shutil.which(EXPORTER) is not None


async def run(*, targets: list[str], interval: float, warmup: float, measure_s: float, workdir: Path,
              ca_file: str | None = None, timeout_s: float = 10.0, module: str = "http_2xx",
              config_text: str | None = None, trust: str = "module") -> dict[str, Any]:
    """Start the exporter, drive it for ``warmup + measure_s`` seconds, measure the window;
    ``config_text``/``module``: another module than ``http_2xx`` (the protocols benchmark).

    ``trust``: ``module`` gives ``ca_file`` in the module's ``tls_config`` (which the exporter
    reads again for every probe: it builds an HTTP client per probe); ``env`` gives it as
    ``SSL_CERT_FILE`` instead, Go's system pool, loaded once, as a deployment that trusts its CA
    through the system store does (and as ``route-monitor`` is given it)."""
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "blackbox.yml"
    if config_text is None:
        write_config(config, timeout_s=min(timeout_s, interval * 0.9), ca_file=ca_file if trust == "module" else None)
    else:
        config.write_text(config_text)
    port = measure.free_port()
    proc, _ = measure.start([EXPORTER, f"--config.file={config}", f"--web.listen-address=127.0.0.1:{port}",
                             "--log.level=warn"], log_path=str(workdir / "blackbox.log"),
                            env=dict(os.environ, SSL_CERT_FILE=ca_file) if trust == "env" and ca_file else None)
    try:
        await asyncio.to_thread(measure.wait_http, f"http://127.0.0.1:{port}/metrics", 30.0)
        stats = loadgen.LoadStats()
        driver = asyncio.create_task(loadgen.drive(exporter=("127.0.0.1", port), targets=targets,
                                                   interval=interval, duration=warmup + measure_s, stats=stats,
                                                   module=module))
        await asyncio.sleep(warmup)
        stats.reset()
        before = measure.sample(proc.pid)
        await asyncio.sleep(measure_s)
        after = measure.sample(proc.pid)
        window = loadgen.LoadStats(sent=stats.sent, answered=stats.answered, succeeded=stats.succeeded,
                                   errors=stats.errors, latencies=list(stats.latencies), late=list(stats.late))
        await driver
    finally:
        measure.stop(proc)
    elapsed = after.at - before.at
    cpu = after.cpu_seconds - before.cpu_seconds
    probes = window.answered
    return {
        "engine": "blackbox_exporter",
        "trust": trust,
        "probes": probes,
        "scheduled_per_s": len(targets) / interval,
        "achieved_per_s": probes / elapsed,
        "success_ratio": window.succeeded / probes if probes else 0.0,
        "errors": window.errors,
        "cpu_seconds": cpu,
        "cpu_ms_per_probe": 1000 * cpu / probes if probes else None,
        "probes_per_cpu_second": probes / cpu if cpu else None,
        "cpu_cores_used": cpu / elapsed,
        "lag_p50_s": None,  # the exporter has no schedule: the load generator's is reported apart
        "lag_p99_s": None,
        "loadgen_lag_p99_s": measure.percentile(window.late, 0.99),
        "latency_p50_s": measure.percentile(window.latencies, 0.50),
        "latency_p99_s": measure.percentile(window.latencies, 0.99),
        "latency_source": "request written -> answer read (the exporter's queueing + the probe)",
        "rss_mb": after.rss_bytes / 2**20,
        "window_s": elapsed,
    }
