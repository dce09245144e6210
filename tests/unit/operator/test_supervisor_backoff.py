"""The supervisor's retry delays after an API outage: a monitor whose reconciles failed because
the API did (unreachable, 5xx, 429) and that then fails for another reason (a write refused with
409 once the API answers) backs off from the first delay again, not from where the outage left
it (issue 16's CI failure: an annotation change applied a minute late)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from prometheus_client import CollectorRegistry

from route_monitor.kube.metrics import OperatorMetrics
from route_monitor.operator.reconcile import RetryLater
from route_monitor.operator.settings import OperatorSettings
from route_monitor.operator.supervisor import Supervisor

KEY, OTHER = ("ns", "web"), ("ns", "api")


REFUSED = ConnectionRefusedError("connection refused")
"""The API unreachable."""


def _delays(script: Callable[[Supervisor], None]) -> list[float]:
    """The retry delays the supervisor chose while ``script`` reported failures and successes to it."""
    async def go() -> list[float]:
        sup = Supervisor(settings=OperatorSettings(retry_backoff=(1.0, 2.0, 5.0, 10.0, 30.0, 60.0)),
                         kube=object(), engine=object(), metrics=OperatorMetrics(CollectorRegistry()))  # type: ignore[arg-type]
        delays: list[float] = []
        sup.enqueue_later = lambda key, delay: delays.append(delay)  # type: ignore[method-assign]
        script(sup)
        return delays

    return asyncio.run(go())


def test_a_conflict_after_failures_of_the_api_backs_off_from_the_start() -> None:
    def script(sup: Supervisor) -> None:
        for _ in range(4):
            sup._failed(KEY, REFUSED)
        sup._failed(KEY, RetryLater("refused with 409"))
        sup._failed(KEY, RetryLater("refused with 409"))

    assert _delays(script) == [1.0, 2.0, 5.0, 10.0, 1.0, 2.0]


def test_monitors_waiting_on_the_api_back_off_from_the_start_once_it_answers_again() -> None:
    def script(sup: Supervisor) -> None:
        for _ in range(5):
            sup._failed(KEY, REFUSED)
        sup._failed(OTHER, REFUSED)
        sup._succeeded(OTHER, answered=True)  # the API answers: KEY is reconciled at once
        sup._failed(KEY, REFUSED)  # and the API fails again

    assert _delays(script)[-1] == 1.0


def test_failures_of_the_api_alone_still_back_off_to_a_minute() -> None:
    def script(sup: Supervisor) -> None:
        for _ in range(7):
            sup._failed(KEY, REFUSED)

    assert _delays(script) == [1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 60.0]
