"""A loop waiting on an event with a time limit stops when cancelled, even when the cancel
arrives in the same loop iteration as the event (how the operator's per-namespace scrape loop
once kept a SIGTERMed operator alive: leaving the Lease group kicked it, then cancelled it)."""

from __future__ import annotations

import asyncio

import pytest

from route_monitor.waits import wait_event


async def test_set_within_the_limit_and_not() -> None:
    event = asyncio.Event()
    assert await wait_event(event, 0.01) is False
    asyncio.get_running_loop().call_soon(event.set)
    assert await wait_event(event, 5) is True
    assert await wait_event(event, 0) is True  # already set: no wait


async def test_a_cancel_arriving_as_the_event_is_set_stops_the_loop() -> None:
    event = asyncio.Event()
    waiting = asyncio.Event()
    rounds = 0

    async def kicked_loop() -> None:
        nonlocal rounds
        while True:
            rounds += 1
            waiting.set()
            await wait_event(event, 30)
            event.clear()

    task = asyncio.create_task(kicked_loop())
    await waiting.wait()
    await asyncio.sleep(0)  # the loop is inside its wait now
    event.set()  # the kick ...
    task.cancel()  # ... and the cancel, in the same iteration
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 5)
    assert rounds == 1
