"""Readiness callbacks for probe sockets on an epoll instance of their own, which the event loop
watches as one file descriptor.

``loop.add_reader``/``add_writer`` and their removal are Python code over Python code (the
selector's key objects, a handle per call, a transport check that raises ``KeyError`` each time):
watching a plain TCP probe's socket for its connection, then for its answer, cost about a fifth
of the probe's CPU (``benchmarks/RESULTS-protocols.md``). Here each watch is one ``epoll_ctl``
made in C, and the loop's selector sees one more descriptor, registered once per loop: when any
probe socket is ready, the loop calls :meth:`Readiness._dispatch` in the same iteration, which
collects the ready sockets (``epoll_wait`` without waiting) and calls their callbacks. Watches
are level-triggered, as the loop's own: what a callback leaves unread is reported again.

Where there is no epoll (not Linux), the same calls go to the loop's own ``add_reader``/``add_writer``.
"""

from __future__ import annotations

import asyncio
import logging
import select
import weakref
from collections.abc import Callable

from route_monitor.probe.perloop import PerLoop

log = logging.getLogger(__name__)

READ, WRITE = 1, 4
"""Events to watch for (epoll's ``EPOLLIN`` and ``EPOLLOUT``); a callback gets what happened,
errors and hang-ups included."""
_EPOLL = hasattr(select, "epoll")


async def until_readable(loop: asyncio.AbstractEventLoop, fd: int) -> None:
    """Wait for ``fd`` to be readable on the loop's own watch (one reader, removed after)."""
    ready = loop.create_future()
    loop.add_reader(fd, _set_done, ready)
    try:
        await ready
    finally:
        loop.remove_reader(fd)


async def until_writable(loop: asyncio.AbstractEventLoop, fd: int) -> None:
    """Wait for ``fd`` to be writable on the loop's own watch (one writer, removed after)."""
    ready = loop.create_future()
    loop.add_writer(fd, _set_done, ready)
    try:
        await ready
    finally:
        loop.remove_writer(fd)


def _set_done(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


class Readiness:
    """The watched sockets of one event loop: at most one callback and one event mask per descriptor."""

    __slots__ = ("__weakref__", "_callbacks", "_epoll", "_masks", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = weakref.ref(loop)
        """Weak: the loop holds this (its reader callback), and the per-loop registry must let the loop go."""
        self._callbacks: dict[int, Callable[[int], None]] = {}
        self._masks: dict[int, int] = {}
        self._epoll = select.epoll() if _EPOLL else None
        if self._epoll is not None:
            weakref.finalize(self, self._epoll.close)
            loop.add_reader(self._epoll.fileno(), self._dispatch)

    def watch(self, fd: int, events: int, callback: Callable[[int], None]) -> None:
        """Call ``callback(events)`` whenever ``fd`` is ready for ``events`` (READ, WRITE), until
        :meth:`unwatch`; a new watch of the same descriptor replaces the previous one."""
        was = self._masks.get(fd)
        self._callbacks[fd], self._masks[fd] = callback, events
        if self._epoll is None:
            self._watch_on_loop(fd, was or 0, events)
        elif was is None:
            self._epoll.register(fd, events)
        elif was != events:
            self._epoll.modify(fd, events)

    def unwatch(self, fd: int) -> None:
        """No more callbacks for ``fd`` (before it is closed)."""
        was = self._masks.pop(fd, None)
        if was is None:
            return
        del self._callbacks[fd]
        if self._epoll is None:
            self._watch_on_loop(fd, was, 0)
        else:
            self._epoll.unregister(fd)

    def _dispatch(self) -> None:
        assert self._epoll is not None
        callbacks = self._callbacks
        for fd, events in self._epoll.poll(0):
            callback = callbacks.get(fd)
            if callback is None:  # unwatched by an earlier callback of this round
                continue
            try:
                callback(events)
            except Exception:  # a bug in a callback: the other sockets' callbacks still run
                log.exception("readiness callback for descriptor %d failed", fd)

    def _watch_on_loop(self, fd: int, was: int, events: int) -> None:
        """Without epoll: the loop's own reader and writer callbacks."""
        loop = self.loop()
        assert loop is not None, "watched from the loop's own callbacks"
        for flag, add, remove in ((READ, loop.add_reader, loop.remove_reader),
                                  (WRITE, loop.add_writer, loop.remove_writer)):
            if events & flag:
                add(fd, self._ready, fd, flag)
            elif was & flag:
                remove(fd)

    def _ready(self, fd: int, flag: int) -> None:
        callback = self._callbacks.get(fd)
        if callback is not None:
            callback(flag)


_per_loop: PerLoop[Readiness] = PerLoop(Readiness)
of = _per_loop.of
"""The loop's :class:`Readiness` (made on first use)."""
