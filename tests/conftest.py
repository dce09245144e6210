"""Fixtures shared by every test module; component fixtures live in ``tests/support``."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # so ``tests.support`` imports without installing tests

from tests.support import fuzzing  # noqa: E402, F401 - hypothesis profiles (ci by default, RM_HYPOTHESIS_PROFILE)
from tests.support.cluster import cluster  # noqa: E402, F401 - the session-scoped control plane (cluster tests)
from tests.support.operator import kube, target  # noqa: E402, F401 - an admin client, a loopback HTTP target
