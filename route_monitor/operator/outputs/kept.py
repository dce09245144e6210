"""Objects the operator keeps at fixed names (the per-namespace scrape objects, the shared rule):
written through :func:`route_monitor.kube.apply.apply` and remembered as written.

What was last written (uid, resourceVersion, the object's canonical JSON) is kept per key, so an
unchanged object costs no request, a changed one is replaced pinned to the version written, and
one changed or removed by someone else meanwhile is forgotten and checked again at the next
write. A foreign object at a name (not created by route-monitor) is never written over; the first
time each key meets one, :attr:`Written.first_report` says so, for the caller to report once.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from route_monitor.kube import ownership
from route_monitor.kube.apply import Kind, Outcome, apply

Key = tuple[str, str]
Same = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]


@dataclass(frozen=True)
class Written:
    outcome: Outcome | None
    """None: unchanged since it was last written (no request made)."""
    stored: dict[str, Any] | None = None
    first_report: bool = False
    """A foreign object holds the name, and this key had not met one since it was last ours."""


class KeptObjects:
    def __init__(self, same: Same) -> None:
        self._same = same
        self._known: dict[Key, tuple[str, str, str]] = {}
        """key -> (uid, resourceVersion, desired as written): unchanged means no request."""
        self._reported: set[Key] = set()

    def forget(self, key: Key) -> None:
        """Check ``key``'s object again at the next write (removed, or written by someone else)."""
        self._known.pop(key, None)

    def version(self, key: Key) -> str | None:
        """The resourceVersion last written or found equal, None when not known."""
        known = self._known.get(key)
        return None if known is None else known[1]

    async def write(self, key: Key, obj: Mapping[str, Any], kind: Kind, *,
                    found: Mapping[str, Any] | None = None) -> Written:
        """Create or update ``obj`` at ``key`` (``found``: the object at its name, already read)."""
        desired = json.dumps(obj, sort_keys=True)
        known = self._known.get(key)
        if known is not None and known[2] == desired:
            return Written(None)
        done = await apply(kind, obj, found=found, pinned=None if known is None else known[:2], same=self._same)
        if done.outcome is Outcome.FOREIGN:
            first = key not in self._reported
            self._reported.add(key)
            return Written(done.outcome, done.stored, first_report=first)
        if done.stored is None:  # changed, replaced or removed meanwhile: read it again next time
            self._known.pop(key, None)
            return Written(done.outcome)
        if known is None and done.outcome is not Outcome.CREATED:  # ours again at that name
            self._reported.discard(key)
        self._known[key] = (ownership.uid_of(done.stored), ownership.version_of(done.stored), desired)
        return Written(done.outcome, done.stored)
