"""A real Prometheus holding weeks of synthetic probe history, backfilled the way a user would:

1. counters (and any other series) written as OpenMetrics and turned into TSDB blocks with
   ``promtool tsdb create-blocks-from openmetrics``;
2. the generator's own recording rules (a chosen subset) evaluated over that history by
   ``promtool tsdb create-blocks-from rules`` against a Prometheus serving the counters;
3. both sets of blocks served by a Prometheus with a long retention, on a port that stays the
   same across :meth:`HistoryPrometheus.stop` / :meth:`HistoryPrometheus.start` (a Prometheus
   that goes away and comes back).

A :class:`Counter` describes one monitor's probes as increments per sample step, so a test can
compute the expected numbers by hand from the same description.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.support.net import free_port, wait_for
from tests.support.prometheus import PROMETHEUS_BIN, stop
from tests.support.promtool import require

Increments = Callable[[int], tuple[int, int]]
"""Epoch second -> (successful, failed) probes counted at that sample."""


@dataclass(frozen=True)
class Counter:
    """``route_monitor_probes_total`` of one monitor, sampled every ``step`` seconds in [start, end]."""

    namespace: str
    monitor: str
    start: int
    end: int
    step: int
    increments: Increments
    resets: frozenset[int] = frozenset()
    """Sample times at which the prober restarted: both counters start again from that sample's increments."""
    location: str | None = None
    """The series' ``location`` label (a monitor of several vantages has one counter per location)."""

    def times(self) -> range:
        return range(self.start, self.end + 1, self.step)

    def values(self) -> Iterator[tuple[int, int, int]]:
        """(time, success counter, failure counter) at every sample."""
        ok = bad = 0
        for t in self.times():
            good, failed = self.increments(t)
            if t in self.resets:
                ok = bad = 0
            ok, bad = ok + good, bad + failed
            yield t, ok, bad

    def counted(self, start: int, end: int) -> tuple[int, int]:
        """(all, failed) probes counted by samples in (start, end]: what ``increase`` over
        [start, end] sees when both ends are sample times."""
        total = failed = 0
        for t in self.times():
            if start < t <= end:
                good, bad = self.increments(t)
                total, failed = total + good + bad, failed + bad
        return total, failed


@dataclass(frozen=True)
class Gauge:
    name: str
    labels: dict[str, str]
    start: int
    end: int
    step: int
    value: float = 1.0


def _labels(labels: dict[str, str]) -> str:
    return "{" + ",".join(f'{k}="{v}"' for k, v in sorted(labels.items())) + "}"


def openmetrics(counters: Sequence[Counter], gauges: Sequence[Gauge], chunk: int = 4 * 86_400) -> dict[int, str]:
    """OpenMetrics texts by ``chunk`` of time: promtool 2.42 reads its whole input once per 2h
    block it writes, so weeks of history go in one file per few days."""
    lines: dict[int, list[str]] = {}
    for c in counters:  # one series after the other; samples in time order
        for result, index in (("success", 1), ("failure", 2)):
            where = {} if c.location is None else {"location": c.location}
            sel = _labels({"namespace": c.namespace, "monitor": c.monitor, "result": result, **where})
            for v in c.values():
                lines.setdefault(v[0] // chunk, []).append(f"route_monitor_probes_total{sel} {v[index]} {v[0]}")
    for g in gauges:
        sel = _labels(g.labels)
        for t in range(g.start, g.end + 1, g.step):
            lines.setdefault(t // chunk, []).append(f"{g.name}{sel} {g.value} {t}")
    return {k: "\n".join([*v, "# EOF", ""]) for k, v in sorted(lines.items())}


def _promtool(*args: str, cwd: Path) -> None:
    proc = subprocess.run([require(), *args], cwd=cwd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        raise RuntimeError(f"promtool {' '.join(args[:3])} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")


@dataclass
class HistoryPrometheus:
    workdir: Path
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def data(self) -> Path:
        return self.workdir / "data"

    def start(self) -> None:
        config = self.workdir / "prometheus.yml"
        config.write_text(yaml.safe_dump({"global": {"scrape_interval": "1m", "evaluation_interval": "1m"}}))
        log = open(self.workdir / "prometheus.log", "ab")  # noqa: SIM115 - owned by the process
        self.proc = subprocess.Popen(
            [PROMETHEUS_BIN, f"--config.file={config}", f"--storage.tsdb.path={self.data}",
             f"--web.listen-address=127.0.0.1:{self.port}", "--storage.tsdb.retention.time=10y",
             # hundreds of backfilled 2h blocks are served as they are: no compaction (it took a
             # sixth of this fixture's CPU, while the rules were backfilled and the tests ran)
             "--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h",
             "--log.level=warn"], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()

        def ready() -> bool:
            assert self.proc is not None
            if self.proc.poll() is not None:
                raise RuntimeError(f"prometheus exited: {(self.workdir / 'prometheus.log').read_text()[-3000:]}")
            return httpx.get(f"{self.url}/-/ready", timeout=1).status_code == 200

        wait_for(ready, timeout=60, what="prometheus with backfilled history")

    def stop(self) -> None:
        if self.proc is not None:
            stop(self.proc)
            self.proc = None

    def query(self, expr: str, at: float | None = None) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"query": expr, **({"time": at} if at is not None else {})}
        body = httpx.get(f"{self.url}/api/v1/query", params=params, timeout=30).json()
        assert body["status"] == "success", body
        result: list[dict[str, Any]] = body["data"]["result"]
        return result


@dataclass(frozen=True)
class RuleBackfill:
    """Rule groups evaluated over [start, end] (each group at its own interval, else every 60s)."""

    groups: Sequence[dict[str, Any]]
    start: int
    end: int


@contextmanager
def backfilled(workdir: Path, *, counters: Sequence[Counter], gauges: Sequence[Gauge] = (),
               rules: Sequence[RuleBackfill] = ()) -> Iterator[HistoryPrometheus]:
    """Prometheus serving ``counters``/``gauges`` and the recording ``rules`` evaluated over them,
    one job after the other: a job's records are served before the next job runs (so it may read them)."""
    workdir.mkdir(parents=True, exist_ok=True)
    for chunk, text in openmetrics(counters, gauges).items():
        (workdir / f"history-{chunk}.om").write_text(text)
        _promtool("tsdb", "create-blocks-from", "openmetrics", f"history-{chunk}.om", "data", cwd=workdir)
    prom = HistoryPrometheus(workdir)
    try:
        if rules:
            prom.start()
            for i, job in enumerate(rules):
                if i:
                    prom.start()
                name = f"backfill-rules-{i}.yml"
                (workdir / name).write_text(yaml.safe_dump({"groups": list(job.groups)}, sort_keys=False))
                _promtool("tsdb", "create-blocks-from", "rules", f"--url={prom.url}", f"--start={job.start}",
                          f"--end={job.end}", f"--output-dir=recorded-{i}", "--eval-interval=60s", name, cwd=workdir)
                prom.stop()
                for block in (workdir / f"recorded-{i}").iterdir():
                    if block.is_dir():
                        shutil.move(str(block), prom.data / block.name)
        prom.start()
        yield prom
    finally:
        prom.stop()
