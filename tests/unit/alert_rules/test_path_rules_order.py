"""A shared outage pages once, for the path, whatever order the rule groups run in (real
``promtool test rules`` with ``group_eval_order``, on the generated rules).

Prometheus evaluates each rule group on its own, at an offset within its interval, and promtool
in random order unless told: a monitor's group may run before or after its siblings' groups and
the ``route-monitor-paths`` group. A monitor's page waits one evaluation for its path to be seen
down (its settle), so the path must reach it within one evaluation in every order.

Three monitors behind ``router:a`` and ``dns:cluster`` (K = 3, F = 50%): a DNS outage (10-20m),
then a router outage (40-50m) whose first failed probe already burns (the DNS outage's failures
are still in the 1h window) while no monitor is failing before its second one. The shared group
records every monitor's failing series, the path group the verdict, each monitor's fast group its
page (which reads only those): every placement of the shared and path groups among the three
monitors' fast groups (20 orders, the monitors' among themselves irrelevant, the other groups
after them) is its own promtool run: one ``SharedPathDown`` for each outage and no per-monitor page
at any evaluation.
"""

from __future__ import annotations

from itertools import permutations
from pathlib import Path

import pytest

from alert_rules.path_rules import GROUP
from alert_rules.shared import GROUP as SHARED_GROUP
from tests.support import promtool
from tests.unit.alert_rules.test_path_rules_promtool import BURN, job, path_down, silent, timeline

pytestmark = pytest.mark.prometheus

MONITORS = ("a0", "a1", "a2")
FAST_GROUPS = tuple(f"route-monitor/shop/{m}" for m in MONITORS)
DECIDING = (*FAST_GROUPS, SHARED_GROUP, GROUP)
"""The groups whose order decides a page: each monitor's fast group, the shared and the path group."""


def orders() -> list[tuple[str, ...]]:
    """Every order of the deciding groups with the monitors' fast groups in one relative order (they
    read nothing another monitor's group writes)."""
    return [o for o in permutations(DECIDING) if [g for g in o if g in FAST_GROUPS] == list(FAST_GROUPS)]


def name(order: tuple[str, ...]) -> str:
    return " < ".join(g.rsplit("/", 1)[-1] for g in order)


def jobs() -> list[promtool.Job]:
    outcomes = timeline(("S", 10), ("D", 10), ("S", 20), ("F", 10), ("S", 20))
    monitors = {m: (("router:a", "dns:cluster"), outcomes) for m in MONITORS}
    checks = [path_down(14, "dns:cluster", 3), path_down(44, "router:a", 3),
              *silent(BURN, *[10 + m / 2 for m in range(120)])]
    return [job(name(o), monitors, checks, order=o) for o in orders()]


JOBS = jobs()


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, promtool.Result]:
    return promtool.run_many(JOBS, Path(tmp_path_factory.mktemp("orders")))


def test_every_order_of_the_deciding_groups_is_tried() -> None:
    assert len({j.name for j in JOBS}) == len(JOBS) == 20
    assert all(j.tests["group_eval_order"][:5] == list(o) for j, o in zip(JOBS, orders(), strict=True))


@pytest.mark.parametrize("order", [j.name for j in JOBS])
def test_a_shared_outage_pages_once_in_this_order(order: str, results: dict[str, promtool.Result]) -> None:
    result = results[order]
    assert result.ok, result.output[-6000:]
