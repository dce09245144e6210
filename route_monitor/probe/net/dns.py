"""Name resolution for probes: the system resolver (``getaddrinfo``) in threads of its own, and
at most one lookup of a name at a time.

``getaddrinfo`` blocks its thread until the resolver answers or gives up (``timeout:`` x
``attempts:`` in resolv.conf, 5 s x 2 by default). A probe stops waiting at its own deadline, but
the thread cannot be cancelled: it stays busy until the resolver gives up. With asyncio's default
executor (``min(32, cores + 4)`` threads, 6 on 2 cores) a single name whose name server stopped
answering, probed every second, held every thread within seconds: every other monitor's lookup
queued behind it and failed as ``dns_error`` (measured in ``tests/chaos/test_chaos_targets.py``).

So:

- a lookup already running for the same name is joined, not started again: a name whose
  resolver hangs holds one thread, however often it is probed, on however many ports and by
  however many monitors; each probe still fails at its own deadline (``dns_error``, "name
  resolution timed out"). The lookup asks for the name alone (no port: the resolver's answer
  does not depend on it), and the caller connects to the port it wants;
- the lookups run in a pool of their own (:data:`THREADS`), never the default executor that
  ``asyncio.to_thread`` work shares: up to ``THREADS - 1`` names can hang at once without delaying
  the others.

Nothing is cached: every probe after a finished lookup asks the resolver again.
"""

from __future__ import annotations

import asyncio
import socket
import weakref
from concurrent.futures import ThreadPoolExecutor
from functools import cache

THREADS = 32
"""Threads for ``getaddrinfo``: how many distinct names can be resolving at once."""

_running: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, asyncio.Future[list[str]]]] = \
    weakref.WeakKeyDictionary()
"""Per event loop: the lookup running for each name."""


@cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=THREADS, thread_name_prefix="route-monitor-dns")


def _lookup(host: str) -> list[str]:
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def _finished(running: dict[str, asyncio.Future[list[str]]], host: str, future: asyncio.Future[list[str]]) -> None:
    if running.get(host) is future:
        del running[host]
    if not future.cancelled():
        future.exception()  # retrieved: a lookup whose probes all gave up logs nothing


async def addresses(host: str) -> list[str]:
    """The addresses ``host`` resolves to, in the resolver's order, without duplicates (any
    port connects to them); raises ``socket.gaierror`` (or the resolver's other error) when it
    does not resolve."""
    loop = asyncio.get_running_loop()
    running = _running.setdefault(loop, {})
    future = running.get(host)
    if future is None:
        future = loop.run_in_executor(_pool(), _lookup, host)
        running[host] = future
        future.add_done_callback(lambda done: _finished(running, host, done))
    return await asyncio.shield(future)

