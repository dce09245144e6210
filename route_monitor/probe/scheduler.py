"""When each monitor probes: a fixed phase per monitor, drift-free ticks, overdue runs skipped.

Thousands of monitors with the same interval must not probe in lockstep, and one monitor's
probes must stay exactly one interval apart however long probes take. So:

- a monitor's ticks are ``offset + k * interval`` on the event loop's clock, where ``offset``
  comes from a stable hash of ``namespace/monitor`` (the same on every restart and replica)
  plus a small per-worker jitter (at most ``min(1 s, 2 % of the interval)`` by default);
- ticks are absolute, so lateness never accumulates (drift-free);
- a worker that starts (operator restart, new monitor) probes once within ``first_within``
  seconds (5 s in the engine) when its first grid tick is further away than that, at the same
  hashed phase scaled into that window, so a restart never leaves a 5-minute-interval monitor
  blind for minutes and thousands of monitors still do not start in lockstep; the next grid
  tick at least half an interval later follows;
- a tick that is already half an interval late when the worker gets to it (the previous run
  overran, or the concurrency bound held it back) is skipped, not queued, and counted
  (``route_monitor_probes_skipped_total``); the worker waits for the next tick on the grid.

:class:`Schedule` is pure arithmetic; :class:`Ticker` runs it (a timer, and a task per run); :func:`guard`
restarts a crashed long-running task (cancellation propagates); :func:`watch_loop_lag` measures
how late the event loop wakes sleepers.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from route_monitor.probe import ticks

log = logging.getLogger(__name__)


def hash_phase(key: tuple[str, str]) -> float:
    """A stable number in [0, 1) for ``(namespace, monitor)`` (crc32: not salted per process)."""
    return zlib.crc32(f"{key[0]}/{key[1]}".encode()) / 2**32


@dataclass(frozen=True, slots=True)
class Schedule:
    interval: float
    """Seconds between ticks."""
    offset: float
    """Phase of the ticks within the interval, in seconds: ticks are ``offset + k * interval``."""

    @classmethod
    def for_monitor(cls, key: tuple[str, str], interval: float, *, jitter: float = 0.0) -> Schedule:
        return cls(interval, (hash_phase(key) * interval + jitter) % interval)

    def first_tick(self, now: float) -> float:
        """The first tick at or after ``now``."""
        return self.offset + math.ceil((now - self.offset) / self.interval) * self.interval

    def early_tick(self, now: float, within: float) -> float | None:
        """A first run sooner than the grid allows, or None when the grid's first tick comes
        within ``within`` seconds anyway. Spread over ``[now, now + within)`` by the same phase."""
        if self.first_tick(now) - now <= within:
            return None
        return now + (self.offset / self.interval) * within

    def catch_up(self, tick: float, now: float) -> tuple[float, int]:
        """The tick to run and how many ticks were skipped to get there.

        A tick less than half an interval late runs now (its lateness is the schedule lag);
        a later one is overdue: it and any other passed ticks are skipped, and the next run
        is the next tick in the future, so runs stay on the grid and never bunch up."""
        if now - tick < self.interval / 2:
            return tick, 0
        upcoming = self.first_tick(now)
        return upcoming, round((upcoming - tick) / self.interval)


def default_jitter(interval: float, rng: random.Random, max_seconds: float = 1.0) -> float:
    return rng.uniform(0, min(max_seconds, interval * 0.02))


class Ticker:
    """Calls ``run_once(tick)`` at every tick of ``schedule`` (see the module docstring) until
    :meth:`stop`. While it waits it holds a timer, not a task: an idle monitor costs an entry in
    the loop's :mod:`ticks` (a loop timer handle, ~0.3 KiB, with another clock) where a task with
    its suspended coroutine cost ~1.8 KiB; each run is a task of its own (``task``), alive while
    it runs. ``run_once`` measures its own lag; an exception
    it lets out is logged and the next tick comes as usual."""

    __slots__ = (
        "_early",
        "_loop",
        "_now",
        "_on_skip",
        "_run_once",
        "_schedule",
        "_stopped",
        "_tick",
        "_ticks",
        "_timer",
        "task",
    )

    def __init__(self, schedule: Schedule, run_once: Callable[[float], Awaitable[None]], *,
                 on_skip: Callable[[int], None], clock: Callable[[], float] | None = None,
                 first_within: float | None = None) -> None:
        self._schedule, self._run_once, self._on_skip = schedule, run_once, on_skip
        self._loop = asyncio.get_running_loop()
        self._now = clock or self._loop.time
        now = self._now()
        self._early = schedule.early_tick(now, first_within) if first_within is not None else None
        self._tick = self._early if self._early is not None else schedule.first_tick(now)
        self._ticks = ticks.of(self._loop) if clock is None else None
        self._timer: asyncio.TimerHandle | ticks.Entry | None = None
        """The armed tick: an entry of the loop's :mod:`ticks` (the loop's clock), else a loop timer."""
        self.task: asyncio.Task[None] | None = None
        """The run in progress, if any."""
        self._stopped = False
        self._arm()

    def stop(self) -> None:
        """No more runs; the one in progress is cancelled (it stops at its next await)."""
        self._stopped = True
        timer = self._timer
        if isinstance(timer, list):
            ticks.cancel(timer)
        elif timer is not None:
            timer.cancel()
        self._timer = None
        if self.task is not None:
            self.task.cancel()

    def _arm(self) -> None:
        if self._stopped:
            return
        if self._ticks is not None:  # the loop's clock: a tick in the past runs at once, as call_later(0) would
            self._timer = self._ticks.call_at(self._tick, self._fire)
        else:
            self._timer = self._loop.call_later(max(0.0, self._tick - self._now()), self._fire)

    def _fire(self) -> None:
        self._timer = None
        if self._early is not None:  # the first run, sooner than the grid; then the grid
            tick = self._early
        else:
            tick, skipped = self._schedule.catch_up(self._tick, self._now())
            if skipped:
                self._on_skip(skipped)
                self._tick = tick
                self._arm()
                return
        self.task = self._loop.create_task(self._run(tick))

    async def _run(self, tick: float) -> None:
        try:
            await self._run_once(tick)
        except Exception:
            log.exception("a scheduled run failed; the next tick comes as usual")
        finally:
            self.task = None
        if self._early is not None:
            self._tick, self._early = self._schedule.first_tick(self._early + self._schedule.interval / 2), None
        else:
            self._tick = tick + self._schedule.interval
        self._arm()


async def guard(name: str, factory: Callable[[], Awaitable[None]], *, backoff: float = 1.0,
                logger: logging.Logger = log) -> None:
    """Run ``factory()`` until it returns; log and restart it after ``backoff`` when it crashes."""
    while True:
        try:
            await factory()
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("%s crashed; restarting in %.1fs", name, backoff)
            await asyncio.sleep(backoff)


async def watch_loop_lag(observe: Callable[[float], None], *, every: float = 0.5) -> None:
    """Sleep ``every`` seconds, forever, and observe how much later than asked the loop woke us."""
    loop = asyncio.get_running_loop()
    while True:
        start = loop.time()
        await asyncio.sleep(every)
        observe(max(0.0, loop.time() - start - every))
