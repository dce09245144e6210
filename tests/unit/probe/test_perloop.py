"""One object per event loop: the same one for a loop, another for another, gone with its loop."""

from __future__ import annotations

import asyncio
import gc
import weakref

from route_monitor.probe.perloop import PerLoop


class Thing:
    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = weakref.ref(loop)


def test_one_object_per_loop_and_none_kept_after_the_loop() -> None:
    per_loop: PerLoop[Thing] = PerLoop(Thing)
    first, second = asyncio.new_event_loop(), asyncio.new_event_loop()
    a = per_loop.of(first)
    assert per_loop.of(first) is a and a.loop() is first
    b = per_loop.of(second)
    assert b is not a and b.loop() is second
    assert per_loop.of(first) is a  # found again after another loop was asked for
    gone = weakref.ref(b)
    second.close()
    del second, b
    gc.collect()
    assert gone() is None  # neither the registry nor its cache keeps a dropped loop's object
    first.close()
