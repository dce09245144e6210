"""``route-monitor standalone`` as a user starts it, up to the point where it serves /metrics."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def started(folder: Path) -> Iterator[list[str]]:
    """Run ``standalone`` on ``folder`` and yield the stderr lines it printed until it served
    /metrics (what a user reads at start-up); asserts it is still running then."""
    proc = subprocess.Popen([sys.executable, "-m", "route_monitor.cli", "standalone", str(folder),
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
