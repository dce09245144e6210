"""Probe deadlines without a timer per probe: what ``asyncio.timeout`` decides, for less.

``asyncio.timeout`` arms a timer for every probe and, since nearly every probe ends long before
its deadline, cancels it again: two pushes and two pops on the event loop's timer heap (whose
comparisons are Python code), a ``Timeout`` object and its two awaits, for every probe; about a
tenth of a TCP probe's CPU (``benchmarks/RESULTS-protocols.md``). Here the deadlines of probes
with the same timeout wait in one queue, in the order they began, which is also the order of
their deadlines (the loop's clock is monotonic); one timer per queue is armed at its oldest
unfinished deadline. A probe that ends only marks its entry; the timer, when it fires, drops
the ended entries at the head, cancels the probe whose deadline has passed and is armed again
for the next one. With probes lasting milliseconds against deadlines of seconds, a queue's
timer fires about once per timeout instead of once per probe.

What a probe sees is ``asyncio.timeout``'s: at its deadline its task is cancelled, and the
:class:`asyncio.CancelledError` that this caused becomes :class:`TimeoutError` (:meth:`Deadline.own`,
with the same ``uncancel`` bookkeeping); a cancellation from elsewhere stays a cancellation.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

_RESOLUTION = time.get_clock_info("monotonic").resolution
_RUNNING, _ENDED, _EXPIRED = range(3)


class Deadline:
    """One probe's deadline (owned by that probe's task)."""

    __slots__ = ("at", "cancelling", "state", "task")

    def __init__(self, at: float, task: asyncio.Task[object]) -> None:
        self.at = at
        """On the event loop's clock."""
        self.task: asyncio.Task[object] | None = task
        self.cancelling = task.cancelling()
        self.state = _RUNNING

    def own(self) -> bool:
        """For a :class:`asyncio.CancelledError` caught in the probe: True when this deadline
        caused it (raise :class:`TimeoutError` instead), as ``asyncio.timeout`` decides."""
        if self.state != _EXPIRED or self.task is None:
            return False
        task, self.task = self.task, None
        return task.uncancel() <= self.cancelling

    def end(self) -> None:
        """The probe is over (in a ``finally``): the queue drops this entry when it gets to it."""
        if self.task is not None and self.state == _EXPIRED:
            self.task.uncancel()  # expired but ended otherwise: asyncio.timeout uncancels too
        self.task = None
        self.state = _ENDED


class _Queue:
    __slots__ = ("entries", "timer")

    def __init__(self) -> None:
        self.entries: deque[Deadline] = deque()
        self.timer: asyncio.TimerHandle | None = None


class Deadlines:
    """The deadlines of the probes running on one event loop, one queue per timeout."""

    __slots__ = ("_queues", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self._queues: dict[float, _Queue] = {}

    def start(self, seconds: float) -> Deadline:
        """A deadline ``seconds`` from now for the current task; call :meth:`Deadline.end` when done."""
        task = asyncio.current_task(self.loop)
        assert task is not None, "a deadline belongs to a task"
        entry = Deadline(self.loop.time() + seconds, task)
        queue = self._queues.get(seconds)
        if queue is None:
            queue = self._queues[seconds] = _Queue()
        queue.entries.append(entry)
        if queue.timer is None:
            queue.timer = self.loop.call_at(entry.at, self._fire, seconds, queue)
        return entry

    def _fire(self, seconds: float, queue: _Queue) -> None:
        queue.timer = None
        entries = queue.entries
        now = self.loop.time() + _RESOLUTION
        while entries:
            head = entries[0]
            if head.state == _RUNNING and head.task is not None:
                if head.at > now:
                    queue.timer = self.loop.call_at(head.at, self._fire, seconds, queue)
                    return
                head.state = _EXPIRED
                head.task.cancel()
            entries.popleft()
        if self._queues.get(seconds) is queue:
            del self._queues[seconds]

    def pending(self) -> int:
        """Entries still queued (ended ones included until their queue's timer drops them)."""
        return sum(len(q.entries) for q in self._queues.values())
