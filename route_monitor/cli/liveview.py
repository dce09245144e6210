"""The demo's live terminal view: per monitor, what is probed and how its SLO is doing.

:class:`Tracker` keeps each monitor's recent results (fed by the engine's ``on_result``) and
computes, in-process, what the generated rules compute in Prometheus: availability so far and
the burn rate (error ratio / error budget) over a short and a long window. :func:`render`
turns that into text; the demo redraws it with plain ANSI codes (no curses).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from route_monitor.probe.result import ProbeResult
from route_monitor.spec.monitor import MonitorSpec

CLEAR = "\x1b[H\x1b[2J"
RED, GREEN, YELLOW, DIM, RESET = "\x1b[31m", "\x1b[32m", "\x1b[33m", "\x1b[2m", "\x1b[0m"


@dataclass
class MonitorView:
    spec: MonitorSpec
    url: str
    results: deque[tuple[float, bool, bool]] = field(default_factory=lambda: deque(maxlen=20_000))
    """(time, success, fast enough)"""
    probes: int = 0
    successes: int = 0
    last_failure: str = ""
    cert_not_after: float | None = None

    def add(self, r: ProbeResult) -> None:
        latency = self.spec.objective.latency
        fast = r.success and (latency is None or r.duration_seconds <= latency.threshold_seconds)
        self.results.append((r.timestamp, r.success, fast))
        self.probes += 1
        self.successes += r.success
        if r.cert_not_after is not None:
            self.cert_not_after = r.cert_not_after
        if not r.success:
            self.last_failure = f"{r.reason.value if r.reason else 'other'}: {r.detail}"

    def burn(self, window_seconds: float, now: float, *, latency: bool = False) -> float | None:
        """Error ratio over the window divided by the error budget (1.0 = spending it exactly)."""
        recent = [(ok, fast) for t, ok, fast in self.results if t >= now - window_seconds]
        if not recent:
            return None
        if latency:
            lat = self.spec.objective.latency
            if lat is None:
                return None
            budget = float((100 - lat.objective) / 100)
            bad = sum(1 for _, fast in recent if not fast)
        else:
            budget = float(self.spec.objective.error_budget)
            bad = sum(1 for ok, _ in recent if not ok)
        return (bad / len(recent)) / budget


class Tracker:
    def __init__(self, monitors: Iterable[tuple[MonitorSpec, str]], clock: Callable[[], float] = time.time) -> None:
        self.views = {spec.key: MonitorView(spec, url) for spec, url in monitors}
        self.clock = clock

    def __call__(self, r: ProbeResult) -> None:
        view = self.views.get(r.key)
        if view is not None:
            view.add(r)


def _fmt_burn(value: float | None, color: bool) -> str:
    if value is None:
        return "    -"
    text = f"{value:5.1f}" if value < 1000 else f"{value:5.0f}"
    if not color:
        return text
    return f"{RED if value >= 14.4 else YELLOW if value >= 1 else GREEN}{text}{RESET}"


def render(tracker: Tracker, *, short: float = 300, long: float = 3600, color: bool = True) -> str:
    now = tracker.clock()
    head = (f"{'MONITOR':<18} {'SLO':>6} {'PROBES':>6} {'AVAIL':>8} {'BURN5m':>6} {'BURN1h':>6} "
            f"{'LAT5m':>6}  LAST FAILURE / URL")
    lines = [head]
    for view in tracker.views.values():
        avail = f"{100 * view.successes / view.probes:7.2f}%" if view.probes else "       -"
        slo = f"{view.spec.objective.availability}%"
        last = view.last_failure or "-"
        if len(last) > 70:
            last = last[:67] + "..."
        dim, reset = (DIM, RESET) if color else ("", "")
        cert = "" if view.cert_not_after is None else \
            f"  (certificate expires in {(view.cert_not_after - now) / 86400:.1f} days)"
        lines.append(f"{view.spec.name:<18} {slo:>6} {view.probes:>6} {avail} "
                     f"{_fmt_burn(view.burn(short, now), color):>6} {_fmt_burn(view.burn(long, now), color):>6} "
                     f"{_fmt_burn(view.burn(short, now, latency=True), color):>6}  {last}\n"
                     f"{'':<18} {dim}{view.url}{cert}{reset}")
    lines.append("BURN = error ratio / error budget over 5m and 1h (both >= 14.4 pages, for a 30d SLO); "
                 "LAT5m = the same for the latency SLO")
    return "\n".join(lines)
