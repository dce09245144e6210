"""The generator's input: an objective for one monitored target, as frozen dataclasses.

Raw manifests are parsed into these once, at the boundary (``route_monitor.spec``); nothing
downstream touches dicts. Invalid values raise :class:`InvalidSpec`, which names the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation

from alert_rules import durations

DAY_MS = 86_400_000
DEFAULT_PERIOD_MS = 30 * DAY_MS


class InvalidSpec(ValueError):
    """A field of a monitor's spec is invalid; ``field`` is its path (``spec.slo.availability``)."""

    def __init__(self, field: str, value: object, reason: str) -> None:
        self.field = field
        self.value = value
        self.reason = reason
        super().__init__(f"{field}: {reason} (got {value!r})")


def parse_percent(value: object, field: str) -> Decimal:
    """A percent as written in manifests (``"99.9"``), strictly between 0 and 100."""
    text = str(value).strip() if isinstance(value, (str, int, float)) else ""
    if isinstance(value, bool) or not text:
        raise InvalidSpec(field, value, 'expected a percent between 0 and 100, e.g. "99.9"')
    try:
        pct = Decimal(text.removesuffix("%"))
    except InvalidOperation:
        raise InvalidSpec(field, value, 'expected a percent between 0 and 100, e.g. "99.9"') from None
    if not pct.is_finite() or not (0 < pct < 100):
        raise InvalidSpec(field, value, "must be strictly between 0 and 100 (100% leaves no error budget)")
    return pct


def parse_duration_ms(value: object, field: str) -> int:
    try:
        return durations.parse_ms(value)  # type: ignore[arg-type]
    except durations.DurationError as e:
        raise InvalidSpec(field, value, str(e)) from None


@dataclass(frozen=True)
class LatencyObjective:
    """Share of probes (percent) that must complete faster than ``threshold_ms``."""

    threshold_ms: int
    objective: Decimal

    @property
    def threshold_seconds(self) -> float:
        return self.threshold_ms / 1000


@dataclass(frozen=True)
class Objective:
    availability: Decimal
    """Percent of probes that must succeed, 0 < x < 100."""
    period_ms: int = DEFAULT_PERIOD_MS
    """The SLO period (rolling window) the error budget is computed over."""
    latency: LatencyObjective | None = None

    @property
    def error_budget(self) -> Decimal:
        """Allowed failure ratio, e.g. 0.001 for 99.9%."""
        return (Decimal(100) - self.availability) / Decimal(100)


@dataclass(frozen=True)
class Alerting:
    page: bool = True
    """Emit the fast-burn (critical) alerts."""
    ticket: bool = True
    """Emit the slow-burn (warning) alerts."""
    labels: tuple[tuple[str, str], ...] = ()
    """Extra labels added to every generated alert (sorted pairs)."""
    annotations: tuple[tuple[str, str], ...] = ()
    """Extra annotations added to every generated alert (sorted pairs); may override runbook_url."""


@dataclass(frozen=True)
class MonitorSLO:
    """Everything the generator needs to know about one monitor."""

    namespace: str
    name: str
    objective: Objective
    interval_ms: int = 30_000
    alerting: Alerting = field(default_factory=Alerting)
