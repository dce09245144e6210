"""``route-monitor rules PATH... [--format prometheus|prometheusrule] [--tests DIR] [-o FILE]``

Reads RouteMonitors and annotated Routes/HTTPRoutes/Ingresses/Services, prints the generated rules: one plain
Prometheus rule file for all monitors, or one ``PrometheusRule`` object per monitor.
``--tile 30s`` shortens the long windows' tiles (test and demo stacks, ``alert_rules.tiles``).
``--tests DIR`` also writes, per monitor, its plain rule file and a ``promtool test rules``
document exercising it (``promtool test rules DIR/*.test.yml``). The plain rule file starts
with the SLI records every monitor shares (``alert_rules.shared``); the PrometheusRule objects
are the monitors' own, as the operator writes them. ``--operator`` prints route-monitor's own
alerts, the shared SLI records (at ``--tile``) and the shared-path rules (``--shared-path-*``)
instead: for a Prometheus without prometheus-operator, or standalone users. ``--no-shared-slis``
leaves the shared SLI records out: the operator writes them itself as a PrometheusRule
(``deploy/base/operator-rules.yaml`` is ``--format prometheusrule --no-shared-slis``).

Every problem is one line on stderr naming the file, the object and the field. Warnings are
printed and do not fail; any error fails the command (exit 1) and nothing is written. No
monitor in the input: exit 2. ``-`` reads the manifests from standard input.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from alert_rules import prometheus_rule_file, prometheus_rule_object, promtool_tests
from alert_rules.model import RuleDefaults
from alert_rules.operator_alerts import OperatorAlerting, operator_prometheus_rule, operator_rule_groups
from alert_rules.operator_fixtures import operator_promtool_tests
from alert_rules.path_rules import PathAlerting, path_rule_groups
from alert_rules.render import to_yaml, with_header
from alert_rules.shared import shared_rule_groups
from alert_rules.tiles import DEFAULT_TILE_MS
from route_monitor.cli import cliargs
from route_monitor.files import fileplan, manifests
from route_monitor.spec.monitor import MonitorSpec


def add_arguments(ru: argparse.ArgumentParser) -> None:
    cliargs.manifest_paths(ru, "*")
    ru.add_argument("--operator", action="store_true",
                    help="print route-monitor's own alerts (operator down, reconcile errors, lag...) instead")
    cliargs.rule_flags(ru)
    cliargs.tile_flag(ru)
    cliargs.path_flags(ru)
    ru.add_argument("--job", default="route-monitor", metavar="JOB",
                    help="with --operator: the scrape job of route-monitor's /metrics (default route-monitor)")
    ru.add_argument("--format", choices=("prometheus", "prometheusrule"), default="prometheus",
                    help="plain Prometheus rule groups (default) or PrometheusRule objects")
    ru.add_argument("--no-shared-slis", action="store_true",
                    help="with --operator: leave out the shared SLI groups (route-monitor-slis), which the "
                         "operator writes itself where prometheus-operator runs")
    ru.add_argument("--tests", metavar="DIR", help="also write promtool test fixtures for the generated rules here")
    ru.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")


@dataclass
class Loaded:
    monitors: list[MonitorSpec]
    problems: list[manifests.ManifestError]
    sources: dict[tuple[str, str], str] = field(default_factory=dict)
    """monitor key -> the manifest it came from"""

    @property
    def failed(self) -> bool:
        return any(not p.warning for p in self.problems)


def load(paths: Sequence[str], tile_ms: int = DEFAULT_TILE_MS) -> Loaded:
    """Manifests -> monitors, with every problem: the one pass ``check`` makes
    (:func:`route_monitor.files.fileplan.plan`: unreadable files, invalid specs, targets, credential
    files, findings for rules with ``tile_ms`` tiles), so ``rules`` refuses what ``check`` refuses."""
    planned = fileplan.plan(paths, fileplan.Options(cluster_targets=True, tile_ms=tile_ms))
    valid = {spec.key for spec in planned.valid}
    return Loaded(planned.valid, planned.problems,
                  {key: source for key, source in planned.sources.items() if key in valid})


def report(problems: Sequence[manifests.ManifestError], err: TextIO) -> None:
    for p in problems:
        print(p, file=err)


def rule_defaults(args: argparse.Namespace) -> RuleDefaults:
    """``--runbook-base-url``, ``--dashboard-base-url``, ``--rule-label`` (``operator`` and ``rules``)."""
    return RuleDefaults(runbook_base=args.runbook_base_url or RuleDefaults.runbook_base,
                        dashboard_base=args.dashboard_base_url or "", object_labels=tuple(args.rule_label))


def render(monitors: Sequence[MonitorSpec], fmt: str, defaults: RuleDefaults | None = None) -> str:
    d = defaults or RuleDefaults()
    slos = [d.apply(m.slo()) for m in monitors]
    if fmt == "prometheus":
        return prometheus_rule_file(slos)
    docs = [to_yaml(prometheus_rule_object(s, extra_labels=d.object_labels)) for s in slos]
    return with_header("---\n" + "---\n".join(docs)) if docs else with_header("")


def write_tests(monitors: Sequence[MonitorSpec], folder: Path, defaults: RuleDefaults | None = None) -> list[Path]:
    """Per monitor: ``<ns>_<name>.rules.yml`` and ``<ns>_<name>.test.yml`` (promtool)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for m in monitors:
        slo = (defaults or RuleDefaults()).apply(m.slo())
        rules = folder / f"{slo.namespace}_{slo.name}.rules.yml"
        tests = folder / f"{slo.namespace}_{slo.name}.test.yml"
        rules.write_text(prometheus_rule_file([slo]), encoding="utf-8")
        tests.write_text(with_header(to_yaml(promtool_tests(slo, rules.name))), encoding="utf-8")
        written += [rules, tests]
    return written


def path_settings(args: argparse.Namespace) -> PathAlerting:
    """``--shared-path-*`` and the runbook/dashboard bases (``rules`` and ``standalone``)."""
    return PathAlerting(min_monitors=args.shared_path_min_monitors, min_ratio=args.shared_path_min_ratio,
                        hold=args.shared_path_hold,
                        runbook_base=getattr(args, "runbook_base_url", None) or RuleDefaults.runbook_base,
                        dashboard_base=getattr(args, "dashboard_base_url", None) or "")


def run_operator(args: argparse.Namespace, out: TextIO) -> int:
    """``rules --operator``: route-monitor's own alerts, the shared SLI groups (unless
    ``--no-shared-slis``) and the shared-path rules (for the whole installation), with promtool
    fixtures under ``--tests``."""
    settings = OperatorAlerting(job=args.job, runbook_base=args.runbook_base_url or RuleDefaults.runbook_base)
    shared = [] if args.no_shared_slis else shared_rule_groups(args.tile)
    groups = [*operator_rule_groups(settings), *shared, *path_rule_groups(path_settings(args))]
    if args.format == "prometheus":
        text = with_header(to_yaml({"groups": groups}))
    else:
        obj = operator_prometheus_rule(settings)
        obj["spec"]["groups"] = groups
        text = with_header("---\n" + to_yaml(obj))
    if args.tests:
        folder = Path(args.tests)
        folder.mkdir(parents=True, exist_ok=True)
        rules = folder / "route-monitor-operator.rules.yml"
        tested = [*operator_rule_groups(settings), *path_rule_groups(path_settings(args))]  # shared: per monitor
        rules.write_text(with_header(to_yaml({"groups": tested})), encoding="utf-8")
        (folder / "route-monitor-operator.test.yml").write_text(
            with_header(to_yaml(operator_promtool_tests(settings, rules.name))), encoding="utf-8")
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        out.write(text)
    return 0


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    if args.operator:
        if args.paths:
            cliargs.error("rules", "--operator prints route-monitor's own alerts and takes no PATH", err)
            return cliargs.USAGE
        return run_operator(args, out)
    if not args.paths:
        cliargs.error("rules", "give a PATH of manifests (or --operator for route-monitor's own alerts)", err)
        return cliargs.USAGE
    loaded = load(cliargs.stdin_paths(args.paths), args.tile)
    report(loaded.problems, err)
    if loaded.failed:
        return cliargs.FINDINGS
    if not loaded.monitors:
        cliargs.error("rules", f"nothing to monitor in {' '.join(args.paths)}: no RouteMonitor and no annotated "
                      "Route, HTTPRoute, Ingress or Service found", err)
        return cliargs.USAGE
    defaults = replace(rule_defaults(args), tile_ms=args.tile, evaluation_ms=args.evaluation_interval)
    text = render(loaded.monitors, args.format, defaults)
    if args.tests:
        write_tests(loaded.monitors, Path(args.tests), defaults)
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        out.write(text)
    return cliargs.OK
