"""``route-monitor standalone`` as a user starts it, up to the point where it serves /metrics."""

from __future__ import annotations

import re
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.support.net import wait_for


def routemonitor(name: str, url: str, *, probe: str = "interval: 1s, timeout: 500ms",
                 slo: str = 'availability: "99.5"') -> str:
    """One RouteMonitor of namespace ``shop`` as a user writes it; ``probe`` and ``slo`` are the
    inside of their flow mappings."""
    return textwrap.dedent(f"""\
        apiVersion: routemonitor.io/v1alpha1
        kind: RouteMonitor
        metadata: {{name: {name}, namespace: shop}}
        spec:
          target: {{url: "{url}"}}
          probe: {{{probe}}}
          slo: {{{slo}}}
        """)


@contextmanager
def started(folder: Path) -> Iterator[list[str]]:
    """Run ``standalone`` on ``folder`` and yield the stderr lines it printed until it served
    /metrics (what a user reads at start-up); asserts it is still running then."""
    proc = subprocess.Popen([sys.executable, "-m", "route_monitor.cli.main", "standalone", str(folder),
                             "--metrics-address", "127.0.0.1:0"], stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        lines = []
        for line in proc.stderr:
            lines.append(line)
            if " metrics: http" in line:
                break
        assert proc.poll() is None, "".join(lines)
        yield lines
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class Running:
    """A ``standalone`` process with its stderr in a file (read while it runs) and its HTTP
    endpoints at :attr:`base` (port chosen by the process, read from its ``metrics:`` line)."""

    def __init__(self, folder: Path, *extra: str) -> None:
        self.log_path = folder.parent / f"{folder.name}-standalone.log"
        self.proc = subprocess.Popen([sys.executable, "-m", "route_monitor.cli.main", "standalone", str(folder),
                                      "--metrics-address", "127.0.0.1:0", *extra],
                                     stderr=self.log_path.open("w"), text=True)
        self.base = ""

    def start(self) -> Running:
        wait_for(lambda: self.proc.poll() is not None or "/metrics" in self.log, timeout=30,
                 what="standalone serving /metrics")
        assert self.proc.poll() is None, self.log
        found = re.search(r"(http://127\.0\.0\.1:\d+)/metrics", self.log)
        assert found is not None, self.log
        self.base = found.group(1)
        return self

    @property
    def log(self) -> str:
        return self.log_path.read_text()

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.base + path, timeout=5) as r:
                return r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode()

    def samples(self) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
        _, text = self.get("/metrics")
        return {(s.name, frozenset(s.labels.items())): s.value
                for f in text_string_to_metric_families(text) for s in f.samples}

    def value(self, name: str, **labels: str) -> float | None:
        return self.samples().get((name, frozenset(labels.items())))

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout=10)
