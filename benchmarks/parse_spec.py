"""What parsing a RouteMonitor costs: ``parse_routemonitor`` on a valid and on an invalid spec.

The operator parses every monitor at each reconcile and every monitor once per SLO read
(``operator.slo_loop``), on the event loop; this says how long that takes per monitor.
``--peer DIR`` runs the same timing on another checkout of the project (e.g. a ``git worktree``
of the previous commit, or ``git archive main | tar -x -C DIR``) in a subprocess, alternating with this one, so both sides see the same
load; the ratio is what to quote (RESULTS-parse.md).

    .venv/bin/python -m benchmarks.parse_spec [--peer DIR] [--rounds 3] [--number 20000]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import subprocess
import sys
import timeit
from typing import Any

VALID: dict[str, Any] = {
    "apiVersion": "routemonitor.io/v1alpha1", "kind": "RouteMonitor", "metadata": {"name": "shop", "namespace": "web"},
    "spec": {"target": {"url": "https://shop.example/"},
             "slo": {"availability": "99.9", "latency": {"threshold": "300ms", "objective": "99"}},
             "probe": {"interval": "30s", "timeout": "5s", "expectedStatus": ["200-299", "404"],
                       "headers": {"X-Team": "web"}},
             "alerting": {"labels": {"team": "web"}},
             "maintenance": [{"start": "2026-12-01T02:00:00Z", "end": "2026-12-01T03:00:00Z"}]}}
INVALID: dict[str, Any] = {**VALID, "spec": {
    "target": {"url": "https://shop.example:99999/"}, "slo": {"availability": "101"},
    "probe": {"interval": "5x", "method": "PUT", "expectedStatus": ["700"]}}}


def measure(number: int) -> dict[str, float]:
    """Microseconds per parse (best of 5 repeats), in this process."""
    from alert_rules.model import InvalidSpec
    from route_monitor.spec.monitor import parse_routemonitor

    def invalid() -> None:
        with contextlib.suppress(InvalidSpec):
            parse_routemonitor(INVALID)

    out = {}
    for what, call in (("valid", lambda: parse_routemonitor(VALID)), ("invalid", invalid)):
        call()
        out[what] = min(timeit.repeat(call, number=number, repeat=5)) / number * 1e6
    return out


def _run(root: str, number: int) -> dict[str, float]:
    """:func:`measure` in a fresh process on the code under ``root`` (the peer may have no benchmarks/)."""
    env = {**os.environ, "PYTHONPATH": root, "PYTHONDONTWRITEBYTECODE": "1"}
    code = (f"import json, runpy; m = runpy.run_path({os.path.abspath(__file__)!r}); "
            f"print(json.dumps(m['measure']({number})))")
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=root, capture_output=True, text=True,
                          check=True)
    return dict(json.loads(done.stdout))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="benchmarks.parse_spec")
    ap.add_argument("--peer", help="another checkout of the project to compare with")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--number", type=int, default=20000)
    args = ap.parse_args(argv)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    sides = {"this": here, **({"peer": os.path.abspath(args.peer)} if args.peer else {})}
    best: dict[str, dict[str, float]] = {}
    for _ in range(args.rounds):
        for side, root in sides.items():
            for what, us in _run(root, args.number).items():
                best.setdefault(side, {})[what] = min(us, best.get(side, {}).get(what, us))
    print(f"{platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    for what in ("valid", "invalid"):
        row = f"{what:8} this {best['this'][what]:6.1f} us/parse"
        if "peer" in best:
            row += f", peer {best['peer'][what]:6.1f} us/parse, ratio {best['this'][what] / best['peer'][what]:.2f}"
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
