"""The monitors' ticks on one heap per event loop (``probe/ticks``), on the loop's fake clock:
each callback runs at its time, in time order; a cancelled one never runs; a tick added from a
callback, or earlier than every other, still comes on time; a failing callback stops no other."""

from __future__ import annotations

import asyncio

import pytest

from route_monitor.probe import ticks

pytestmark = pytest.mark.looptime


async def test_callbacks_run_at_their_time_in_time_order_and_a_cancelled_one_never() -> None:
    loop = asyncio.get_running_loop()
    start, ran = loop.time(), []
    queue = ticks.of(loop)

    def at(when: float) -> None:
        queue_entry = queue.call_at(start + when, lambda: ran.append((when, loop.time() - start)))
        if when == 1.5:
            ticks.cancel(queue_entry)

    for when in (3.0, 1.0, 2.0, 2.5, 1.5, 0.5):  # 0.5: earlier than the timer armed for the others
        at(when)
    await asyncio.sleep(4)
    assert [at for at, _ in ran] == [0.5, 1.0, 2.0, 2.5, 3.0]
    assert all(when == pytest.approx(at) for at, when in ran)


async def test_a_tick_added_by_a_callback_does_not_delay_those_already_due_sooner() -> None:
    loop = asyncio.get_running_loop()
    start, ran = loop.time(), []
    queue = ticks.of(loop)

    def first() -> None:
        ran.append(("first", loop.time() - start))
        queue.call_at(start + 5.0, lambda: ran.append(("later", loop.time() - start)))

    queue.call_at(start + 1.0, first)
    queue.call_at(start + 2.0, lambda: ran.append(("second", loop.time() - start)))
    await asyncio.sleep(6)
    assert [name for name, _ in ran] == ["first", "second", "later"]
    assert [when for _, when in ran] == pytest.approx([1.0, 2.0, 5.0])


async def test_a_failing_callback_stops_no_other(caplog: pytest.LogCaptureFixture) -> None:
    loop = asyncio.get_running_loop()
    ran: list[str] = []
    queue = ticks.of(loop)

    def boom() -> None:
        raise RuntimeError("boom")

    queue.call_at(loop.time() + 1, boom)
    queue.call_at(loop.time() + 1, lambda: ran.append("same time"))
    queue.call_at(loop.time() + 2, lambda: ran.append("later"))
    await asyncio.sleep(3)
    assert ran == ["same time", "later"]
    assert "a tick's callback failed" in caplog.text
