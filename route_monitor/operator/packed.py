"""Objects the operator holds but rarely reads, kept as compact JSON bytes.

The world holds every Route, Service, Ingress and HTTPRoute in scope: a monitor may name any of
them as its target at any time, and the watch delivers them all anyway. Most carry no objective
and are never read. As dicts (trimmed and interned, ``world.trimmed``) a typical Service costs
~2.0 KiB of heap; as the JSON of the same trimmed object, ~0.8 KiB (``tests/unit/alert_rules/test_world_packed.py``
measures it). Such an object is decoded when something reads it: a RouteMonitor's target
resolution (a few reconciles of that monitor), or a change event compared with what was held.

What is packed drops ``metadata.resourceVersion``: nothing reads a source's version, and without
it an unchanged object relisted after a reconnect packs to the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, check_circular=False).encode


def pack(obj: Mapping[str, Any]) -> bytes:
    meta = obj.get("metadata") or {}
    if "resourceVersion" in meta:
        obj = {**obj, "metadata": {k: v for k, v in meta.items() if k != "resourceVersion"}}
    return _encode(obj).encode()


def unpack(value: dict[str, Any] | bytes) -> dict[str, Any]:
    """The object as held: a dict as it is, packed bytes decoded (a new dict per call)."""
    if isinstance(value, bytes):
        decoded: dict[str, Any] = json.loads(value)
        return decoded
    return value
