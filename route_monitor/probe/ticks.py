"""The monitors' next ticks on one event loop, in one heap, behind one loop timer.

A timer per monitor puts thousands of handles on the event loop's own heap, whose comparisons
are Python code (``TimerHandle.__lt__``): about ten of them for each push and each pop with
1,000 monitors, every probe (``benchmarks/RESULTS-protocols.md``). Here a monitor's next tick is
an entry ``[when, sequence, callback]`` on a heap of lists, which ``heapq`` compares in C, and
the loop holds one timer, at the earliest tick. When it fires, every tick that is due (as the
loop decides for its own timers: within the clock's resolution) runs, and the timer is armed
again for the next one. A cancelled entry only loses its callback and is dropped when due.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
import time
import weakref
from collections.abc import Callable
from typing import Any

from route_monitor.probe.perloop import PerLoop

_RESOLUTION = time.get_clock_info("monotonic").resolution
log = logging.getLogger(__name__)
Entry = list[Any]
"""``[when, sequence, callback or None]``: ordered by ``when``, then by the order of arrival."""


class Ticks:
    __slots__ = ("__weakref__", "_at", "_heap", "_sequence", "_timer", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = weakref.ref(loop)
        """Weak, so that the per-loop registry lets the loop go."""
        self._heap: list[Entry] = []
        self._sequence = itertools.count()
        self._timer: asyncio.TimerHandle | None = None
        self._at = 0.0

    def call_at(self, when: float, callback: Callable[[], None]) -> Entry:
        """``callback()`` at ``when`` on the loop's clock (at once when it has passed); the entry
        is for :func:`cancel`."""
        entry = [when, next(self._sequence), callback]
        heapq.heappush(self._heap, entry)
        if self._timer is None or when < self._at:
            self._arm(when)
        return entry

    def _arm(self, when: float) -> None:
        loop = self.loop()
        assert loop is not None, "armed from the loop's own callbacks"
        if self._timer is not None:
            self._timer.cancel()
        self._timer, self._at = loop.call_at(when, self._fire), when

    def _fire(self) -> None:
        self._timer = None
        loop = self.loop()
        assert loop is not None
        heap, due = self._heap, loop.time() + _RESOLUTION
        while heap and heap[0][0] <= due:
            callback = heapq.heappop(heap)[2]
            if callback is not None:
                try:
                    callback()
                except Exception:  # a bug: the other monitors' ticks still come
                    log.exception("a tick's callback failed")
        if heap and (self._timer is None or self._at > heap[0][0]):  # a callback may have armed a later one
            self._arm(heap[0][0])


def cancel(entry: Entry) -> None:
    """The entry's callback will not be called."""
    entry[2] = None


_per_loop: PerLoop[Ticks] = PerLoop(Ticks)
of = _per_loop.of
"""The loop's :class:`Ticks` (made on first use)."""
