"""What a :class:`~route_monitor.kube.reflector.Reflector` lists and watches (a kind, in one namespace
or cluster-wide, narrowed by label and field selectors, or one object by name), the changes it
reports, and the one backoff policy every watch of the operator follows.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from route_monitor.kube.patience import DELAYS
from route_monitor.kube.rest import path

Key = tuple[str, str]
"""(namespace, or "" cluster-wide; name)"""


class Change(enum.Enum):
    LISTED = "LISTED"
    """In a (re)list: there now, changed or not."""
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    VANISHED = "VANISHED"
    """Known before a relist and not in it: deleted while not watched."""


@dataclass(frozen=True)
class Selector:
    labels: Mapping[str, str] = field(default_factory=dict)
    fields: Mapping[str, str] = field(default_factory=dict)

    def query(self) -> dict[str, str]:
        query = {}
        if self.labels:
            query["labelSelector"] = ",".join(f"{k}={v}" for k, v in sorted(self.labels.items()))
        if self.fields:
            query["fieldSelector"] = ",".join(f"{k}={v}" for k, v in sorted(self.fields.items()))
        return query


@dataclass(frozen=True, kw_only=True)
class Watched:
    """What one reflector lists and watches: a kind, in one namespace or cluster-wide (None)."""

    api_version: str
    kind: str
    plural: str
    namespace: str | None = None
    selector: Selector = Selector()
    name: str | None = None
    """One object of this name only (read with a GET, watched with ``metadata.name=<name>``)."""

    def collection(self) -> str:
        group, _, version = self.api_version.rpartition("/")
        return path(group, version, self.plural, self.namespace)

    def query(self) -> dict[str, str]:
        fields = {**self.selector.fields, **({"metadata.name": self.name} if self.name is not None else {})}
        return Selector(self.selector.labels, fields).query()

    @property
    def subject(self) -> str:
        """How the log lines name it: ``Route watch in namespace x``, ``Secret x/y watch``."""
        return f"{self.kind} {self.namespace}/{self.name} watch" if self.name is not None else \
            f"{self.kind} watch{where(self.namespace)}"


@dataclass(frozen=True)
class Backoff:
    delays: tuple[float, ...] = DELAYS
    """Seconds before each next try after a failure; the last repeats. An answer starts again."""
    not_served: float = 60.0
    """Seconds between two tries of an API never served during this run."""

    def delay(self, failures: int) -> float:
        return self.delays[min(failures, len(self.delays) - 1)]


def key_of(obj: Mapping[str, Any]) -> Key:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def where(namespace: str | None) -> str:
    return f" in namespace {namespace}" if namespace else ""
