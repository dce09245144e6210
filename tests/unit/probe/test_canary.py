"""The canary and the ``blind`` exclusion (Contract 11).

Pure and on fake time (looptime), with a scripted prober:
- a canary fails only for a network reason; any answer (500, a bad certificate) means the
  network works; blind from the first failing check until three successes in a row;
- a probe's network failure is judged by a check that started no earlier than the probe and at
  most 5 s before the decision: a fresh enough failing check decides at once; an older one, or
  one from before the probe started, is followed by a new check (shared by every probe waiting,
  at most one every ``min_gap``); a first success after a failure leaves the member blind, so a
  probe that failed just before the network came back is excluded too;
Through the real engine, with loopback targets (a refused port is what a cut network looks like
to both):
- a target failing for a network reason while the canary is refused too: excluded as ``blind``
  (``route_monitor_probes_excluded_total``), never in ``probes_total`` or ``probe_failures_total``,
  not a maintenance; ``route_monitor_prober_blind`` is 1;
- the same failure with the canary up counts; an HTTP 503 counts even while the canary is down;
- a canary that connects but answers late (a busy kube-apiserver) does not make the member blind.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from prometheus_client import CollectorRegistry

from alert_rules import names
from route_monitor.probe.canary import Canary, CanarySettings, CanaryState, blind_gauge, canary_failed, unreachable
from route_monitor.probe.prober import Prober, ProbeRequest
from route_monitor.probe.result import Exclusion, FailureReason, ProbeResult
from route_monitor.spec.monitor import MonitorSpec, ProbeSettings, UrlTarget
from route_monitor.targets.resolve import ResolvedTarget
from tests.support import servers
from tests.support.engine import ResultsEngine
from tests.support.servers import Targets, hang, status

targets = servers.targets
R = FailureReason


def outcome(reason: FailureReason | None) -> ProbeResult:
    return ProbeResult(("", "canary"), "https://10.96.0.1:443/readyz", 0.0, reason is None, reason, 0.01, None,
                       "scripted")


@pytest.mark.parametrize(("reason", "fails"), [
    *(pytest.param(r, True, id=r.value) for r in (R.DNS_ERROR, R.CONNECTION_REFUSED, R.CONNECTION_TIMEOUT,
                                                  R.TIMEOUT, R.TLS_ERROR)),
    *(pytest.param(r, False, id=f"{r.value}-is-an-answer") for r in (
        R.HTTP_STATUS, R.CERTIFICATE_INVALID, R.BODY_MISMATCH, R.PROTOCOL_ERROR, R.TOO_MANY_REDIRECTS, R.OTHER)),
    pytest.param(None, False, id="success"),
])
def test_only_network_reasons_make_the_canary_fail(reason: FailureReason | None, fails: bool) -> None:
    assert unreachable(outcome(reason)) is fails


@pytest.mark.parametrize(("reason", "connected", "fails"), [
    pytest.param(R.TIMEOUT, True, False, id="answer-late-after-connecting"),
    pytest.param(R.CONNECTION_TIMEOUT, True, False, id="tls-handshake-late-after-connecting"),
    pytest.param(R.CONNECTION_TIMEOUT, False, True, id="no-connection"),
    pytest.param(R.CONNECTION_REFUSED, False, True, id="refused"),
    pytest.param(R.DNS_ERROR, False, True, id="dns"),
])
def test_the_canary_fails_only_before_a_connection_is_made(reason: FailureReason, connected: bool,
                                                           fails: bool) -> None:
    phases = (0.0, 0.004 if connected else 0.0, 0.0, 0.0, 0.0)
    assert canary_failed(replace(outcome(reason), phases=phases)) is fails


@pytest.mark.parametrize(("checks", "blind"), [
    pytest.param("...", [False] * 3, id="seeing"),
    pytest.param("x", [True], id="one-failure-blinds"),
    pytest.param("x...", [True, True, True, False], id="three-successes-in-a-row-recover"),
    pytest.param("x..x...", [True, True, True, True, True, True, False], id="a-failure-restarts-the-count"),
])
def test_blind_from_a_failure_until_three_successes_in_a_row(checks: str, blind: list[bool]) -> None:
    state, seen = CanaryState(), []
    for i, c in enumerate(checks):
        state = state.after(float(i), outcome(None if c == "." else R.CONNECTION_TIMEOUT), 3)
        seen.append(state.blind)
        assert state.failing is (c == "x") and state.started == float(i)
    assert seen == blind


class ScriptedProber:
    """Answers each check after ``takes`` seconds with the next outcome (the last one repeats)."""

    def __init__(self, script: list[FailureReason | None], takes: float = 0.01) -> None:
        self.script, self.takes = script, takes
        self.checks: list[float] = []

    def request(self, key: tuple[str, str], url: str, settings: ProbeSettings, credentials: object = None) -> object:
        return ProbeRequest.build(key, url, settings)

    async def probe(self, request: object) -> ProbeResult:
        self.checks.append(asyncio.get_running_loop().time())
        await asyncio.sleep(self.takes)
        reason = self.script.pop(0) if len(self.script) > 1 else self.script[0]
        return outcome(reason)


def canary_with(prober: ScriptedProber, **settings: float) -> Canary:
    loop = asyncio.get_running_loop()
    return Canary(replace(CanarySettings(url="https://10.96.0.1:443/readyz"), **settings),  # type: ignore[arg-type]
                  prober=prober, clock=loop.time)  # type: ignore[arg-type]


@pytest.mark.looptime
async def test_a_fresh_failing_check_started_after_the_probe_decides_at_once() -> None:
    prober = ScriptedProber([R.CONNECTION_TIMEOUT])
    canary = canary_with(prober)
    probe_started = canary.now()
    await canary.verdict(canary.now())
    await asyncio.sleep(2)
    assert await canary.blind_since(probe_started) and len(prober.checks) == 1


@pytest.mark.looptime
async def test_a_check_older_than_five_seconds_is_done_again_first() -> None:
    prober = ScriptedProber([None, R.CONNECTION_TIMEOUT])
    canary = canary_with(prober)
    await canary.verdict(canary.now())
    await asyncio.sleep(6)
    assert await canary.blind_since(canary.now() - 10) and len(prober.checks) == 2


@pytest.mark.looptime
async def test_a_probe_that_failed_as_the_network_came_back_is_still_judged_blind() -> None:
    prober = ScriptedProber([R.CONNECTION_TIMEOUT, None, None, None])
    canary = canary_with(prober)
    await canary.verdict(canary.now())
    probe_started = canary.now()  # failed at once, the cut still there; the network is back for the check
    assert await canary.blind_since(probe_started) and not canary.state.failing
    await canary.verdict(canary.now() + 1)
    await canary.verdict(canary.now() + 1)
    assert not canary.state.blind and not await canary.blind_since(canary.now())


@pytest.mark.looptime
async def test_a_failure_faster_than_the_next_check_waits_for_a_check_started_after_its_probe() -> None:
    prober = ScriptedProber([None, R.CONNECTION_TIMEOUT])  # the network is cut just after the first check
    canary = canary_with(prober)
    await canary.verdict(canary.now())
    await asyncio.sleep(0.5)
    probe_started = canary.now()
    assert await canary.blind_since(probe_started)  # not the earlier success
    assert prober.checks[-1] >= probe_started and len(prober.checks) == 2


@pytest.mark.looptime
async def test_failures_arriving_together_share_one_check_and_checks_keep_a_gap() -> None:
    prober = ScriptedProber([R.CONNECTION_REFUSED], takes=0.2)
    canary = canary_with(prober, min_gap=0.5)
    started = canary.now()
    verdicts = await asyncio.gather(*(canary.blind_since(started) for _ in range(50)))
    assert all(verdicts) and len(prober.checks) == 1
    later = canary.now()
    assert await canary.blind_since(later) and len(prober.checks) == 2
    assert prober.checks[1] - prober.checks[0] >= 0.5


# --- through the engine, real loopback targets -----------------------------------------------------

def spec_for(url: str) -> tuple[MonitorSpec, ResolvedTarget]:
    spec = MonitorSpec("shop", "web", UrlTarget(url), probe=ProbeSettings(interval_ms=250, timeout_ms=200, warmup_ms=0))
    return spec, ResolvedTarget(url, "url", "")


class Engine(ResultsEngine):
    def __init__(self, canary_url: str) -> None:
        registry = CollectorRegistry()
        self.blind: list[bool] = []
        show = blind_gauge(registry, "replica-a")
        prober = Prober()
        self.canary = Canary(CanarySettings(url=canary_url, every=0.2, timeout=0.5, min_gap=0.05), prober=prober,
                             on_blind=lambda b: (show(b), self.blind.append(b)))
        super().__init__(registry, prober=prober, canary=self.canary)


async def run_engine(canary_url: str, target_url: str, n: int = 4) -> tuple[Engine, list[ProbeResult]]:
    eng = Engine(canary_url)
    await eng.engine.start()
    try:
        eng.engine.set_monitor(*spec_for(target_url))
        return eng, await eng.probes(n)
    finally:
        await eng.engine.close()


async def test_a_network_failure_while_the_canary_is_unreachable_is_excluded_as_blind(targets: Targets) -> None:
    eng, results = await run_engine(targets.refused_url(), targets.refused_url())
    assert {r.excluded for r in results} == {Exclusion.BLIND}
    assert {r.reason for r in results} == {R.CONNECTION_REFUSED}
    assert (eng.value(names.PROBES_EXCLUDED_TOTAL, reason="blind") or 0) >= 4
    assert eng.value(names.PROBES_TOTAL, result="failure") == 0
    assert eng.value(names.PROBE_FAILURES_TOTAL, reason="connection_refused") is None
    assert eng.value(names.MAINTENANCE) == 0 and eng.value(names.PROBE_SUCCESS) == 0
    assert eng.blind == [True]
    assert eng.registry.get_sample_value(names.PROBER_BLIND, {"member": "replica-a"}) == 1


async def test_the_same_failure_counts_while_the_canary_answers(targets: Targets) -> None:
    eng, results = await run_engine(targets.http(status(500)), targets.refused_url())  # any answer: the network works
    assert {r.excluded for r in results} == {None}
    assert (eng.value(names.PROBE_FAILURES_TOTAL, reason="connection_refused") or 0) >= 4
    assert eng.value(names.PROBES_EXCLUDED_TOTAL, reason="blind") is None
    assert eng.registry.get_sample_value(names.PROBER_BLIND, {"member": "replica-a"}) == 0 and eng.blind == []


async def test_a_target_that_answers_counts_even_while_the_canary_is_unreachable(targets: Targets) -> None:
    eng, results = await run_engine(targets.refused_url(), targets.http(status(503)))
    assert {r.excluded for r in results} == {None} and {r.reason for r in results} == {R.HTTP_STATUS}
    assert (eng.value(names.PROBE_FAILURES_TOTAL, reason="http_status") or 0) >= 4


@pytest.mark.looptime
async def test_a_failure_judged_late_is_judged_by_the_first_check_after_its_probe_started() -> None:
    prober = ScriptedProber([R.CONNECTION_TIMEOUT, R.CONNECTION_TIMEOUT, None, None, None])
    canary = canary_with(prober)
    await canary.verdict(canary.now())
    probe_started = canary.now()  # fails at once; a loaded event loop judges it only after the recovery
    for _ in range(4):
        await canary.verdict(canary.now() + 0.5)
    assert not canary.state.blind and prober.checks[1] >= probe_started
    assert await canary.blind_since(probe_started)


async def test_a_canary_that_connects_but_answers_late_leaves_the_member_seeing(targets: Targets) -> None:
    """A kube-apiserver too busy to answer ``/readyz`` in time is not a cut network: the target's
    refused connections count against it and nobody is marked blind."""
    eng, results = await run_engine(targets.http(hang), targets.refused_url())
    assert {r.excluded for r in results} == {None}
    assert (eng.value(names.PROBE_FAILURES_TOTAL, reason="connection_refused") or 0) >= 4
    assert eng.blind == [] and eng.registry.get_sample_value(names.PROBER_BLIND, {"member": "replica-a"}) == 0
