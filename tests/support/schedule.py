"""Longest modules first, and one CPU-bound module at a time, when the suite runs in parallel
(pytest-xdist, ``--dist loadfile``).

Most of the suite's time is spent waiting in a few end-to-end modules (real Prometheus,
Alertmanager and control plane); whole modules go to one worker each (their module fixtures
start those components once), so the wall time is at least the longest module, and a long
module handed out last makes a long tail while the other workers sit idle. Handing modules out
longest first (the classic LPT rule) keeps the tail short. A few modules instead keep the CPU
busy (promtool over hundreds of rules, backfilled TSDB blocks): two of them at once on two
cores each take twice as long and run into their timeouts, while a waiting module beside them
costs them little.

- :func:`pytest_collection_modifyitems` (on xdist workers only: a plain ``pytest tests/x.py``
  keeps the file's order) sorts modules by the recorded wall time in ``tests/durations.json``,
  longest first; a module not in the table counts as the longest (a new slow module is not
  left to the end; a new quick one costs nothing up front);
- :class:`OneModuleAhead` hands a worker its next module only when it has run all but the test
  it holds back (an xdist worker keeps one test until it knows the next one), instead of
  xdist's default of queueing another module while two tests remain: a worker finishing a
  five-minute module must not already own the next long one while another worker is idle. It
  skips a CPU-bound module (at least ``CPU_BOUND`` recorded CPU seconds) while another
  worker runs one, unless nothing else is left;
- ``RM_RECORD_DURATIONS=tests/durations.json bash scripts/test.sh`` rewrites the table from the
  run (per module: wall and CPU seconds of setup, call and teardown of every test, the CPU of
  the worker and of the processes it started and waited for), keeping modules not run.
"""

from __future__ import annotations

import json
import os
import resource
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling
from xdist.workermanage import WorkerController

DURATIONS = Path(__file__).resolve().parent.parent / "durations.json"
CPU_BOUND = 50.0
"""A module needing at least this many CPU seconds is CPU-bound: CPU seconds are what a module
needs whatever the machine's load (contention stretches its wall time, not its CPU time), where
a share of the wall time is not (a module starved on a loaded machine looks idle)."""

_wall: defaultdict[str, float] = defaultdict(float)
_cpu: defaultdict[str, float] = defaultdict(float)
_last_cpu = [0.0]


def _module(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def recorded() -> dict[str, tuple[float, float]]:
    """module -> (wall seconds, CPU seconds) from the table; {} when there is none."""
    try:
        table = json.loads(DURATIONS.read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {str(m): (float(v[0]), float(v[1])) for m, v in table.items() if isinstance(v, list) and len(v) == 2}


def cpu_bound(table: dict[str, tuple[float, float]]) -> set[str]:
    return {m for m, (_, cpu) in table.items() if cpu >= CPU_BOUND}


def longest_first(items: list[pytest.Item], table: dict[str, tuple[float, float]]) -> list[pytest.Item]:
    """``items`` grouped by module, modules by recorded wall time (unknown first), stable within."""
    unknown = max((wall for wall, _ in table.values()), default=0.0) + 1.0
    first_seen: dict[str, int] = {}
    for item in items:
        first_seen.setdefault(_module(item.nodeid), len(first_seen))

    def key(item: pytest.Item) -> tuple[float, int]:
        module = _module(item.nodeid)
        return -table.get(module, (unknown, 0.0))[0], first_seen[module]

    return sorted(items, key=key)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if hasattr(config, "workerinput"):
        items[:] = longest_first(items, recorded())


class OneModuleAhead(LoadFileScheduling):
    """``--dist loadfile`` in the collection's order (already longest first), a worker getting
    its next module once only its held-back test is left, one CPU-bound module at a time."""

    def __init__(self, config: pytest.Config, log: Any = None,
                 table: dict[str, tuple[float, float]] | None = None) -> None:
        config.option.loadscopereorder = False  # xdist's own order is by number of tests
        super().__init__(config, log)
        self.cpu_bound = cpu_bound(recorded() if table is None else table)

    def _busy_with_cpu_bound(self, node: WorkerController) -> bool:
        return any(scope in self.cpu_bound and not all(tests.values())
                   for other, work in self.assigned_work.items() if other is not node
                   for scope, tests in work.items())

    def _assign_work_unit(self, node: WorkerController) -> None:
        if self._busy_with_cpu_bound(node):
            waiting = next((scope for scope in self.workqueue if scope not in self.cpu_bound), None)
            if waiting is not None:
                self.workqueue.move_to_end(waiting, last=False)
        super()._assign_work_unit(node)

    def _reschedule(self, node: WorkerController) -> None:
        if node.shutting_down:
            return
        if not self.workqueue:
            node.shutdown()
            return
        if self._pending_of(self.assigned_work[node]) <= 1:
            self._assign_work_unit(node)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> OneModuleAhead | None:
    return OneModuleAhead(config, log) if config.getoption("dist") == "loadfile" else None


def _cpu_now() -> float:
    own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Each report carries the CPU seconds used since the previous one (``cpu_s``; xdist sends a
    report's extra attributes to the controller)."""
    outcome = yield
    now = _cpu_now()
    report = outcome.get_result()
    report.cpu_s = round(now - _last_cpu[0], 3)
    _last_cpu[0] = now


def pytest_collection_finish(session: pytest.Session) -> None:
    _last_cpu[0] = _cpu_now()  # the first test's CPU without the collection's


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    module = _module(report.nodeid)
    _wall[module] += report.duration
    _cpu[module] += float(getattr(report, "cpu_s", 0.0))


def pytest_sessionfinish(session: pytest.Session) -> None:
    out = os.environ.get("RM_RECORD_DURATIONS")
    if not out or hasattr(session.config, "workerinput") or not _wall:
        return
    table = {**recorded(), **{m: (round(_wall[m], 1), round(_cpu[m], 1)) for m in _wall}}
    ordered = dict(sorted(table.items(), key=lambda kv: (-kv[1][0], kv[0])))
    Path(out).write_text("{\n" + ",\n".join(f" {json.dumps(m)}: [{w}, {c}]" for m, (w, c) in ordered.items())
                         + "\n}\n")
