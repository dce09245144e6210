"""Hypothesis settings profiles for the fuzz tests (loaded by ``tests/conftest.py``).

- ``ci`` (the default): derandomized (the same examples on every run), a bounded number of
  examples per test, no per-example deadline (a loaded 2-core machine is not a failure), and
  no example database written into the work tree;
- ``long``: random, ten times the examples, for a local run:
  ``RM_HYPOTHESIS_PROFILE=long .venv/bin/python -m pytest tests/fuzz``.

A test scales its own examples with :func:`examples` (cheap parser tests run more than
socket tests).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE = os.environ.get("RM_HYPOTHESIS_PROFILE", "ci")
_SCALE = {"ci": 1, "long": 10}

settings.register_profile("ci", derandomize=True, deadline=None, database=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                                 HealthCheck.function_scoped_fixture])
settings.register_profile("long", parent=settings.get_profile("ci"), derandomize=False)
settings.load_profile(PROFILE if PROFILE in _SCALE else "ci")


def examples(ci: int) -> int:
    """``ci`` examples in CI, ten times as many under the ``long`` profile."""
    return ci * _SCALE.get(PROFILE, 1)
