"""The machine description and the Markdown tables of a benchmark run."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    cpuinfo = Path("/proc/cpuinfo").read_text()
    model = next((line.split(":", 1)[1].strip() for line in cpuinfo.splitlines() if line.startswith("model name")), "?")
    mem_kb = int(next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal:")))
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).parent, check=False).stdout.strip()
    except OSError:
        commit = ""
    commit = commit or os.environ.get("BENCH_COMMIT", "?")  # a `git archive` copy has no .git
    try:
        bbe = subprocess.run(["/usr/bin/prometheus-blackbox-exporter", "--version"], capture_output=True,
                             text=True, check=False)
        bbe = (bbe.stdout or bbe.stderr).splitlines()[0]
    except (OSError, IndexError):
        bbe = "?"
    return {"nproc": os.cpu_count(), "cpu_model": model, "mem_gib": round(mem_kb / 2**20, 1),
            "kernel": platform.release(), "python": platform.python_version(), "git_commit": commit,
            "blackbox_exporter": bbe}


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{1000 * v:.1f}"


def _f(v: float | None, fmt: str = ".2f") -> str:
    return "-" if v is None else format(v, fmt)


def short(row: dict[str, Any]) -> str:
    return (f"{row['achieved_per_s']:.0f}/s of {row['scheduled_per_s']:.0f}/s, "
            f"{_f(row['cpu_ms_per_probe'])} ms CPU/probe, lag p99 {_ms(row['lag_p99_s'])} ms, "
            f"answer p99 {_ms(row.get('latency_p99_s'))} ms, "
            f"success {row['success_ratio']:.3f}, RSS {row['rss_mb']:.0f} MB, "
            f"{'sustained' if row['sustained'] else 'NOT sustained'}")


HEADER = ("| scenario | engine | probes/s scheduled | achieved | CPU s / 1,000 probes (= ms / probe) "
          "| probes/s per core | lag p50 ms | lag p99 ms | answer p99 ms | RSS MB | success | kept up |\n"
          "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")


def _loads(result: dict[str, Any]) -> str:
    values = [r["loadavg_before"] for r in result["rows"]]
    return f"{min(values):.1f}-{max(values):.1f}" if values else "-"


def markdown(result: dict[str, Any]) -> str:
    m = result["machine"]
    out = [f"Run {result['started_utc']} UTC, {result['duration_s'] / 60:.1f} min, `{result['command']}`, "
           f"commit {m['git_commit']}; {m['nproc']} CPUs ({m['cpu_model']}), {m['mem_gib']} GiB, "
           f"Linux {m['kernel']}, Python {m['python']}, {m['blackbox_exporter']}; nice {result.get('nice', 0)}, "
           f"load average before each run {_loads(result)}.\n\n", HEADER]
    for r in result["rows"]:
        out.append(f"| {r['scenario']} | {r['engine']} | {r['scheduled_per_s']:.0f} | {r['achieved_per_s']:.0f} "
                   f"| {_f(r['cpu_ms_per_probe'])} | {_f(r['probes_per_cpu_second'], '.0f')} "
                   f"| {_ms(r['lag_p50_s'])} | {_ms(r['lag_p99_s'])} | {_ms(r.get('latency_p99_s'))} "
                   f"| {r['rss_mb']:.0f} | {r['success_ratio']:.3f} | {'yes' if r['sustained'] else 'no'} |\n")
    out.append("\n| scenario | engine | CPU per probe, ours / blackbox_exporter |\n|---|---|---:|\n")
    by: dict[str, dict[str, dict[str, Any]]] = {}
    for r in result["rows"]:
        by.setdefault(r["scenario"], {})[r["engine"]] = r
    for name, sides in by.items():
        b = sides.get("blackbox_exporter")
        for eng, a in sides.items():  # ours, and a --baseline checkout's (route-monitor@COMMIT)
            if eng.startswith("route-monitor") and b and a["cpu_ms_per_probe"] and b["cpu_ms_per_probe"]:
                out.append(f"| {name} | {eng} | {a['cpu_ms_per_probe'] / b['cpu_ms_per_probe']:.2f} |\n")
    best = {eng: max((r["scheduled_per_s"] for r in result["rows"] if r["engine"] == eng
                      and r["scenario"].startswith("max@") and r["sustained"]), default=None)
            for eng in ("route-monitor", "blackbox_exporter")}
    out.append("\nHighest stepped rate kept up (5,000 targets): "
               + ", ".join(f"{eng} {_f(v, '.0f')}/s" for eng, v in best.items()) + ".\n")
    return "".join(out)
