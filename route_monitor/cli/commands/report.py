"""``route-monitor report``: SLO report over a calendar month or a date range (Contract 10).

Reads Prometheus (or a Thanos querier) with instant queries (probes a day at a time, then the
objectives and the alerts over the whole range) and prints Markdown, CSV or JSON to stdout.
Errors are one line on stderr naming the option, exit 2 for bad options and 1 when Prometheus
cannot answer.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import re
import sys

from alert_rules import names, readback
from route_monitor.cli import cliargs
from route_monitor.reports import exactcount, report, reportrange
from route_monitor.slo import promapi

_NAMESPACE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def add_arguments(rp: argparse.ArgumentParser) -> None:
    rp.add_argument("--prometheus-url", required=True, metavar="URL",
                    help="the Prometheus (or Thanos querier) that scrapes route-monitor, e.g. http://prometheus:9090")
    rp.add_argument("--prometheus-bearer-token-file", metavar="FILE",
                    help="send the token in FILE to --prometheus-url")
    rp.add_argument("--prometheus-ca-file", metavar="FILE", help="trust these CA certificates for --prometheus-url")
    rp.add_argument("--prometheus-timeout", type=cliargs.seconds, default=60.0, metavar="DURATION",
                    help="timeout of one query, e.g. 2m (default 60s; a bare number is seconds)")
    rp.add_argument("--month", metavar="YYYY-MM", help="a calendar month (default: the previous month)")
    rp.add_argument("--from", dest="start", metavar="DATE", help="start (YYYY-MM-DD or an ISO date-time)")
    rp.add_argument("--to", dest="end", metavar="DATE",
                    help="end (YYYY-MM-DD: included, up to the next midnight; or an ISO date-time)")
    rp.add_argument("--timezone", default="UTC", metavar="TZ",
                    help="IANA zone in which dates and months are taken (default UTC)")
    rp.add_argument("--namespace", "-n", action="append", default=[], metavar="NS",
                    help="only monitors in this namespace (repeatable)")
    rp.add_argument("--format", choices=tuple(report.RENDER), default="markdown",
                    help="markdown (default), csv or json, on stdout")


def _namespaces(values: list[str]) -> tuple[str, ...]:
    for ns in values:
        if not _NAMESPACE.fullmatch(ns) or len(ns) > 63:
            raise reportrange.RangeError(f"--namespace: {ns!r} is not a namespace name")
    return tuple(sorted(set(values)))


CHUNK_SECONDS = 86_400
"""Probes are counted a day at a time and summed: one query over a month of raw samples of every
monitor would exceed Prometheus' ``--query.max-samples`` (50 million by default) at a few hundred
monitors. Exact counts over consecutive chunks add up to the count over the whole range."""


def chunks(start: float, seconds: int, size: int = CHUNK_SECONDS) -> list[tuple[float, int]]:
    """(end, length) of consecutive chunks covering ``[start, start + seconds]``."""
    out, done = [], 0
    while done < seconds:
        length = min(size, seconds - done)
        done += length
        out.append((start + done, length))
    return out


async def _probes(api: promapi.PrometheusAPI, rng: reportrange.ReportRange,
                  namespaces: tuple[str, ...]) -> list[promapi.Sample]:
    """Exact probe counts by monitor and result over the range (``route_monitor.reports.exactcount``)."""
    pad = exactcount.PAD_SECONDS
    total: dict[exactcount.SeriesKey, float] = {}
    for end, length in chunks(rng.start.timestamp(), rng.seconds):
        start = end - length
        chunk = exactcount.Chunk(
            start, at_end=await api.query(readback.probe_counters(length, namespaces), at=end),
            at_start=await api.query(readback.probe_counters(pad, namespaces), at=start),
            resets_to_end=await api.query(readback.probe_counter_resets(length + pad, namespaces), at=end),
            resets_to_start=await api.query(readback.probe_counter_resets(pad, namespaces), at=start))
        counts, irregular = exactcount.split(chunk)
        for key in irregular:
            for series in await api.raw_samples(readback.raw_probe_counter(dict(key), length + pad), at=end):
                if exactcount.key_of(series.labels) == key:  # not one with more labels
                    counts[key] = exactcount.counted(series.points, start)
        for key, value in counts.items():
            total[key] = total.get(key, 0.0) + value
    return exactcount.by_result(total)


async def _fetch(settings: promapi.PromSettings, rng: reportrange.ReportRange,
                 namespaces: tuple[str, ...]) -> list[report.Row]:
    at = rng.end.timestamp()
    async with promapi.PrometheusAPI(settings) as api:
        probes = await _probes(api, rng, namespaces)
        objectives = await api.query(readback.objectives(rng.seconds, namespaces), at=at)
        alerts = await api.query(readback.alerts_fired(rng.seconds, namespaces), at=at)
        tile = readback.TILE
        quorum_failed = await api.query(readback.quorum_tiles(names.errors_increase_record(tile), rng.seconds,
                                                              namespaces), at=at)
        quorum_probes = await api.query(readback.quorum_tiles(names.probes_increase_record(tile), rng.seconds,
                                                              namespaces), at=at)
        locations = await api.query(readback.locations_in_range(rng.seconds, namespaces), at=at)
    return report.rows(rng, probes=probes, objectives=objectives, alerts=alerts, quorum_failed=quorum_failed,
                       quorum_probes=quorum_probes, locations=locations)


def run(args: argparse.Namespace) -> int:
    try:
        settings = promapi.parse_settings(args.prometheus_url, bearer_token_file=args.prometheus_bearer_token_file,
                                          ca_file=args.prometheus_ca_file, timeout=args.prometheus_timeout)
        rng = reportrange.resolve(month=args.month, start=args.start, end=args.end, zone=args.timezone,
                                  now=dt.datetime.now(dt.UTC))
        namespaces = _namespaces(args.namespace)
    except (promapi.InvalidSettings, reportrange.RangeError) as e:
        cliargs.error("report", str(e))
        return cliargs.USAGE
    try:
        table = asyncio.run(_fetch(settings, rng, namespaces))
    except promapi.PrometheusError as e:
        cliargs.error("report", str(e))
        return cliargs.FINDINGS
    sys.stdout.write(report.RENDER[args.format](rng, table))
    return 0
