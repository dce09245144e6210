"""What one probe produced: a frozen :class:`ProbeResult` with a reason from a closed set.

:class:`FailureReason` is exactly Contract 3's ``reason`` label set; its values are the label
strings. Nothing else (error text, status codes, URLs) ever becomes a label: that goes in
``detail``, which is for humans (logs, status, the demo's live view).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from alert_rules import names


class FailureReason(enum.Enum):
    DNS_ERROR = "dns_error"
    CONNECTION_REFUSED = "connection_refused"
    CONNECTION_TIMEOUT = "connection_timeout"
    TLS_ERROR = "tls_error"
    CERTIFICATE_INVALID = "certificate_invalid"
    TIMEOUT = "timeout"
    HTTP_STATUS = "http_status"
    BODY_MISMATCH = "body_mismatch"
    TOO_MANY_REDIRECTS = "too_many_redirects"
    PROTOCOL_ERROR = "protocol_error"
    GRPC_NOT_SERVING = "grpc_not_serving"
    GRPC_STATUS = "grpc_status"
    EXPECT_MISMATCH = "expect_mismatch"
    DNS_RCODE = "dns_rcode"
    DNS_ANSWER_MISMATCH = "dns_answer_mismatch"
    OTHER = "other"


class Exclusion(enum.Enum):
    """Why a result did not count in the SLI (Contract 9): the ``reason`` label set of
    ``route_monitor_probes_excluded_total``. Decided by :mod:`route_monitor.probe.gate`."""

    MAINTENANCE = names.EXCLUDED_MAINTENANCE
    WARMUP = names.EXCLUDED_WARMUP
    PAUSED = names.EXCLUDED_PAUSED
    BLIND = names.EXCLUDED_BLIND
    """Contract 11: decided by :mod:`route_monitor.probe.canary`, after the gate."""


NETWORK_REASONS = frozenset({FailureReason.DNS_ERROR, FailureReason.CONNECTION_REFUSED,
                             FailureReason.CONNECTION_TIMEOUT, FailureReason.TIMEOUT, FailureReason.TLS_ERROR})
"""Failures that the prober's own network can cause (Contract 11): while the member's canary is
unreachable, a probe failing for one of these is excluded as ``blind``; any other reason means
the target answered something, so the prober's network worked."""


@dataclass(frozen=True, slots=True)
class ProbeResult:
    key: tuple[str, str]
    """(namespace, monitor)"""
    url: str
    """The URL probed first (before redirects)."""
    timestamp: float
    """Wall-clock time the probe started (seconds since the epoch)."""
    success: bool
    reason: FailureReason | None
    """None on success; exactly one reason on failure."""
    duration_seconds: float
    status_code: int | None
    """Status of the last response received, if any."""
    detail: str
    """Human text: what happened (never used as a label)."""
    cert_not_after: float | None = None
    """Leaf certificate notAfter (epoch seconds) when TLS was used, even if verification failed."""
    excluded: Exclusion | None = None
    """Set by the engine when the result did not count in the SLI (Contract 9), else None."""
    phases: tuple[float, ...] | None = None
    """Seconds in each of ``names.PHASES`` (dns, connect, tls, processing, transfer), summed over
    redirects; None when not measured."""
