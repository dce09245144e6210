"""``spec.probe.bodyRegex``: compiled once, matched without ever stalling the probe engine.

A user's regular expression can backtrack catastrophically (``^(\\w+\\s?)*$`` against a long
word and a ``!``). Python's ``re`` cannot be interrupted and holds the GIL, so one such match
on the event loop freezes every other monitor's schedule for seconds. This module uses the
``regex`` engine instead (its default VERSION0 syntax is ``re``'s), which can stop a match at a
timeout and can release the GIL while matching:

- every match first runs on the event loop with a short slice (:data:`INLINE_SLICE_S`); an
  ordinary pattern on a body of at most ``maxBodyBytes`` finishes well inside it, so the
  common case costs no thread hop (measured: about 6 us against 3 us for plain ``re``, where a
  worker thread per match costs about 50-140 us);
- a match that needs longer is run again in a worker thread, GIL released, bounded by what is
  left of the probe's deadline; past it the probe fails with ``body_mismatch`` and a detail
  saying the pattern did not finish. The ``regex`` engine's timeout counts CPU time (measured:
  a 0.8 s timeout stops after 0.8 s of CPU, 1.6 s of wall time on a busy 2-core machine), so
  these matches run in their own pool of :data:`WORKERS` thread at the lowest CPU priority
  (nice 19, Linux): a runaway pattern burns at most one probe timeout of CPU per probe, takes
  CPU only when the event loop does not want it, and can only delay other runaway patterns,
  never the threads that name resolution uses (:mod:`route_monitor.probe.net.dns`). (Measured on a shared 2-core machine
  at load 4-10: 20 monitors at 1 s beside three runaway ones kept a schedule-lag p99 of
  5-100 ms, the same range as without the runaway ones; with ``re`` on the loop one match of
  the issue's pattern held every monitor for 3.6 s.)

The parser (:mod:`route_monitor.spec.probe`) validates with :func:`compile_pattern`, so what ``check``
accepts is exactly what the prober runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import regex

INLINE_SLICE_S = 0.002
"""How long a match may hold the event loop before it moves to a worker thread."""
MIN_BUDGET_S = 0.01
WORKERS = 1
NICE = 19


def _lower_priority() -> None:
    """On Linux a thread has its own nice value: the matcher yields the CPU to the event loop."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), NICE)


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="route-monitor-bodyregex",
                              initializer=_lower_priority)


class PatternError(ValueError):
    """``bodyRegex`` does not compile; the message says why."""


class MatchTimeout(Exception):
    """The pattern did not finish within the probe's deadline."""


def compile_pattern(pattern: str) -> Any:
    """The compiled pattern, or :class:`PatternError`."""
    try:
        return regex.compile(pattern, regex.VERSION0)
    except (regex.error, OverflowError, RecursionError, ValueError) as e:
        raise PatternError(str(e)[:200]) from None


@dataclass(frozen=True, slots=True)
class BodyRegex:
    pattern: str
    compiled: Any

    @classmethod
    def of(cls, pattern: str) -> BodyRegex:
        return cls(pattern, compile_pattern(pattern))

    async def search(self, text: str, deadline: float) -> Any | None:
        """The first match of the pattern in ``text`` (a ``regex`` match: its span is what a TCP
        expect step consumes), or None; :class:`MatchTimeout` when it has not finished by
        ``deadline`` (on the running loop's clock)."""
        done, found = self.search_inline(text)
        return found if done else await self.search_slow(text, deadline)

    def search_inline(self, text: str) -> tuple[bool, Any | None]:
        """``(True, match or None)`` when the pattern finishes within :data:`INLINE_SLICE_S` on
        the event loop (the common case: no await, nothing to prepare for a deadline), else
        ``(False, None)``: then :meth:`search_slow`."""
        try:
            return True, self.compiled.search(text, timeout=INLINE_SLICE_S)
        except TimeoutError:
            return False, None

    async def search_slow(self, text: str, deadline: float) -> Any | None:
        """The match in a worker thread, bounded by ``deadline``; :class:`MatchTimeout` past it."""
        loop = asyncio.get_running_loop()
        budget = deadline - loop.time()
        try:
            if budget < MIN_BUDGET_S:
                raise TimeoutError
            async with asyncio.timeout_at(deadline):
                # the engine's timeout counts CPU time: the thread stops by then at the latest
                search = functools.partial(self.compiled.search, text, timeout=budget, concurrent=True)
                return await loop.run_in_executor(_pool(), search)
        except TimeoutError:
            raise MatchTimeout(self.timeout_detail(len(text))) from None

    def timeout_detail(self, chars: int) -> str:
        return (f"bodyRegex /{self.pattern[:100]}/ did not finish matching {chars} characters within the "
                "probe's deadline (catastrophic backtracking?)")
