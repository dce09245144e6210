"""A stand-in for the probe engine where the reconciler is under test, not probing: it records
which monitors the reconciler set (and to which URL) and removed."""

from __future__ import annotations

from typing import Any


class RecordingEngine:
    def __init__(self) -> None:
        self.monitors: dict[tuple[str, str], str] = {}

    def set_monitor(self, spec: Any, target: Any) -> None:
        self.monitors[spec.key] = target.url

    def remove_monitor(self, key: tuple[str, str]) -> None:
        self.monitors.pop(key, None)
