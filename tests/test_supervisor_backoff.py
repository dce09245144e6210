"""The supervisor's retry delays after an API outage: a monitor whose reconciles failed because
the API did (unreachable, 5xx, 429) and that then fails for another reason (a write refused with
409 once the API answers) backs off from the first delay again, not from where the outage left
it (issue 16's CI failure: an annotation change applied a minute late)."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry

from route_monitor.operator.metrics import OperatorMetrics
from route_monitor.operator.reconcile import RetryLater
from route_monitor.operator.settings import OperatorSettings
from route_monitor.operator.supervisor import Supervisor

KEY, OTHER = ("ns", "web"), ("ns", "api")


def _supervisor() -> tuple[Supervisor, list[float]]:
    sup = Supervisor(settings=OperatorSettings(retry_backoff=(1.0, 2.0, 5.0, 10.0, 30.0, 60.0)),
                     kube=object(), engine=object(), metrics=OperatorMetrics(CollectorRegistry()))  # type: ignore[arg-type]
    delays: list[float] = []
    sup.enqueue_later = lambda key, delay: delays.append(delay)  # type: ignore[method-assign]
    return sup, delays


def test_a_conflict_after_failures_of_the_api_backs_off_from_the_start() -> None:
    async def go() -> list[float]:
        sup, delays = _supervisor()
        for _ in range(4):
            sup._failed(KEY, ConnectionRefusedError("connection refused"))
        sup._failed(KEY, RetryLater("refused with 409"))
        sup._failed(KEY, RetryLater("refused with 409"))
        return delays

    assert asyncio.run(go()) == [1.0, 2.0, 5.0, 10.0, 1.0, 2.0]


def test_monitors_waiting_on_the_api_back_off_from_the_start_once_it_answers_again() -> None:
    async def go() -> list[float]:
        sup, delays = _supervisor()
        for _ in range(5):
            sup._failed(KEY, ConnectionRefusedError("connection refused"))
        sup._failed(OTHER, ConnectionRefusedError("connection refused"))
        sup._succeeded(OTHER, answered=True)  # the API answers: KEY is reconciled at once
        sup._failed(KEY, ConnectionRefusedError("connection refused"))  # and the API fails again
        return delays

    assert asyncio.run(go())[-1] == 1.0


def test_failures_of_the_api_alone_still_back_off_to_a_minute() -> None:
    async def go() -> list[float]:
        sup, delays = _supervisor()
        for _ in range(7):
            sup._failed(KEY, ConnectionRefusedError("connection refused"))
        return delays

    assert asyncio.run(go()) == [1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 60.0]
