"""The per-probe decision "does this result count?" (Contract 9), on fake time.

Covers: warm-up excludes failures until the first success (which counts) or until it has
passed; a success during a window or a pause ends warm-up; precedence paused > maintenance >
warm-up; windows evaluated only when a boundary passes (no cron per probe); a changed policy
keeps the warm-up state; and through the engine with real loopback targets: excluded results
go to ``route_monitor_probes_excluded_total{reason}`` and never to ``probes_total`` or
``probe_failures_total``, ``route_monitor_maintenance`` is 1 during a window or pause,
``on_result`` sees ``excluded``, warm-up restarts when the URL changes and not otherwise.
"""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from alert_rules import names
from route_monitor.probe import gate as gate_module
from route_monitor.probe.gate import Gate, Policy
from route_monitor.probe.result import Exclusion
from route_monitor.spec.maintenance import CronWindow, OneOffWindow
from route_monitor.spec.monitor import MonitorSpec, ProbeSettings, UrlTarget
from route_monitor.targets.resolve import ResolvedTarget
from tests.support import servers
from tests.support.engine import ResultsEngine
from tests.support.servers import Targets, status

targets = servers.targets
T0 = 1_800_000_000.0  # 2027-01-15T08:00:00Z, a Friday
W, M, P = Exclusion.WARMUP, Exclusion.MAINTENANCE, Exclusion.PAUSED


def run(gate: Gate, outcomes: str, *, start: float = T0, step: float = 60) -> list[Exclusion | None]:
    """'.' = success, 'x' = failure, one probe every ``step`` seconds from ``start``."""
    return [gate.decide(start + i * step, c == ".") for i, c in enumerate(outcomes)]


@pytest.mark.parametrize(("policy", "outcomes", "expected"), [
    pytest.param(Policy(warmup_seconds=600), "xxx.x", [W, W, W, None, None], id="first-success-counts-and-ends-warmup"),
    pytest.param(Policy(warmup_seconds=600), "x" * 12, [W] * 10 + [None, None], id="warmup-ends-when-it-has-passed"),
    pytest.param(Policy(warmup_seconds=0), "xx", [None, None], id="zero-turns-it-off"),
    pytest.param(Policy(paused=True, warmup_seconds=600), "x.x", [P, P, P], id="paused-excludes-everything"),
    pytest.param(Policy((OneOffWindow(T0, T0 + 120),), warmup_seconds=600), "x.xx", [M, M, None, None],
                 id="success-in-a-window-ends-warmup"),
    pytest.param(Policy((OneOffWindow(T0 + 60, T0 + 180),), warmup_seconds=0), ".xxx.", [None, M, M, None, None],
                 id="window-is-half-open"),
    pytest.param(Policy((OneOffWindow(T0, T0 + 600),), paused=True), "x", [P], id="paused-wins-over-maintenance"),
])
def test_decisions(policy: Policy, outcomes: str, expected: list[Exclusion | None]) -> None:
    gate = Gate(policy, warming_since=T0 if policy.warmup_seconds else None)
    assert run(gate, outcomes) == expected


def test_windows_are_evaluated_only_when_a_boundary_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    real = gate_module.state_at
    monkeypatch.setattr(gate_module, "state_at", lambda ws, t: calls.append(t) or real(ws, t))
    gate = Gate(Policy((CronWindow("0 9 * * *", 3_600_000),)), warming_since=None)
    decisions = run(gate, "." * 240, step=30)  # 08:00 to 10:00 every 30s
    assert decisions == [None] * 120 + [M] * 120
    assert calls == [T0, T0 + 3600]  # at the first probe and when the window starts


def test_changed_policy_keeps_warmup_state() -> None:
    gate = Gate(Policy(warmup_seconds=600), warming_since=T0)
    assert gate.decide(T0, False) is W
    longer = gate.with_policy(Policy(warmup_seconds=1200))
    assert longer.decide(T0 + 900, False) is W and longer.decide(T0 + 1200, False) is None
    gate.decide(T0 + 60, True)
    assert gate.with_policy(Policy(warmup_seconds=1200)).decide(T0 + 120, False) is None


# --- through the engine ---------------------------------------------------------------------

def spec_for(url: str, **changes: object) -> tuple[MonitorSpec, ResolvedTarget]:
    spec = MonitorSpec("shop", "web", UrlTarget(url), probe=ProbeSettings(interval_ms=250, timeout_ms=200))
    return replace(spec, **changes), ResolvedTarget(url, "url", "")  # type: ignore[arg-type]


@pytest.fixture
async def eng() -> ResultsEngine:
    e = ResultsEngine()
    await e.engine.start()
    yield e  # type: ignore[misc]
    await e.engine.close()


async def test_failures_during_warmup_are_excluded_and_never_counted(eng: ResultsEngine, targets: Targets) -> None:
    eng.engine.set_monitor(*spec_for(targets.http(status(503))))
    results = await eng.probes(3)
    assert {r.excluded for r in results} == {W}
    assert eng.value(names.PROBES_EXCLUDED_TOTAL, reason="warmup") >= 3
    assert eng.value(names.PROBES_TOTAL, result="failure") == 0 and eng.value(names.PROBES_TOTAL, result="success") == 0
    assert eng.value(names.PROBE_FAILURES_TOTAL, reason="http_status") is None
    assert eng.value(names.PROBE_SUCCESS) == 0 and eng.value(names.MAINTENANCE) == 0


async def test_maintenance_window_excludes_successes_too_and_sets_the_gauge(eng: ResultsEngine, targets: Targets) -> None:
    now = time.time()
    eng.engine.set_monitor(*spec_for(targets.http(), maintenance=(OneOffWindow(now - 60, now + 3600),)))
    results = await eng.probes(3)
    assert {r.excluded for r in results} == {M} and all(r.success for r in results)
    assert eng.value(names.PROBES_EXCLUDED_TOTAL, reason="maintenance") >= 3
    assert eng.value(names.PROBES_TOTAL, result="success") == 0
    assert eng.value(names.MAINTENANCE) == 1
    # the window is removed: results count again, the gauge drops (warm-up ended with the first success)
    eng.engine.set_monitor(*spec_for(targets.http()))
    await eng.probes(3)
    assert eng.value(names.PROBES_TOTAL, result="success") >= 2 and eng.value(names.MAINTENANCE) == 0


async def test_warmup_restarts_when_the_url_changes_and_not_otherwise(eng: ResultsEngine, targets: Targets) -> None:
    up, down = targets.http(), targets.http(status(503))
    eng.engine.set_monitor(*spec_for(up))
    assert (await eng.probes(1))[0].excluded is None  # first success: warm-up over
    eng.engine.set_monitor(*spec_for(down))  # a new URL: warming up again
    await eng.probes(1)
    assert {r.excluded for r in await eng.probes(2)} == {W}
    eng.engine.set_monitor(*spec_for(down, alerting=replace(spec_for(down)[0].alerting, page=False)))
    assert {r.excluded for r in await eng.probes(2)} == {W}  # same URL, other change: still warming
    eng.engine.remove_monitor(("shop", "web"))  # a monitor created an hour ago (operator restart) does not warm up
    eng.engine.set_monitor(*spec_for(down, created=time.time() - 3600))
    assert {r.excluded for r in await eng.probes(2)} == {None}
    assert eng.value(names.PROBES_TOTAL, result="failure") >= 2
