"""RSS after each import, in one fresh process (issue 16's idle-memory floor).

    .venv/bin/python -m benchmarks.import_floor [MODULE ...]

Default: what any kopf operator loads (Python, ssl, asyncio, aiohttp, kopf), then what
route-monitor's operator adds. Each line: the module, the RSS it added, the RSS so far (MiB).
"""

from __future__ import annotations

import importlib
import sys

DEFAULT = ("ssl", "asyncio", "aiohttp", "kopf", "yaml", "prometheus_client", "httpx2", "lightkube", "msgspec",
           "cryptography.x509", "regex", "route_monitor.probe.engine", "route_monitor.cli.commands.operator")


def rss_mib() -> float:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def main() -> None:
    before = rss_mib()
    print(f"{'python ' + sys.version.split()[0]:45s}          {before:6.1f}")
    for module in sys.argv[1:] or DEFAULT:
        importlib.import_module(module)
        now = rss_mib()
        print(f"{module:45s} +{now - before:5.1f}  = {now:6.1f}")
        before = now


if __name__ == "__main__":
    main()
