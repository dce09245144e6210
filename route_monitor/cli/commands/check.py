"""``route-monitor check PATH...``: validate manifests and explain each monitor's alerts.

stdout: per monitor, where it comes from and what its alerts mean at its probe interval
(``alert_rules.explain``: bad probes and minutes of full outage that trip each alert, when it
resolves, and the findings). stderr: one line per problem naming the file, the object and the
field; an invalid object gets one line per field error, all at once, and the summary's
``error(s)`` counts these lines. Exits 1 when there is an error (a warning too with
``--strict``), 2 when the input holds nothing to monitor. ``-o json`` prints the monitors and
the findings as one JSON object on stdout instead (:mod:`route_monitor.cli.checkjson`).
The files are read once, and targets resolved as ``standalone`` resolves them
(:func:`route_monitor.files.fileplan.plan`), except that a target (or a Gateway) not in the files is
a warning: manifests meant for the operator leave it to the cluster.
Contract 9: each monitor's warm-up, pause and the start of its next maintenance window, as an
absolute date and time with its offset (on the window's own clock).
Each monitor's vantages and quorum (:mod:`route_monitor.spec.vantages`).
Contract 11: each monitor's paths (the shared components a shared outage pages once for); a
target left to the cluster shows its declared paths, the cluster adds those it derives.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import TextIO

from alert_rules import durations, explain
from route_monitor.cli import checkjson, cliargs
from route_monitor.cli.commands.rules import report
from route_monitor.files import fileplan
from route_monitor.spec import maintenance
from route_monitor.spec import protocol as protocolspec
from route_monitor.spec.monitor import MonitorSpec, UrlTarget


def add_arguments(parser: argparse.ArgumentParser) -> None:
    cliargs.manifest_paths(parser, "+")
    cliargs.output_flag(parser)
    parser.add_argument("--strict", action="store_true",
                        help="warnings fail too (exit 1), e.g. a target not in the files")


def exclusions(spec: MonitorSpec, now: float) -> str:
    """Contract 9 lines for one monitor: warm-up, pause, next window ("" when all defaults)."""
    lines = []
    if spec.paused:
        lines.append("  paused: probes go on, no result counts in the SLO")
    if spec.maintenance:
        found = maintenance.upcoming(spec.maintenance, now)
        when = (f"next starts {maintenance.local_time(*found)} ({found[0].describe()})" if found
                else "none to come")
        lines.append(f"  maintenance: {len(spec.maintenance)} window(s), {when}")
    if spec.probe.warmup_ms != 0:
        lines.append(f"  warm-up: {durations.format_ms(spec.probe.warmup_ms)} after creation or a URL change")
    return "".join(line + "\n" for line in lines)


def speaks(spec: MonitorSpec, planned: fileplan.Plan) -> str:
    """Which protocol the monitor's probes speak, and why (the spec's, its Service port's, HTTP)."""
    resolved = planned.monitors.get(spec.key)
    found = resolved.target if resolved is not None else None
    return protocolspec.describe(spec.probe.protocol, found.protocol if found else None)


def vantages_line(spec: MonitorSpec) -> str:
    """``  vantages: 3 locations, a failure counts when 2 of them see it`` (nothing for one)."""
    v = spec.probe.vantages
    return "" if v.single else f"  vantages: {v.describe()}\n"


def paths_line(spec: MonitorSpec, planned: fileplan.Planned | None) -> str:
    """``  paths: dns:cluster, router:default`` (what a shared outage of one pages once for)."""
    if planned is not None:
        shown = ", ".join(planned.target.paths) or "none"
        return f"  paths: {shown}\n"
    declared = ", ".join(spec.paths)
    return (f"  paths: {declared + ' ' if declared else ''}(and those the cluster shows: router, ingress class, "
            "Gateway, DNS)\n")


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None,
        now: float | None = None) -> int:
    """Exit 0: valid (warnings allowed unless ``--strict``); 1: errors (or warnings with
    ``--strict``); 2: nothing to monitor in the input."""
    out, err = out or sys.stdout, err or sys.stderr
    planned = fileplan.plan(cliargs.stdin_paths(args.paths), fileplan.Options(cluster_targets=True))
    monitors, problems = planned.valid, planned.problems
    errors = sum(not p.warning for p in problems)
    warnings = len(problems) - errors
    nothing = not monitors and not errors
    if getattr(args, "output", "text") == "json":
        out.write(checkjson.document(monitors, planned.sources, problems,
                                     {m.key: speaks(m, planned) for m in monitors}))
    else:
        at = time.time() if now is None else now
        for spec in monitors:
            t = spec.target
            target = t.url if isinstance(t, UrlTarget) else f"{t.kind} {t.name}"
            path = f", path {spec.path}" if spec.path else ""
            out.write(f"{explain(spec.slo()).rstrip()}\n  target: {target}{path}\n  protocol: "
                      f"{speaks(spec, planned)}\n{vantages_line(spec)}"
                      f"{paths_line(spec, planned.monitors.get(spec.key))}"
                      f"{exclusions(spec, at)}\n")
        report(problems, err)
        if not nothing:
            print(f"{len(monitors)} monitor(s), {errors} error(s), {warnings} warning(s)", file=err)
    if nothing:
        cliargs.error("check", f"nothing to monitor in {' '.join(args.paths)}: no RouteMonitor and no annotated "
                      "Route, HTTPRoute, Ingress or Service found", err)
        return cliargs.USAGE
    return cliargs.FINDINGS if errors or (warnings and getattr(args, "strict", False)) else cliargs.OK
