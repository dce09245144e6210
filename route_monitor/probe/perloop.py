"""One object per event loop, made on first use and let go with the loop.

The engine keeps a few things once per loop rather than once per monitor (the tick heap of
:mod:`~route_monitor.probe.ticks`, the epoll set of :mod:`~route_monitor.probe.net.readiness`):
each is found from the running loop at every probe. The lookup is a weak mapping (a loop that is
closed and dropped takes its object with it), in front of which the last object found is kept:
a process runs one loop, so the mapping is read once.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerLoop(Generic[T]):
    """``make(loop)`` once per event loop; :meth:`of` returns that loop's object."""

    __slots__ = ("_by_loop", "_last", "_last_loop", "_make")

    def __init__(self, make: Callable[[asyncio.AbstractEventLoop], T]) -> None:
        self._make = make
        self._by_loop: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, T] = weakref.WeakKeyDictionary()
        self._last: T | None = None
        self._last_loop: weakref.ref[asyncio.AbstractEventLoop] | None = None
        """Weak: the cache must not keep a closed loop (and what it holds) alive."""

    def of(self, loop: asyncio.AbstractEventLoop) -> T:
        if self._last is not None and self._last_loop is not None and self._last_loop() is loop:
            return self._last
        found = self._by_loop.get(loop)
        if found is None:
            found = self._by_loop[loop] = self._make(loop)
        self._last, self._last_loop = found, weakref.ref(loop)
        return found
