"""Argument types and flag groups shared by the commands, and the one way a command says it failed.

Each command adds its own flags (``add_arguments`` in ``route_monitor.cli.commands.<name>``); what
several share lives here, so that one flag reads, defaults and converts the same everywhere:
``--metrics-address HOST:PORT``, durations with units (:mod:`alert_rules.durations`, bare
numbers still read as seconds), ``--log-format``/``--log-level``, the rule settings.

Exit codes, the same in every command: 0 fine, 1 findings (invalid manifests, problems found,
Prometheus could not answer), 2 usage (a bad flag, value or variable; cannot start as asked) or
nothing to do (no monitor in the input).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from decimal import Decimal, InvalidOperation
from typing import Final, TextIO

from alert_rules import durations, tiles
from alert_rules.model import DEFAULT_EVALUATION_MS
from route_monitor import logs

OK: Final = 0
FINDINGS: Final = 1
USAGE: Final = 2
STDIN: Final = "-"
STDIN_PATH: Final = "/dev/stdin"
_BARE_SECONDS = re.compile(r"\d+(\.\d+)?")


def error(command: str, message: str, stream: TextIO | None = None) -> None:
    """The one error line of every command: ``route-monitor <command>: error: <message>``
    (argparse's own usage errors read the same, the subparsers' prog being ``route-monitor <command>``)."""
    print(f"route-monitor {command}: error: {message}", file=stream or sys.stderr, flush=True)


def warn(command: str, message: str, stream: TextIO | None = None) -> None:
    print(f"route-monitor {command}: warning: {message}", file=stream or sys.stderr, flush=True)


def address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``:PORT`` (all interfaces) or ``[::1]:PORT``."""
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError(f"{text[:100]!r}: expected HOST:PORT, e.g. 127.0.0.1:8080 or :8080")
    return (host.strip("[]") or "0.0.0.0", int(port))


def seconds(text: str) -> float:
    """A duration with units (``10s``, ``1m30s``, ``500ms``); a bare number is seconds, as it was
    before units were accepted."""
    if _BARE_SECONDS.fullmatch(text):
        return float(text)
    try:
        return durations.parse_seconds(text)
    except durations.DurationError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def positive_int(text: str) -> int:
    if not text.isdigit() or int(text) <= 0:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: expected a positive whole number")
    return int(text)


def port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: expected a port number (0-65535)")
    return int(text)


_LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?$")


def label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not _LABEL_KEY.match(key) or not _LABEL_VALUE.match(value):
        raise argparse.ArgumentTypeError(f"{text[:100]!r}: expected KEY=VALUE with a Kubernetes label key and value, "
                                         "e.g. release=kube-prometheus-stack")
    return (key, value)


def url(text: str) -> str:
    if not re.match(r"^https?://[^\s/@]+(/\S*)?$", text):
        shown = "the URL" if "@" in text else repr(text[:100])  # never echo credentials
        raise argparse.ArgumentTypeError(f"{shown}: expected an http(s) URL without credentials")
    return text


def tile(text: str) -> int:
    try:
        return tiles.parse(text)
    except tiles.TileError as e:
        raise argparse.ArgumentTypeError(e.reason) from None


def tile_flag(parser: argparse.ArgumentParser) -> None:
    """``standalone`` and ``rules`` only: the operator's SLO read-back sums default tiles."""
    parser.add_argument("--tile", type=tile, default=tiles.DEFAULT_TILE_MS, metavar="DURATION",
                        help="length of the tiles the long windows are summed from, and their rule group's "
                             "interval (default 5m). For test and demo stacks probing every few seconds: 30s "
                             "opens tickets within a minute or two, at ten times the evaluation cost")


def rule_flags(parser: argparse.ArgumentParser) -> None:
    """Installation-wide settings of generated rules, shared by ``operator`` and ``rules``."""
    parser.add_argument("--runbook-base-url", type=url, metavar="URL",
                        help="where the alerts' runbooks live (default: the project's docs/runbooks.md)")
    parser.add_argument("--dashboard-base-url", type=url, metavar="URL",
                        help="Grafana's base URL: every alert then carries a dashboard_url to monitor-detail")
    parser.add_argument("--rule-label", type=label, action="append", default=[], metavar="KEY=VALUE",
                        help="label every generated PrometheusRule (repeatable), e.g. release=kube-prometheus-stack "
                             "for kube-prometheus-stack's default rule selector")


def metrics_address_flag(parser: argparse.ArgumentParser, default: str,
                         serves: str = "/metrics, /healthz and /readyz are served") -> None:
    parser.add_argument("--metrics-address", type=address, default=address(default), metavar="HOST:PORT",
                        help=f"where {serves} (default {default}; port 0 picks a free one)")


def _share(text: str) -> Decimal:
    try:
        value = Decimal(text)
    except InvalidOperation:
        value = Decimal(-1)
    if not value.is_finite() or not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: expected a share above 0 and at most 1, e.g. 0.5")
    return value


def _hold(text: str) -> str:
    try:
        durations.parse_ms(text)
    except durations.DurationError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e}") from None
    return text


def _evaluation(text: str) -> int:
    try:
        ms = durations.parse_ms(text)
    except durations.DurationError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e}") from None
    if not 1000 <= ms <= 300_000:
        raise argparse.ArgumentTypeError(f"{text!r}: expected Prometheus' evaluation interval, 1s to 5m")
    return ms


def path_flags(parser: argparse.ArgumentParser) -> None:
    """When a shared path counts as down (``rules`` and ``standalone``, which write the path rules)."""
    parser.add_argument("--shared-path-min-monitors", type=positive_int, default=3, metavar="K",
                        help="a path is down when at least K of its monitors fail together (default 3)")
    parser.add_argument("--shared-path-min-ratio", type=_share, default=Decimal("0.5"), metavar="F",
                        help="... and they are at least this share of its monitors (default 0.5)")
    parser.add_argument("--evaluation-interval", type=_evaluation, default=DEFAULT_EVALUATION_MS, metavar="DURATION",
                        help="Prometheus' evaluation interval for these rules (default 30s): a monitor's page waits "
                             "about one probe interval plus one evaluation, so that a shared outage is seen first")
    parser.add_argument("--shared-path-hold", type=_hold, default="5m", metavar="DURATION",
                        help="RouteMonitorSharedPathDown stays open this long after the path is up again, so a "
                             "short flap stays one incident (default 5m)")


def canary_flag(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--canary-url", metavar="URL|none",
                        help="probed every 2 s through the probes' own network: while it is unreachable, probes "
                             "failing for a network reason do not count (excluded as blind) and other replicas "
                             f"take this one's monitors (default: {default}); none turns it off")


def log_flags(parser: argparse.ArgumentParser) -> None:
    """``--log-format`` and ``--log-level`` of the long-running commands (``route_monitor.logs``)."""
    parser.add_argument("--log-format", choices=logs.FORMATS, default="text",
                        help="text lines with a timestamp (default) or one JSON object per line (time in "
                             "RFC 3339) with namespace/monitor fields")
    parser.add_argument("--log-level", choices=logs.LEVELS, default="info",
                        help="default info: start-up, each monitor's transitions and warm-up")


def output_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--output", "-o", choices=("text", "json"), default="text",
                        help="text for people (default) or one JSON object on stdout for CI")


def manifest_paths(parser: argparse.ArgumentParser, nargs: str) -> None:
    parser.add_argument("paths", nargs=nargs, metavar="PATH",
                        help="YAML file or folder of RouteMonitor, Route, HTTPRoute, Gateway, Ingress and "
                             "Service manifests; - reads standard input")


def stdin_paths(paths: Sequence[str]) -> list[str]:
    """``-`` (standard input) as the path it can be read from."""
    return [STDIN_PATH if p == STDIN else p for p in paths]
