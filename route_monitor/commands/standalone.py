"""``route-monitor standalone PATH...``: the probe engine on monitors read from YAML files.

Serves ``/metrics`` (``--metrics-address``), writes the generated rules to ``--rules-dir`` as
plain Prometheus rule files (with ``--tile``'s tiles, see ``alert_rules.tiles``; the shared-path
rules of the whole installation in ``route-monitor-paths.rules.yml``, ``--shared-path-*``), re-reads the
files when they change (polling), and exits 0 on SIGTERM/SIGINT. Problems go to stderr naming
the file, the object and the field; with nothing valid to monitor at start-up the exit status
is 2. On a reload, a monitor whose manifest became invalid keeps its last good spec (and the
error is printed); one removed from the files stops.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from prometheus_client import CollectorRegistry

from alert_rules.path_rules import PathAlerting, path_rule_groups
from alert_rules.render import to_yaml, with_header
from route_monitor.commands.rules import path_settings
from route_monitor.fileplan import Key, Options, Plan, Planned, fingerprint, parse_service_urls, plan
from route_monitor.httpserver import MetricsServer
from route_monitor.probe.engine import ProbeEngine, settle_heap
from route_monitor.probe.metrics import ProbeMetrics
from route_monitor.probe.result import ProbeResult
from route_monitor.probe.tls import TLSContexts
from route_monitor.probe.trust import TrustError, contexts_from_env
from route_monitor.rulefiles import RuleFiles

RELOAD_POLL_SECONDS = 1.0
PATH_RULES_FILE = "route-monitor-paths.rules.yml"
"""The shared-path rules (Contract 11), written beside the monitors' rule files."""
SHOW_MONITORS = 20


def say(text: str, stream: TextIO | None = None) -> None:
    print(text, file=stream or sys.stderr, flush=True)


class Transitions:
    """Prints a line when a monitor goes up or down (not on every probe)."""

    def __init__(self, out: Callable[[str], None] = say) -> None:
        self._last: dict[Key, bool] = {}
        self._out = out

    def __call__(self, r: ProbeResult) -> None:
        if self._last.get(r.key) == r.success:
            return
        self._last[r.key] = r.success
        state = "UP" if r.success else f"DOWN ({r.reason.value if r.reason else 'other'}: {r.detail})"
        counted = f"  (not counted: {r.excluded.value})" if r.excluded is not None else ""
        self._out(f"{r.key[0]}/{r.key[1]}: {state}  {r.url}{counted}")


class Standalone:
    def __init__(self, paths: list[str], *, metrics_address: tuple[str, int], rules_dir: str | None,
                 max_concurrency: int = 500, poll: float = RELOAD_POLL_SECONDS, options: Options | None = None,
                 tls: TLSContexts | None = None, path_alerting: PathAlerting | None = None) -> None:
        self.paths = paths
        self.options = options or Options()
        shared = {PATH_RULES_FILE: with_header(to_yaml({"groups": path_rule_groups(path_alerting)}))}
        self.rules = RuleFiles(Path(rules_dir), fixed=shared) if rules_dir else None
        self.registry = CollectorRegistry()
        metrics = ProbeMetrics(self.registry)
        self.engine = ProbeEngine(metrics=metrics, max_concurrency=max_concurrency, on_result=Transitions(), tls=tls)
        self.server = MetricsServer(self.registry, *metrics_address, render=metrics.exposition)
        self.current: dict[Key, Planned] = {}
        self.watched: list[Path] = []
        """Credential files read by the monitors: rotating one reloads like editing a manifest."""
        self.poll = poll

    async def apply(self, new: Plan) -> tuple[int, int, int]:
        """Make the engine match ``new`` (in batches that yield to the running probes); returns
        (added, changed, removed). Rules: :meth:`write_rules`."""
        for p in new.problems:
            say(str(p))
        wanted = dict(new.monitors)
        for key in new.failed - set(wanted):
            if key in self.current:
                say(f"{key[0]}/{key[1]}: keeping its last good spec until the errors above are fixed")
                wanted[key] = self.current[key]
        added = [k for k in wanted if k not in self.current]
        changed = [k for k in wanted if k in self.current and wanted[k] != self.current[k]]
        removed = [k for k in self.current if k not in wanted]
        for key in removed:
            self.engine.remove_monitor(key)
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
            say(f"rules: {len(written)} file(s) written, {len(deleted)} deleted in {self.rules.folder}")

    async def main(self) -> int:
        first = plan(self.paths, self.options)
        if not first.monitors:
            for p in first.problems:
                say(str(p))
            say("error: nothing valid to monitor in " + " ".join(self.paths))
            return 2
        try:
            self.server.start()
        except OSError as e:
            say(f"error: cannot serve metrics on {self.server.host}:{self.server.port}: {e.strerror or e}")
            return 1
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        try:
            async with self.engine:
                await self.apply(first)
                for m in list(self.current.values())[:SHOW_MONITORS]:
                    say(f"monitoring {m.spec.namespace}/{m.spec.name}: {m.target.url} every "
                        f"{m.spec.probe.interval_ms / 1000:g}s")
                if len(self.current) > SHOW_MONITORS:
                    say(f"... and {len(self.current) - SHOW_MONITORS} more monitors")
                del first
                settle_heap()
                say(f"metrics: {self.server.url}" + (f"  rules: {self.rules.folder}/*.rules.yml"
                                                     if self.rules else ""))
                await self.write_rules()
                await self._watch(stop)
        finally:
            self.server.stop()
        say("stopped")
        return 0

    async def _watch(self, stop: asyncio.Event) -> None:
        seen = fingerprint([*self.paths, *self.watched])
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), timeout=self.poll)
                return
            except TimeoutError:
                pass
            now = fingerprint([*self.paths, *self.watched])
            if now == seen:
                continue
            seen = now
            try:
                added, changed, removed = await self.apply(await asyncio.to_thread(plan, self.paths, self.options))
                settle_heap(full=bool(changed or removed))
                await self.write_rules()
            except Exception as e:  # a reload must never take the running monitors down
                logging.getLogger(__name__).exception("reload failed")
                say(f"error: reload failed, keeping the running monitors: {e}")
                continue
            say(f"reloaded: {len(self.current)} monitor(s) (+{added} ~{changed} -{removed})")


def run(args: argparse.Namespace) -> int:
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        options = Options(parse_service_urls(getattr(args, "service_url", [])),
                          getattr(args, "cluster_domain", "cluster.local"), args.tile,
                          evaluation_ms=args.evaluation_interval)
        tls, extra_trust = contexts_from_env(os.environ)
    except (ValueError, TrustError) as e:
        say(f"error: {e}")
        return 2
    for _, line in extra_trust.notes():
        say(line)
    app = Standalone(list(args.paths), metrics_address=args.metrics_address, rules_dir=args.rules_dir,
                     max_concurrency=args.max_concurrency, options=options, tls=tls,
                     path_alerting=path_settings(args))
    return asyncio.run(app.main())
