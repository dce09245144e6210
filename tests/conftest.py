"""Fixtures shared by every test module; component fixtures live in ``tests/support``."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # so ``tests.support`` imports without installing tests

from tests.support import fuzzing  # noqa: E402, F401 - hypothesis profiles (ci by default, RM_HYPOTHESIS_PROFILE)
from tests.support.authtargets import started  # noqa: E402, F401 - AuthTargets closed after the test
from tests.support.cluster import cluster  # noqa: E402, F401 - the session-scoped control plane (cluster tests)
from tests.support.operator import (  # noqa: E402, F401 - an admin client, a module's operator, a test's namespace, a loopback HTTP target
    kube,
    no_replica_left,
    ns,
    operator,
    target,
)
from tests.support.schedule import (  # noqa: E402, F401 - parallel runs: longest modules first, durations recorded
    pytest_collection_finish,
    pytest_collection_modifyitems,
    pytest_runtest_logreport,
    pytest_runtest_makereport,
    pytest_sessionfinish,
    pytest_xdist_make_scheduler,
)
from tests.support.scopes import pytest_itemcollected  # noqa: E402, F401 - a marker per folder (unit, cluster, e2e, chaos, fuzz)


def pytest_report_header() -> str:
    """The versions this run tests with (the project's declared dependencies, as installed), so a
    CI log says what was tested; docs/tested-versions.md keeps the last release's list."""
    import re
    from importlib import metadata

    declared = sorted({re.split(r"[\s<>=!~;\[(]", r, maxsplit=1)[0] for r in metadata.requires("route-monitor") or []})
    found = []
    for name in declared:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return "dependencies: " + ", ".join(found)
