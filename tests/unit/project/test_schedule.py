"""The parallel suite's schedule (``tests/support/schedule.py``): modules longest first, a worker's
next module handed out when only its held-back test is left, one CPU-bound module at a time.
The scheduler is xdist's own ``--dist loadfile`` scheduler with those two rules, driven here
with stand-in workers that record what they are sent."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from tests.support.schedule import OneModuleAhead, cpu_bound, longest_first

TABLE = {"tests/test_a.py": (300.0, 290.0), "tests/test_b.py": (200.0, 10.0), "tests/test_c.py": (100.0, 80.0),
         "tests/test_d.py": (50.0, 1.0)}


def items(*nodeids: str) -> list[pytest.Item]:
    return [cast(pytest.Item, SimpleNamespace(nodeid=n)) for n in nodeids]


def test_modules_longest_first_unknown_modules_before_all_tests_of_a_module_in_order() -> None:
    got = longest_first(items("tests/test_d.py::x", "tests/test_b.py::y", "tests/test_new.py::z",
                              "tests/test_b.py::x", "tests/test_a.py::w", "tests/test_d.py::a"), TABLE)
    assert [i.nodeid for i in got] == ["tests/test_new.py::z", "tests/test_a.py::w", "tests/test_b.py::y",
                                       "tests/test_b.py::x", "tests/test_d.py::x", "tests/test_d.py::a"]


def test_cpu_bound_modules_need_50_cpu_seconds_or_more() -> None:
    assert cpu_bound(TABLE) == {"tests/test_a.py", "tests/test_c.py"}


class Worker:
    def __init__(self, name: str) -> None:
        self.gateway = SimpleNamespace(id=name)
        self.shutting_down, self.sent = False, []

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.append(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True


COLLECTION = ["tests/test_a.py::1", "tests/test_a.py::2", "tests/test_a.py::3",  # CPU-bound, longest
              "tests/test_c.py::1", "tests/test_c.py::2",  # CPU-bound
              "tests/test_b.py::1", "tests/test_b.py::2", "tests/test_b.py::3",
              "tests/test_d.py::1", "tests/test_d.py::2"]


def modules_sent(worker: Worker) -> list[str]:
    return sorted({COLLECTION[i].split("::")[0] for batch in worker.sent for i in batch})


@pytest.fixture
def scheduler() -> tuple[OneModuleAhead, Worker, Worker]:
    config: Any = SimpleNamespace(option=SimpleNamespace(loadscopereorder=True), getvalue=lambda _: ["2*popen"])
    sched = OneModuleAhead(config, table=TABLE)
    one, two = Worker("gw0"), Worker("gw1")
    for w in (one, two):
        sched.add_node(cast(Any, w))
        sched.add_node_collection(cast(Any, w), COLLECTION)
    sched.schedule()
    return sched, one, two


def test_the_next_module_goes_out_when_only_the_held_back_test_is_left(
        scheduler: tuple[OneModuleAhead, Worker, Worker]) -> None:
    sched, one, _ = scheduler
    assert modules_sent(one) == ["tests/test_a.py"]
    sched.mark_test_complete(cast(Any, one), 0)
    assert modules_sent(one) == ["tests/test_a.py"], "two tests of test_a left: nothing more yet"
    sched.mark_test_complete(cast(Any, one), 1)
    assert len(one.sent) == 2, "one test left (held back by the worker until it knows the next): next module"


def test_a_cpu_bound_module_waits_while_another_runs_unless_nothing_else_is_left(
        scheduler: tuple[OneModuleAhead, Worker, Worker]) -> None:
    sched, one, two = scheduler
    assert (modules_sent(one), modules_sent(two)) == (["tests/test_a.py"], ["tests/test_b.py"])
    for i in (5, 6):  # test_b done but its held-back test: test_c is CPU-bound and test_a runs, so test_d
        sched.mark_test_complete(cast(Any, two), i)
    assert modules_sent(two) == ["tests/test_b.py", "tests/test_d.py"]
    sched.mark_test_complete(cast(Any, two), 7)
    sched.mark_test_complete(cast(Any, two), 8)
    assert modules_sent(two) == ["tests/test_b.py", "tests/test_c.py", "tests/test_d.py"], \
        "only test_c is left: it goes out although test_a still runs"
