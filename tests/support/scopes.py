"""Markers by folder: a test under ``tests/unit``, ``tests/cluster``, ``tests/e2e``, ``tests/chaos``
or ``tests/fuzz`` carries that folder's marker, so ``pytest -m unit`` (or ``pytest tests/unit``)
runs what needs no control plane, and ``-m "not e2e"`` leaves out the slowest modules.

- ``unit/<package>``: one package of the project against real local servers and binaries at most
  (promtool, Prometheus, TLS, DNS, gRPC servers), no control plane;
- ``cluster``: the real kube-apiserver with etcd and the garbage collector, operator processes;
- ``e2e``: a whole path from a target to a page or a dashboard (Prometheus, Alertmanager, the
  PagerDuty stand-in), with or without the control plane;
- ``chaos``: faults injected into the control plane, the operator or the targets;
- ``fuzz``: hypothesis-driven inputs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

SCOPES = ("unit", "cluster", "e2e", "chaos", "fuzz")
_TESTS = Path(__file__).resolve().parent.parent


def scope_of(path: Path) -> str | None:
    try:
        first = path.resolve().relative_to(_TESTS).parts[0]
    except (ValueError, IndexError):
        return None
    return first if first in SCOPES else None


def pytest_itemcollected(item: pytest.Item) -> None:
    scope = scope_of(Path(str(item.path)))
    if scope is not None:
        item.add_marker(getattr(pytest.mark, scope))
