"""What reading and checking manifest files costs: ``route-monitor check`` on N RouteMonitors.

``check``, ``rules`` and ``standalone`` (at start and at each reload) read files the same way:
documents one by one, duplicate keys, unknown fields, the CRD's schema (``jsonschema``), the
parser. This times the whole command, in a fresh process, on one file of ``--monitors``
RouteMonitors (URL target, probe, latency SLO); ``--peer DIR`` runs the same command from
another checkout (e.g. ``git archive main | tar -x -C DIR``), rounds alternating so both see
the same load. Peak memory (the child's ru_maxrss) is reported too.

    .venv/bin/python -m benchmarks.check_files [--peer DIR] [--monitors 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = """apiVersion: routemonitor.io/v1alpha1
kind: RouteMonitor
metadata: {{name: m{i}, namespace: web}}
spec:
  target: {{url: 'https://m{i}.example'}}
  probe: {{interval: 30s, expectedStatus: ['200']}}
  slo: {{availability: '99.9', latency: {{threshold: 500ms, objective: '99'}}}}
"""
RUN = ("import atexit, resource, sys; sys.path.insert(0, sys.argv.pop(1)); "
       "atexit.register(lambda: print('maxrss', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)); "
       "from route_monitor.cli.main import main; sys.exit(main(sys.argv[1:]))")


def once(tree: Path, path: Path) -> tuple[float, int]:
    """(seconds, peak KiB) of one ``check`` run from ``tree``."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", RUN, str(tree), "check", str(path)], capture_output=True, text=True)
    took = time.perf_counter() - start
    assert done.returncode == 0, done.stderr[-2000:]
    return took, int(done.stderr.rsplit("maxrss ", 1)[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", type=Path)
    parser.add_argument("--monitors", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "monitors.yaml"
        path.write_text("---\n".join(DOC.format(i=i) for i in range(args.monitors)))
        print(f"# check on {args.monitors} RouteMonitors; {platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} cores, Python {platform.python_version()}, load {os.getloadavg()[0]:.1f}")
        print("| round | this (s) | peer (s) | ratio | this (MiB) | peer (MiB) |\n"
              "| ---: | ---: | ---: | ---: | ---: | ---: |")
        for r in range(1, args.rounds + 1):
            ours, our_kib = once(ROOT, path)
            theirs, their_kib = once(args.peer, path) if args.peer else (float("nan"), 0)
            print(f"| {r} | {ours:.2f} | {theirs:.2f} | {ours / theirs:.2f} | {our_kib / 1024:.0f} | "
                  f"{their_kib / 1024:.0f} |")
        print(f"# load at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
