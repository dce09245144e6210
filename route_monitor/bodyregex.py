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
  saying the pattern did not finish. The ``regex`` engine checks its timeout coarsely (measured:
  a 0.5 s timeout stops after up to 2.5 s), so these matches run in their own small pool
  (:data:`WORKERS` threads): a runaway pattern can only delay other runaway patterns, never
  the default executor that name resolution uses.

The parser (:mod:`route_monitor.spec`) validates with :func:`compile_pattern`, so what ``check``
accepts is exactly what the prober runs.
"""

from __future__ import annotations

import asyncio
import functools
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import regex

INLINE_SLICE_S = 0.002
"""How long a match may hold the event loop before it moves to a worker thread."""
MIN_BUDGET_S = 0.01
WORKERS = 2


@functools.cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=WORKERS, thread_name_prefix="route-monitor-bodyregex")


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

    async def search(self, text: str, budget_s: float) -> bool:
        """Whether the pattern occurs in ``text``; :class:`MatchTimeout` past ``budget_s``."""
        try:
            return self.compiled.search(text, timeout=INLINE_SLICE_S) is not None
        except TimeoutError:
            pass
        budget = max(MIN_BUDGET_S, budget_s - INLINE_SLICE_S)
        try:
            async with asyncio.timeout(budget):
                search = functools.partial(self.compiled.search, text, timeout=budget, concurrent=True)
                found = await asyncio.get_running_loop().run_in_executor(_pool(), search)
        except TimeoutError:
            raise MatchTimeout(f"bodyRegex /{self.pattern[:100]}/ did not finish matching "
                               f"{len(text)} characters within the probe's deadline "
                               "(catastrophic backtracking?)") from None
        return found is not None
