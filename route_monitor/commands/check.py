"""``route-monitor check PATH...``: validate manifests and explain each monitor's alerts.

stdout: per monitor, where it comes from and what its alerts mean at its probe interval
(``alert_rules.explain``: bad probes and minutes of full outage that trip each alert, when it
resolves, and the findings). stderr: one line per problem naming the file, the object and the
field. Exits 1 when there is an error (warnings do not fail).
"""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from alert_rules import explain
from route_monitor import filecreds
from route_monitor.commands.rules import load, report


def run(args: argparse.Namespace, *, out: TextIO | None = None, err: TextIO | None = None) -> int:
    out, err = out or sys.stdout, err or sys.stderr
    loaded = load(args.paths)
    loaded.problems.extend(filecreds.problems(loaded.monitors, loaded.sources))
    for spec in loaded.monitors:
        target = spec.target.url or f"{spec.target.kind} {spec.target.name}"
        path = f", path {spec.path}" if spec.path else ""
        out.write(f"{explain(spec.slo()).rstrip()}\n  target: {target}{path}\n\n")
    report(loaded.problems, err)
    errors = sum(not p.warning for p in loaded.problems)
    warnings = len(loaded.problems) - errors
    print(f"{len(loaded.monitors)} monitor(s), {errors} error(s), {warnings} warning(s)", file=err)
    return 1 if errors or not loaded.monitors else 0
