"""What the soak samples every minute from one running process, and the slopes over the run.

A sample reads the process from outside (``/proc/PID``: RSS, threads, open fds) and from its own
/metrics (asyncio tasks alive, the probes done since the previous sample, the schedule-lag and
event-loop-lag p99 over that minute from the histograms' bucket increases), plus anything the
caller counts on the side (``Soaked.counters``: cumulative counters, reported per minute, e.g.
the apiserver's writes for the operator path) and the machine's 1-minute load average.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from alert_rules import names
from benchmarks import measure

FLAT_SERIES = ("rss_mib", "open_fds", "threads", "asyncio_tasks")
"""The series whose slope the soak reports: each should be flat once the process is steady."""

Row = dict[str, float | None]


@dataclass(frozen=True)
class Soaked:
    """A process under soak: its pid and /metrics URL, and cumulative side counters."""

    pid: int
    metrics_url: str
    counters: Callable[[], dict[str, float]] = field(default=lambda: {})


def proc_counts(pid: int) -> tuple[int, int]:
    """(threads, open file descriptors) of the process."""
    threads = 0
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
    return threads, len(os.listdir(f"/proc/{pid}/fd"))


def slope(xs: list[float], ys: list[float]) -> float | None:
    """Least-squares slope of ys over xs (per unit of x), None with fewer than two points."""
    if len(xs) < 2:
        return None
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    den = sum((x - mx) ** 2 for x in xs)
    return None if den == 0 else sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / den


def slopes(rows: list[Row]) -> dict[str, float | None]:
    """Per-minute slope of each of :data:`FLAT_SERIES` over the samples."""
    xs = [float(r["minute"] or 0) for r in rows]
    out = {}
    for key in FLAT_SERIES:
        s = slope(xs, [float(r[key] or 0) for r in rows])
        out[key] = None if s is None else round(s, 4) + 0.0  # no -0.0
    return out


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 1)


def row(soaked: Soaked, minute: float, before: measure.Samples, after: measure.Samples,
        side_before: dict[str, float], side_after: dict[str, float]) -> Row:
    threads, fds = proc_counts(soaked.pid)
    out: Row = {
        "minute": round(minute, 2),
        "rss_mib": round(measure.sample(soaked.pid).rss_bytes / 2**20, 1),
        "open_fds": fds, "threads": threads,
        "asyncio_tasks": measure.total(after, names.ASYNCIO_TASKS),
        "probes": measure.total(after, names.PROBES_TOTAL) - measure.total(before, names.PROBES_TOTAL),
        "schedule_lag_p99_ms": _ms(measure.quantile(0.99, measure.bucket_delta(
            before, after, names.SCHEDULE_LAG_SECONDS))),
        "loop_lag_p99_ms": _ms(measure.quantile(0.99, measure.bucket_delta(
            before, after, names.EVENT_LOOP_LAG_SECONDS))),
        "load1": round(os.getloadavg()[0], 2),
    }
    if any(n == names.KUBE_REQUESTS_TOTAL for n, _ in after):  # the operator's own API requests
        out["kube_requests"] = measure.total(after, names.KUBE_REQUESTS_TOTAL) - measure.total(
            before, names.KUBE_REQUESTS_TOTAL)
    for key, value in side_after.items():
        out[key] = value - side_before.get(key, 0.0)
    return out


def sample_run(soaked: Soaked, samples: int, every: float,
               on_row: Callable[[Row], None] = lambda _: None) -> list[Row]:
    """``samples`` rows, one each ``every`` seconds from now (a fixed grid: a slow scrape does not
    shift the next sample); minute 0 is now."""
    rows: list[Row] = []
    t0 = time.monotonic()
    before, side_before = measure.scrape(soaked.metrics_url), soaked.counters()
    for k in range(1, samples + 1):
        time.sleep(max(0.0, t0 + k * every - time.monotonic()))
        minute = (time.monotonic() - t0) / 60
        after, side_after = measure.scrape(soaked.metrics_url), soaked.counters()
        rows.append(row(soaked, minute, before, after, side_before, side_after))
        on_row(rows[-1])
        before, side_before = after, side_after
    return rows
