"""``route-monitor standalone PATH...``: the probe engine on monitors read from YAML files.

Serves ``/metrics`` (``--metrics-address``), writes the generated rules to ``--rules-dir`` as
plain Prometheus rule files (with ``--tile``'s tiles, see ``alert_rules.tiles``; the shared-path
rules of the whole installation in ``route-monitor-paths.rules.yml``, ``--shared-path-*``), re-reads the
files when they change (polling), and exits 0 on SIGTERM/SIGINT. Problems go to stderr naming
the file, the object and the field; with nothing valid to monitor at start-up the exit status
is 2. Logs like the operator (``--log-format``, ``--log-level``, :mod:`route_monitor.logs`):
start-up, each monitor's transitions and warm-up (:mod:`route_monitor.cli.transitions`). Serves
``/healthz`` (the event loop comes round) and ``/readyz`` (the files' monitors are probing)
beside ``/metrics``. On a reload, a monitor whose manifest became invalid keeps its last good spec (and the
error is printed); one removed from the files stops. With a canary (``--canary-url``, or the
kube-apiserver when run in a pod) a network failure while the canary is unreachable too is
excluded as ``blind`` and ``route_monitor_prober_blind`` says so (:mod:`route_monitor.probe.canary`).
With ``--location`` it is a remote vantage: every series carries that ``location``, and a
Prometheus that federates or receives them runs the monitor's quorum rules over it too.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import socket
import time
from pathlib import Path

from prometheus_client import CollectorRegistry

from alert_rules import durations
from alert_rules.path_rules import PathAlerting, path_rule_groups
from alert_rules.render import to_yaml, with_header
from alert_rules.shared import shared_rule_groups
from route_monitor import logs
from route_monitor.cli import cliargs
from route_monitor.cli.canaryflag import CanaryFlagError, canary_settings, in_cluster
from route_monitor.cli.commands.rules import path_settings
from route_monitor.cli.transitions import Transitions
from route_monitor.files.fileplan import Key, Options, Plan, Planned, fingerprint, parse_service_urls, plan
from route_monitor.files.manifests import ManifestError
from route_monitor.files.rulefiles import RuleFiles
from route_monitor.operator.replicas import location
from route_monitor.probe.canary import Canary, CanarySettings, blind_gauge
from route_monitor.probe.engine import ProbeEngine, settle_heap
from route_monitor.probe.httpserver import MetricsServer
from route_monitor.probe.metrics import ProbeMetrics
from route_monitor.probe.prober import Prober
from route_monitor.probe.tls.contexts import TLSContexts
from route_monitor.probe.tls.trust import TrustError, contexts_from_env
from route_monitor.waits import wait_event

RELOAD_POLL_SECONDS = 1.0
PATH_RULES_FILE = "route-monitor-paths.rules.yml"
"""The shared-path rules (Contract 11), written beside the monitors' rule files."""
SHOW_MONITORS = 20
STALLED_SECONDS = 30.0
"""/healthz fails when the event loop has not come round for this long (a hung process)."""


def add_arguments(st: argparse.ArgumentParser) -> None:
    st.add_argument("paths", nargs="+", metavar="PATH",
                    help="YAML file or folder of RouteMonitor, Route, HTTPRoute, Gateway, Ingress, Service manifests "
                         "(re-read when they change)")
    cliargs.metrics_address_flag(st, "127.0.0.1:8080")
    st.add_argument("--rules-dir", metavar="DIR", help="write the generated Prometheus rule files here")
    st.add_argument("--max-concurrency", type=cliargs.positive_int, default=500, metavar="N",
                    help="probes in flight at most (default 500)")
    st.add_argument("--service-url", action="append", default=[], metavar="NAMESPACE/NAME=URL",
                    help="probe this URL for an annotated Service instead of its cluster DNS name "
                         "(repeatable; the monitor's path still applies)")
    st.add_argument("--cluster-domain", default="cluster.local", metavar="DOMAIN",
                    help="cluster DNS domain of Service URLs (default cluster.local)")
    cliargs.tile_flag(st)
    cliargs.path_flags(st)
    cliargs.canary_flag(st, "the kube-apiserver's /readyz in a pod; outside a cluster, none")
    location.add_flag(st, "none: the series carry no location label; give one to run a remote vantage")
    cliargs.log_flags(st)


log = logging.getLogger("route_monitor.standalone")


def say_problem(p: ManifestError) -> None:
    """A problem in the files: in text, the very line ``check`` prints."""
    log.log(logging.WARNING if p.warning else logging.ERROR, "%s", p, extra=logs.FINDING)


class Standalone:
    def __init__(self, paths: list[str], *, metrics_address: tuple[str, int], rules_dir: str | None,
                 max_concurrency: int = 500, poll: float = RELOAD_POLL_SECONDS, options: Options | None = None,
                 tls: TLSContexts | None = None, canary: CanarySettings | None = None,
                 path_alerting: PathAlerting | None = None, location: str = "") -> None:
        self.paths = paths
        self.options = options or Options()
        groups = [*shared_rule_groups(self.options.tile_ms), *path_rule_groups(path_alerting)]
        shared = {PATH_RULES_FILE: with_header(to_yaml({"groups": groups}))}
        self.rules = RuleFiles(Path(rules_dir), fixed=shared) if rules_dir else None
        self.registry = CollectorRegistry()
        metrics = ProbeMetrics(self.registry, location=location)
        self.transitions = Transitions(log)
        prober = Prober(tls=tls)
        show_blind = blind_gauge(self.registry, socket.gethostname())
        self.canary = None if canary is None else Canary(canary, prober=prober, on_blind=show_blind)
        self.engine = ProbeEngine(metrics=metrics, max_concurrency=max_concurrency, on_result=self.transitions,
                                  prober=prober, canary=self.canary)
        self.ready = False
        """/readyz: the monitors of the files are probing."""
        self.alive_at = time.monotonic()
        """Last time the event loop came round (/healthz)."""
        self.server = MetricsServer(self.registry, *metrics_address, render=metrics.exposition,
                                    ready=lambda: self.ready, healthy=self.healthy)
        self.current: dict[Key, Planned] = {}
        self.watched: list[Path] = []
        """Credential files read by the monitors: rotating one reloads like editing a manifest."""
        self.poll = poll

    def healthy(self) -> bool:
        return time.monotonic() - self.alive_at < STALLED_SECONDS

    async def apply(self, new: Plan) -> tuple[int, int, int]:
        """Make the engine match ``new`` (in batches that yield to the running probes); returns
        (added, changed, removed). Rules: :meth:`write_rules`."""
        for p in new.problems:
            say_problem(p)
        wanted = dict(new.monitors)
        for key in new.failed - set(wanted):
            if key in self.current:
                log.warning("%s/%s: keeping its last good spec until the errors above are fixed", *key,
                            extra=logs.monitor_extra(key))
                wanted[key] = self.current[key]
        added = [k for k in wanted if k not in self.current]
        changed = [k for k in wanted if k in self.current and wanted[k] != self.current[k]]
        removed = [k for k in self.current if k not in wanted]
        for key in removed:
            self.engine.remove_monitor(key)
            self.transitions.forget(key)
        await self.engine.set_monitors([(wanted[key].spec, wanted[key].target) for key in (*added, *changed)])
        self.current = wanted
        self.watched = new.files
        return len(added), len(changed), len(removed)

    async def write_rules(self) -> None:
        """Render and write the rule files in a thread (rendering thousands takes a while; the
        event loop keeps probing meanwhile). Only monitors whose SLO changed are re-rendered."""
        if self.rules is None:
            return
        o = self.options
        slos = [p.spec.slo(o.tile_ms, o.evaluation_ms) for p in self.current.values()]
        written, deleted = await asyncio.to_thread(self.rules.sync, slos)
        if written or deleted:
            log.info("rules: %d file(s) written, %d deleted in %s", len(written), len(deleted), self.rules.folder)

    async def main(self) -> int:
        first = plan(self.paths, self.options)
        if not first.monitors:
            for p in first.problems:
                say_problem(p)
            cliargs.error("standalone", "nothing valid to monitor in " + " ".join(self.paths))
            return cliargs.USAGE
        try:
            self.server.start()
        except OSError as e:
            cliargs.error("standalone", f"cannot serve metrics on {self.server.host}:{self.server.port}: "
                          f"{e.strerror or e}")
            return cliargs.USAGE
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            async with self.engine:
                await self.apply(first)
                for m in list(self.current.values())[:SHOW_MONITORS]:
                    warmup = m.spec.probe.warmup_ms
                    log.info("monitoring %s/%s: %s every %gs%s", m.spec.namespace, m.spec.name, m.target.url,
                             m.spec.probe.interval_ms / 1000,
                             f", warm-up {durations.format_ms(warmup)} (failures count after it or the first "
                             "success)" if warmup else "", extra=logs.monitor_extra(m.spec.key))
                if len(self.current) > SHOW_MONITORS:
                    log.info("... and %d more monitors", len(self.current) - SHOW_MONITORS)
                del first
                settle_heap()
                self.ready = True
                if self.canary is not None:
                    log.info("canary: %s (network failures while it is unreachable do not count)",
                             self.canary.settings.url)
                log.info("metrics: %s%s", self.server.url,
                         f"  rules: {self.rules.folder}/*.rules.yml" if self.rules else "")
                await self.write_rules()
                await self._watch(stop)
        finally:
            self.server.stop()
        log.info("stopped")
        return cliargs.OK

    async def _watch(self, stop: asyncio.Event) -> None:
        seen = fingerprint([*self.paths, *self.watched])
        while not stop.is_set():
            self.alive_at = time.monotonic()
            if await wait_event(stop, self.poll):
                return
            now = fingerprint([*self.paths, *self.watched])
            if now == seen:
                continue
            seen = now
            try:
                added, changed, removed = await self.apply(await asyncio.to_thread(plan, self.paths, self.options))
                settle_heap(full=bool(changed or removed))
                await self.write_rules()
            except Exception as e:  # a reload must never take the running monitors down
                log.exception("reload failed, keeping the running monitors: %s", e)
                continue
            log.info("reloaded: %d monitor(s) (+%d ~%d -%d)", len(self.current), added, changed, removed)


def run(args: argparse.Namespace) -> int:
    if cliargs.STDIN in args.paths:
        cliargs.error("standalone", "standalone re-reads its files when they change: give a file or folder, not -")
        return cliargs.USAGE
    logs.configure(fmt=getattr(args, "log_format", "text"), level=getattr(args, "log_level", "info"))
    try:
        options = Options(parse_service_urls(getattr(args, "service_url", [])),
                          getattr(args, "cluster_domain", "cluster.local"), args.tile,
                          evaluation_ms=args.evaluation_interval)
        tls, extra_trust = contexts_from_env(os.environ)
        canary = canary_settings(getattr(args, "canary_url", None), in_cluster(os.environ))
    except (ValueError, TrustError, CanaryFlagError) as e:
        cliargs.error("standalone", str(e))
        return cliargs.USAGE
    for warning, line in extra_trust.notes():
        log.log(logging.WARNING if warning else logging.INFO, "%s", line)
    app = Standalone(list(args.paths), metrics_address=args.metrics_address, rules_dir=args.rules_dir,
                     max_concurrency=args.max_concurrency, options=options, tls=tls, canary=canary,
                     path_alerting=path_settings(args), location=args.location or "")
    return asyncio.run(app.main())
