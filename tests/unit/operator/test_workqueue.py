"""The supervisor's work queue (``route_monitor.operator.workqueue``): each key once in the queue,
nothing asked for during a reconcile lost, and what a key was queued for (a probe result only,
or more) carried to the worker, however the requests interleave."""

from __future__ import annotations

import asyncio

from route_monitor.operator.workqueue import WorkQueue

A, B = ("ns", "a"), ("ns", "b")


async def test_a_key_is_queued_once_and_says_whether_only_a_result_is_new() -> None:
    q = WorkQueue()
    q.put(A, full=False)
    q.put(A, full=False)
    q.put(B, full=False)
    q.put(B)  # a watch event after the result: B needs a whole reconcile
    assert await q.take() == (A, True)
    assert await q.take() == (B, False)
    q.done(A), q.done(B)
    assert q.idle


async def test_what_is_asked_for_during_a_reconcile_runs_after_it_with_what_it_was_asked_for() -> None:
    q = WorkQueue()
    q.put(A)
    key, result_only = await q.take()
    assert (key, result_only) == (A, False)
    q.put(A, full=False)  # a result while A runs: once more after, result only
    assert q._queue.empty(), "not queued twice while running"
    q.done(A)
    assert await q.take() == (A, True)
    q.put(A, full=False)
    q.put(A)  # ... and a watch event too: a whole reconcile
    q.done(A)
    assert await q.take() == (A, False)
    q.done(A)
    assert q.idle


async def test_timers_put_keys_back_for_a_whole_reconcile_and_can_be_cancelled() -> None:
    q = WorkQueue()
    q.later(A, 0.01)
    q.later(A, 5.0)  # one timer per key: the first one stands
    q.later(B, 0.01)
    q.cancel_timer(B)
    assert await asyncio.wait_for(q.take(), 1) == (A, False)
    await asyncio.sleep(0.05)
    assert q._queue.empty(), "B's timer was cancelled"
    q.done(A)
    q.later(B, 60)
    q.now(B)  # at once, not in a minute
    assert await asyncio.wait_for(q.take(), 1) == (B, False)
    q.done(B)
    q.close()
