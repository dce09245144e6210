"""What the benchmarks measure, and how: process CPU and RSS from ``/proc``, Prometheus text
parsing, and quantiles from histogram bucket deltas (the way ``histogram_quantile`` does it).

Only the measured process is read: CPU is ``utime + stime`` of ``/proc/PID/stat`` (all its
threads), RSS is ``VmRSS`` of ``/proc/PID/status``.
"""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
"""Children run from the repository root, so ``python -m benchmarks.X`` finds this package."""


@dataclass(frozen=True)
class ProcSample:
    at: float
    """Monotonic time of the sample."""
    cpu_seconds: float
    """user + system CPU seconds of the process so far."""
    rss_bytes: int


def sample(pid: int) -> ProcSample:
    with open(f"/proc/{pid}/stat", encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state); utime and stime are fields 14 and 15
    cpu = (int(fields[11]) + int(fields[12])) / CLOCK_TICKS
    rss = 0
    with open(f"/proc/{pid}/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) * 1024
                break
    return ProcSample(at=time.monotonic(), cpu_seconds=cpu, rss_bytes=rss)


Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def scrape(url: str, timeout: float = 60.0) -> Samples:
    """All samples of a /metrics page, keyed by (sample name, sorted labels)."""
    with urllib.request.urlopen(url, timeout=timeout) as resp:
        text = resp.read().decode()
    out: Samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def total(samples: Samples, name: str, **match: str) -> float:
    """Sum of every sample called ``name`` whose labels include ``match``."""
    return sum(v for (n, labels), v in samples.items()
               if n == name and all(dict(labels).get(k) == want for k, want in match.items()))


def bucket_delta(before: Samples, after: Samples, histogram: str) -> list[tuple[float, float]]:
    """Cumulative (le, count) pairs of ``histogram`` observed between two scrapes, summed over series."""
    sums: dict[float, float] = {}
    for (n, labels), v in after.items():
        if n == f"{histogram}_bucket":
            le = float(dict(labels)["le"])
            sums[le] = sums.get(le, 0.0) + v - before.get((n, labels), 0.0)
    return sorted(sums.items())


def quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float | None:
    """``histogram_quantile``: linear interpolation inside the bucket holding rank q*count."""
    if not buckets or buckets[-1][1] <= 0:
        return None
    count = buckets[-1][1]
    rank = q * count
    lower_le, lower_count = 0.0, 0.0
    for le, c in buckets:
        if c >= rank:
            if math.isinf(le):
                return lower_le  # above the highest finite bucket: report its bound (a floor)
            if c == lower_count:
                return le
            return lower_le + (le - lower_le) * (rank - lower_count) / (c - lower_count)
        lower_le, lower_count = le, c
    return buckets[-1][0]


def percentile(values: Sequence[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def start(argv: Sequence[str], *, env: Mapping[str, str] | None = None, ready_line: bool = False,
          log_path: str | None = None, cwd: str | os.PathLike[str] | None = None,
          ) -> tuple[subprocess.Popen[str], dict[str, object] | None]:
    """Start a child (in ``cwd``, default the repository root: ``python -m`` imports from there);
    with ``ready_line`` wait for its first stdout line (JSON) and return it."""
    log = open(log_path or os.devnull, "w")  # noqa: SIM115 - closed with the process
    nice = int(os.environ.get("BENCH_NICE", "0"))  # set by `run.py --nice`; inherited by every thread
    proc = subprocess.Popen(list(argv), stdout=subprocess.PIPE if ready_line else log, stderr=log,
                            text=True, env=dict(env) if env is not None else None, cwd=cwd or REPO,
                            preexec_fn=(lambda: os.setpriority(os.PRIO_PROCESS, 0, nice)) if nice else None)
    ready = None
    if ready_line:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            raise RuntimeError(f"{argv[0]} exited before it was ready (see {log_path})")
        ready = json.loads(line)
    return proc, ready


def stop(proc: subprocess.Popen[str], timeout: float = 10.0) -> int:
    """SIGTERM this one process (by its pid), then SIGKILL if it does not exit in time."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_http(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
