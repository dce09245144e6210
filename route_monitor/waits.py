"""Waiting for an event with a time limit, without ever losing a cancellation.

``asyncio.wait_for(event.wait(), timeout)`` on Python 3.11 swallows the cancellation of the
waiting task when the event is set in the same loop iteration as the cancel arrives (the inner
wait has finished, so ``wait_for`` returns its result instead of raising): the loop around it goes
on, and whoever cancelled it waits forever. The operator hit exactly that on SIGTERM: leaving
the Lease group kicks the per-namespace scrape loop and then cancels it, and the process never
exited. ``asyncio.timeout`` cancels the awaiting task itself and keeps a foreign cancellation.
"""

from __future__ import annotations

import asyncio


async def wait_event(event: asyncio.Event, timeout: float) -> bool:
    """Wait until ``event`` is set or ``timeout`` seconds pass; whether it is set. A cancellation
    of the calling task always propagates."""
    if event.is_set():
        return True
    try:
        async with asyncio.timeout(max(timeout, 0.0)):
            await event.wait()
    except TimeoutError:
        return event.is_set()
    return True
