"""Contract 11's *failing* verdict, decided by the prober from its own probe results.

A monitor is failing when its last two counted probes failed and at least half of its counted
probes over ``W = max(2 x interval, 1m)`` did; it is failing *by DNS* when, besides, DNS errors
are at least half of ``W``'s probes (what counts on a ``dns:`` path, and on no other: a probe that
cannot resolve never reached a router).

The rules used to compute this from the probe counters, for every monitor at every evaluation:
a third of what the shared rules cost Prometheus (``benchmarks/RESULTS-rules-cost.md``). The
prober knows each result as it happens, so it exports the verdict as one gauge per monitor
(:data:`~alert_rules.names.PROBE_FAILING`, values :data:`OK`, :data:`FAILING`,
:data:`FAILING_BY_DNS`), and one shared rule per series of the failing record reads it
(``alert_rules.shared_failing``). Both the engine and the ``promtool`` fixtures call
:func:`verdict`, so the rules are tested on the values the engine exports.

"Last two failed" is read within ``2 x W`` (two probes long apart, a maintenance window between
them, are not a failing run), as the counters' version read "two failures counted within 2W".
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from typing import Final

MIN_WINDOW_MS: Final = 60_000
RATIO: Final = Decimal("0.5")
MIN_PROBES: Final = 2

OK: Final = 0
FAILING: Final = 1
FAILING_BY_DNS: Final = 2
"""Gauge values: not failing; failing; failing, and by DNS errors (at least half of the window's probes)."""

PASSED: Final = 0
FAILED: Final = 1
DNS_FAILED: Final = 2
"""Codes of one counted probe in :func:`verdict`'s history."""


def window_ms(interval_ms: int) -> int:
    """``W``: the window of the failure ratio, ``max(2 x interval, 1m)``."""
    return max(2 * interval_ms, MIN_WINDOW_MS)


def verdict(history: Sequence[tuple[float, int]], now_s: float, interval_ms: int) -> int:
    """The gauge's value at ``now_s`` for the counted probes ``history`` (``(time_s, code)``,
    oldest first; :data:`PASSED`, :data:`FAILED` or :data:`DNS_FAILED`)."""
    w = window_ms(interval_ms) / 1000
    recent = [code for t, code in history if t > now_s - 2 * w]
    if len(recent) < MIN_PROBES or any(code == PASSED for code in recent[-MIN_PROBES:]):
        return OK
    in_w = [code for t, code in history if t > now_s - w]
    failed = sum(code != PASSED for code in in_w)
    if not in_w or failed < RATIO * len(in_w):
        return OK
    dns = sum(code == DNS_FAILED for code in in_w)
    return FAILING_BY_DNS if dns >= RATIO * len(in_w) else FAILING


def keep_since(now_s: float, interval_ms: int) -> float:
    """Beyond the last :data:`MIN_PROBES` probes, the oldest probe time :func:`verdict` still reads
    at ``now_s`` or later (older ones can be dropped)."""
    return now_s - window_ms(interval_ms) / 1000
