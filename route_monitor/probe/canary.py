"""The member's canary (Contract 11): is this prober's own network working?

When a node loses DNS or egress, every probe of that member fails with a network reason although
every target is fine. The canary tells the two apart: a URL that every member reaches through the
same network stack as its probes (by default the kube-apiserver's ``/readyz`` by Service IP, no
DNS), probed with the engine's own :class:`~route_monitor.probe.prober.Prober`, outside the
engine's concurrency bound (probes hanging on a cut network must not delay it).

- The canary *fails* when its probe fails with one of :data:`NETWORK_REASONS` before a connection
  was made; any answer (even a 500, or a certificate that does not verify) means the network
  works, and so does a connection that was made but answered late: a busy kube-apiserver is slow
  in its TLS handshake or its ``/readyz``, which says nothing about this member's network (taken
  for blindness, it would hand monitors between replicas under load and add to that load).
- The member is *blind* from a failing check until ``recover_after`` checks in a row succeed
  (:class:`CanaryState`, pure); ``on_blind`` hears each change (the Lease mark, a log line), and
  ``route_monitor_prober_blind{member}`` follows it.
- A probe failing with a network reason is excluded as ``blind`` when the member is blind after
  a check that started no earlier than that probe and no more than ``fresh`` seconds ago. A
  failure fast enough to come before the next periodic check (a cut link: "network unreachable"
  at once) waits for one started after it, so no failure from the first instants of a cut counts
  against a target; and a probe that failed just before the network came back is judged blind
  too, as the first successful checks do not end blindness. While failures keep coming such
  checks start at most every ``min_gap`` seconds, shared by every probe waiting.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, replace

from prometheus_client import CollectorRegistry, Gauge

from alert_rules import names
from route_monitor.probe.prober import Prober
from route_monitor.probe.result import NETWORK_REASONS, ProbeResult
from route_monitor.spec.monitor import ProbeSettings
from route_monitor.targets.credentials import Credentials

log = logging.getLogger(__name__)
RECENT = 32
"""Checks remembered for late verdicts (at ``min_gap``, well over ``fresh`` seconds' worth)."""
KEY = ("", "canary")
"""The canary's key in log lines and results (no monitor has an empty namespace)."""


def unreachable(result: ProbeResult) -> bool:
    """A failure the prober's own network can cause: what makes a canary fail, and what a failing
    canary excludes."""
    return not result.success and result.reason in NETWORK_REASONS


def canary_failed(result: ProbeResult) -> bool:
    """The canary's own verdict: a network failure before the TCP connection was made (a timeout or
    an error after it means the network carried the connection and the server was slow)."""
    return unreachable(result) and not (result.phases is not None and result.phases[_CONNECT] > 0)


_CONNECT = names.PHASES.index("connect")


@dataclass(frozen=True, slots=True)
class CanaryState:
    started: float = -math.inf
    """When the last completed check started (canary clock)."""
    failing: bool = False
    """The last check failed (the canary is unreachable)."""
    blind: bool = False
    """From a failing check until ``recover_after`` successes in a row."""
    successes: int = 0
    """Checks in a row that succeeded."""
    detail: str = ""
    """What the last failing check saw (for the log)."""

    def after(self, started: float, result: ProbeResult, recover_after: int) -> CanaryState:
        if canary_failed(result):
            reason = result.reason.value if result.reason is not None else "other"
            return CanaryState(started, True, True, 0, f"{reason}: {result.detail}")
        successes = self.successes + 1
        return replace(self, started=started, failing=False, blind=self.blind and successes < recover_after,
                       successes=successes)


@dataclass(frozen=True, kw_only=True)
class CanarySettings:
    url: str
    """``--canary-url``: the kube-apiserver's ``/readyz`` by default."""
    every: float = 2.0
    """Seconds between two periodic checks."""
    timeout: float = 2.0
    """A check that gets no answer within this is a failure."""
    fresh: float = 5.0
    """A probe's network failure is judged by a check started at most this long ago."""
    min_gap: float = 0.5
    """Checks asked for by failing probes start at most this often."""
    recover_after: int = 3
    """Successful checks in a row that end blindness."""
    ca_pem: bytes = b""
    """CA certificates added to the system store for the canary (the service account's)."""
    insecure_skip_verify: bool = False


def blind_gauge(registry: CollectorRegistry, member: str) -> Callable[[bool], None]:
    """``route_monitor_prober_blind{member}``, at 0 from the start (also without a canary, so that
    "every member is blind" is never true of members that cannot tell); sets it."""
    gauge = Gauge(names.PROBER_BLIND, "1 while this member's canary is unreachable: its probes' network failures "
                  "do not count and other members probe its monitors", [names.LABEL_MEMBER_NAME],
                  registry=registry).labels(member)
    gauge.set(0)
    return lambda blind: gauge.set(int(blind))


class Canary:
    def __init__(self, settings: CanarySettings, *, prober: Prober, on_blind: Callable[[bool], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.state = CanaryState()
        self._prober, self._on_blind, self._clock = prober, on_blind, clock
        probe = ProbeSettings(interval_ms=int(settings.every * 1000), timeout_ms=int(settings.timeout * 1000),
                              expected_status=((100, 599),), max_redirects=0, max_body_bytes=4096,
                              insecure_skip_verify=settings.insecure_skip_verify, warmup_ms=0)
        self._request = prober.request(KEY, settings.url, probe, Credentials(ca_pem=settings.ca_pem)
                                       if settings.ca_pem else None)
        self._inflight: asyncio.Future[None] | None = None
        self._recent: deque[CanaryState] = deque(maxlen=RECENT)
        """The states after the last checks, oldest first: a failure judged late (a loaded event
        loop) is judged by the first check after its probe started, not by a later recovery."""
        self._last_start = -math.inf

    def now(self) -> float:
        return self._clock()

    async def run(self) -> None:
        """Check every ``every`` seconds, forever."""
        while True:
            await self.verdict(self._clock())
            await asyncio.sleep(self.settings.every)

    async def blind_since(self, started: float) -> bool:
        """Is the member blind, after a check started no earlier than ``started`` (canary clock; the
        start of the probe being judged) and no more than ``fresh`` seconds ago?"""
        return (await self.verdict(max(started, self._clock() - self.settings.fresh))).blind

    async def verdict(self, need: float) -> CanaryState:
        """The state after the first check that started at ``need`` or later: a past one, one in
        flight, or a new one (at most one at a time, at most every ``min_gap`` seconds)."""
        while self.state.started < need:
            if self._inflight is None:
                wait = self._last_start + self.settings.min_gap - self._clock()
                if wait > 0:
                    await asyncio.sleep(wait)
                    continue
                self._inflight = asyncio.ensure_future(self._check())
            await asyncio.shield(self._inflight)
        return next((s for s in self._recent if s.started >= need), self.state)

    async def _check(self) -> None:
        started = self._last_start = self._clock()
        try:
            result = await self._prober.probe(self._request)
            before, self.state = self.state, self.state.after(started, result, self.settings.recover_after)
            self._recent.append(self.state)
        finally:
            self._inflight = None
        if before.blind != self.state.blind:
            if self.state.blind:
                log.warning("canary %s unreachable (%s): this member is blind; network failures of its probes "
                            "do not count", self.settings.url, self.state.detail)
            else:
                log.warning("canary %s reachable %d times in a row: this member is no longer blind",
                            self.settings.url, self.state.successes)
            if self._on_blind is not None:
                self._on_blind(self.state.blind)
