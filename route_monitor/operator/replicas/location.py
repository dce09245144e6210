"""Where this process probes from (Contract 12): ``--location``, else its Node's zone, else ``cluster``.

In a pod, ``$NODE_NAME`` (the downward API's ``spec.nodeName``, set in ``deploy/``) names the Node
whose ``topology.kubernetes.io/zone`` label is the location; reading it needs ``get`` on nodes.
A Node without the label, or one that cannot be read (no RBAC, no ``$NODE_NAME``), gives
``cluster``, and the operator says so in one log line. ``standalone`` knows no Node: only
``--location`` gives it one (a remote vantage), and without it its series carry no location.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from alert_rules import names

DEFAULT = "cluster"
_VALID = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?$")
"""A Kubernetes label value (zones are, e.g. ``eu-west-1a``), so it fits a Lease annotation, a
status key and a Prometheus label alike."""


def flag_value(value: str) -> str:
    """``--location``'s argparse type."""
    if not _VALID.match(value):
        raise argparse.ArgumentTypeError(f"{value!r} is not a location: 1-63 letters, digits, '.', '_' or '-', "
                                         "starting and ending with a letter or digit (e.g. eu-west-1a, office-paris)")
    return value


def add_flag(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--location", type=flag_value, metavar="NAME",
                        help="where this process probes from: the location label of its series and of its "
                             f"monitors' status (default: {default})")


def zone_of(node: Mapping[str, Any]) -> str | None:
    zone = str(((node.get("metadata") or {}).get("labels") or {}).get(names.NODE_ZONE_LABEL) or "")
    return zone if _VALID.match(zone) else None


async def resolve(flag: str | None, node_name: str | None,
                  get: Callable[[str], Awaitable[Mapping[str, Any]]]) -> tuple[str, str]:
    """(location, how it was found); ``get(path)`` reads an API object (any error: not found)."""
    if flag:
        return flag, "--location"
    if not node_name:
        return DEFAULT, "no --location and no $NODE_NAME"
    try:
        node = await get(f"/api/v1/nodes/{node_name}")
    except Exception as e:
        return DEFAULT, f"Node {node_name} could not be read ({str(e)[:200]})"
    zone = zone_of(node)
    if zone is None:
        return DEFAULT, f"Node {node_name} has no {names.NODE_ZONE_LABEL} label"
    return zone, f"Node {node_name}'s {names.NODE_ZONE_LABEL}"
