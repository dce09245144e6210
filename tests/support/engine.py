"""The probe engine in tests:

- :class:`RecordingEngine`: a stand-in where the reconciler is under test, not probing: it
  records which monitors the reconciler set (and to which URL) and removed;
- :class:`ResultsEngine`: the real engine in a registry of its own, keeping every result, for
  tests of one monitor ``shop/web``.
"""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client import CollectorRegistry

from route_monitor.probe.engine import ProbeEngine
from route_monitor.probe.metrics import ProbeMetrics
from route_monitor.probe.result import ProbeResult


class RecordingEngine:
    def __init__(self) -> None:
        self.monitors: dict[tuple[str, str], str] = {}

    def set_monitor(self, spec: Any, target: Any) -> None:
        self.monitors[spec.key] = target.url

    def remove_monitor(self, key: tuple[str, str]) -> None:
        self.monitors.pop(key, None)


class ResultsEngine:
    """``engine_args``: more :class:`ProbeEngine` arguments (a prober, a canary); ``registry``:
    one the caller already registered on (e.g. the canary's gauge)."""

    def __init__(self, registry: CollectorRegistry | None = None, **engine_args: Any) -> None:
        self.registry = registry or CollectorRegistry()
        self.results: list[ProbeResult] = []
        self.engine = ProbeEngine(metrics=ProbeMetrics(self.registry), on_result=self.results.append, **engine_args)

    def value(self, metric: str, **labels: str) -> float | None:
        """The sample of ``shop/web``'s series ``metric`` with ``labels``."""
        return self.registry.get_sample_value(metric, {"namespace": "shop", "monitor": "web", **labels})

    async def probes(self, n: int) -> list[ProbeResult]:
        """The next ``n`` results (10 s at most)."""
        start = len(self.results)
        async with asyncio.timeout(10):
            while len(self.results) < start + n:
                await asyncio.sleep(0.02)
        return self.results[start:start + n]
