"""The whole test suite's wall time and peak memory for a number of parallel workers.

    .venv/bin/python -m benchmarks.suite_time --workers 4 [--out run.json] [-- PYTEST ARGS]

Runs ``bash scripts/test.sh`` (bootstrap, then pytest) with ``RM_SUITE_WORKERS``, sampling every
2 s the resident memory of the whole process tree (pytest, its workers, every control plane,
Prometheus and operator they start), and prints one JSON line: wall seconds, peak and mean RSS
(MiB; pages shared between processes are counted once per process, so this is an upper bound),
the machine's load average at the start and end, pytest's exit code and its summary line.
Results: ``benchmarks/RESULTS-suite.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def tree_rss_mib(root: int) -> float:
    """Resident memory of ``root`` and all its descendants, MiB."""
    tree, todo, total = _children(), [root], 0
    while todo:
        pid = todo.pop()
        todo.extend(tree.get(pid, []))
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        m = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
        total += int(m.group(1)) if m else 0
    return total / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", type=int, required=True, help="RM_SUITE_WORKERS (0: serial)")
    parser.add_argument("--out", type=Path, help="also append the JSON line to this file")
    parser.add_argument("--log", type=Path, help="pytest's output (default: the terminal)")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to pytest")
    args = parser.parse_args()
    env = {**os.environ, "RM_SUITE_WORKERS": str(args.workers)}
    log = open(args.log, "w") if args.log else None  # noqa: SIM115 - closed below
    load_start = os.getloadavg()
    start = time.monotonic()
    proc = subprocess.Popen(["bash", "scripts/test.sh", *args.pytest_args], cwd=ROOT, env=env,
                            stdout=log or None, stderr=subprocess.STDOUT if log else None)
    samples: list[float] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(2):
            samples.append(tree_rss_mib(proc.pid))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    code = proc.wait()
    wall = time.monotonic() - start
    done.set()
    sampler.join()
    summary = ""
    if log:
        log.close()
        final = re.compile(r"^=* ?(\d+ (passed|failed|error|errors|skipped)\b.* in [\d.]+s.*?) ?=*$")
        lines = [m.group(1) for line in args.log.read_text(errors="replace").splitlines() if (m := final.match(line))]
        summary = lines[-1] if lines else ""
    row = {"workers": args.workers, "wall_s": round(wall), "peak_rss_mib": round(max(samples, default=0)),
           "mean_rss_mib": round(sum(samples) / len(samples)) if samples else 0, "exit": code,
           "load_start": [round(x, 1) for x in load_start], "load_end": [round(x, 1) for x in os.getloadavg()],
           "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "summary": summary}
    line = json.dumps(row)
    print(line)
    if args.out:
        with args.out.open("a") as f:
            f.write(line + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
