"""The supervisor's work queue of monitor keys.

- A key is in the queue at most once; a key asked for while a worker reconciles it runs once
  more after (nothing asked for during a reconcile is lost).
- One worker per key at a time.
- Timers put a key back later (retries with backoff, deferred status writes, a first status's
  deadline), one timer per key.
- What a key is queued for: a probe result only (:meth:`put` with ``full=False``), or anything
  else (a watch event, a reference or membership change, a timer). A key queued for a result
  only can skip what did not change (:meth:`Reconciler.reconcile`'s ``result_only``).
"""

from __future__ import annotations

import asyncio

from route_monitor.operator.world import Key


class WorkQueue:
    def __init__(self) -> None:
        self._queue: asyncio.Queue[Key] = asyncio.Queue()
        self._queued: set[Key] = set()
        self._running: set[Key] = set()
        self._again: set[Key] = set()
        self._full: set[Key] = set()
        """Keys with more than a probe result to catch up on."""
        self._timers: dict[Key, asyncio.TimerHandle] = {}

    def put(self, key: Key, *, full: bool = True) -> None:
        if full:
            self._full.add(key)
        if key in self._running:
            self._again.add(key)
        elif key not in self._queued:
            self._queued.add(key)
            self._queue.put_nowait(key)

    def later(self, key: Key, delay: float) -> None:
        """:meth:`put` after ``delay`` seconds, unless a timer for ``key`` is already set."""
        if key in self._timers:
            return

        def fire() -> None:
            self._timers.pop(key, None)
            self.put(key)

        self._timers[key] = asyncio.get_running_loop().call_later(delay, fire)

    def now(self, key: Key) -> None:
        """:meth:`put` at once, instead of when its timer fires."""
        self.cancel_timer(key)
        self.put(key)

    def cancel_timer(self, key: Key) -> None:
        timer = self._timers.pop(key, None)
        if timer is not None:
            timer.cancel()

    async def take(self) -> tuple[Key, bool]:
        """The next key and whether only a probe result is new for it; the caller calls :meth:`done`."""
        key = await self._queue.get()
        self._queued.discard(key)
        self._running.add(key)
        result_only = key not in self._full
        self._full.discard(key)
        return key, result_only

    def done(self, key: Key) -> None:
        self._running.discard(key)
        if key in self._again:
            self._again.discard(key)
            self.put(key, full=False)  # ``_full`` still says what it was asked for

    @property
    def idle(self) -> bool:
        return not self._queued and not self._running

    def close(self) -> None:
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
