"""The generator's input: an objective for one monitored target, as frozen dataclasses.

Raw manifests are parsed into these once, at the boundary (``route_monitor.spec.monitor``); nothing
downstream touches dicts. Invalid values raise :class:`InvalidSpec`, which names every invalid field
(``alert_rules.fielderrors``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from decimal import Decimal, InvalidOperation

from alert_rules import durations, names
from alert_rules.fielderrors import InvalidSpec as InvalidSpec
from alert_rules.tiles import DEFAULT_TILE_MS

DAY_MS = 86_400_000
DEFAULT_EVALUATION_MS = 30_000
"""The evaluation interval the generated rules assume unless told (kube-prometheus-stack's and
OpenShift's default; a plain Prometheus defaults to 1m: say so with ``--evaluation-interval``)."""
DEFAULT_PERIOD_MS = 30 * DAY_MS


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
    runbook_base: str = names.DEFAULT_RUNBOOK_BASE
    """Where the runbooks live: each alert links ``<runbook_base>#<alert name in lower case>``."""
    dashboard_base: str = ""
    """A Grafana base URL: each alert gets a ``dashboard_url`` opening monitor-detail on the monitor."""


@dataclass(frozen=True)
class MonitorSLO:
    """Everything the generator needs to know about one monitor."""

    namespace: str
    name: str
    objective: Objective
    interval_ms: int = 30_000
    alerting: Alerting = field(default_factory=Alerting)
    tile_ms: int = DEFAULT_TILE_MS
    """Installation-wide: the long windows' tile and their group's interval (``alert_rules.tiles``)."""
    evaluation_ms: int = DEFAULT_EVALUATION_MS
    """Installation-wide: Prometheus' evaluation interval, how long a shared outage takes to be seen
    (``alert_rules.path_rules.settle_ms``)."""
    vantages: int = 1
    """Contract 12: locations that probe the monitor (``alert_rules.quorum``); 1: today's rules."""
    quorum: int = 1
    """Contract 12: failing locations needed for a probe slot to count as failed."""


@dataclass(frozen=True, kw_only=True)
class RuleDefaults:
    """Installation-wide settings of generated rules (``operator`` and ``rules`` flags)."""

    runbook_base: str = names.DEFAULT_RUNBOOK_BASE
    """``--runbook-base-url``: where the runbooks live (a monitor's own runbook_url still wins)."""
    dashboard_base: str = ""
    """``--dashboard-base-url``: Grafana's base URL; alerts then carry a ``dashboard_url``."""
    object_labels: tuple[tuple[str, str], ...] = ()
    """``--rule-label``: labels on every generated PrometheusRule object (e.g. ``release`` for
    kube-prometheus-stack's rule selector)."""
    tile_ms: int = DEFAULT_TILE_MS
    """``--tile`` (``rules`` and ``standalone`` only): see ``alert_rules.tiles``."""
    evaluation_ms: int = DEFAULT_EVALUATION_MS
    """``--evaluation-interval`` (``rules`` and ``standalone`` only): Prometheus' evaluation interval."""

    def apply(self, slo: MonitorSLO) -> MonitorSLO:
        alerting = replace(slo.alerting, runbook_base=self.runbook_base, dashboard_base=self.dashboard_base)
        return replace(slo, alerting=alerting, tile_ms=self.tile_ms, evaluation_ms=self.evaluation_ms)
