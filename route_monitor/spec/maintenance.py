"""Maintenance windows (Contract 9): parsed once into frozen dataclasses, evaluated cheaply.

Two kinds of window:

- :class:`CronWindow`: starts at every match of a 5-field cron ``schedule`` read on the wall
  clock of an IANA ``timeZone`` (default UTC) and lasts ``duration`` of elapsed time;
- :class:`OneOffWindow`: from ``start`` to ``end`` (RFC 3339 with an offset).

Windows are half-open: ``[start, start + duration)``. Cron matching is cronsim's, which follows
Debian's cron on daylight-saving nights: a start that falls in the hour the clocks skip
happens at the first instant after the jump (``0 2 * * *`` in Europe/Paris on the last Sunday
of March starts at 03:00 CEST), and a start in the hour that repeats happens once, at its first
occurrence (02:00 CEST on the last Sunday of October). The duration is always elapsed time, so
a 2h window is two hours of probes whatever the clocks do: 03:00-05:00 CEST in March,
02:00 CEST-03:00 CET in October.

The annotation ``routemonitor.io/maintenance`` holds one window per line: ``MIN HOUR DOM MON
DOW DURATION [ZONE]`` or ``START END``; :func:`annotation_items` turns it into the same items
as ``spec.maintenance``. Every error is an :class:`InvalidSpec` naming the field.
"""

from __future__ import annotations

import datetime as dt
import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from cronsim import CronSim, CronSimError

from alert_rules import durations
from alert_rules.fielderrors import Collect, FieldError, collecting, each
from alert_rules.model import InvalidSpec, parse_duration_ms

UTC = dt.UTC
GAP_SCAN_STARTS = 1000
GAP_SCAN_DAYS = 400
"""How far :func:`shortest_gap` looks (a year and some: both daylight-saving changes)."""


@dataclass(frozen=True)
class CronWindow:
    schedule: str
    duration_ms: int
    zone: str = "UTC"

    def starts(self, after: float) -> Iterator[float]:
        """Window starts strictly after ``after`` (epoch seconds), in order."""
        local = dt.datetime.fromtimestamp(after, ZoneInfo(self.zone))
        for start in CronSim(self.schedule, local):
            yield start.timestamp()

    def describe(self) -> str:
        return f"{self.schedule}, {durations.format_ms(self.duration_ms)}, {self.zone}"


@dataclass(frozen=True)
class OneOffWindow:
    start: float
    end: float

    def describe(self) -> str:
        return f"{_utc(self.start)} to {_utc(self.end)}"


Window = CronWindow | OneOffWindow


def _utc(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def span_at(window: Window, t: float) -> tuple[float, float] | None:
    """``(start, end)`` of the occurrence of ``window`` that contains ``t``, if any."""
    if isinstance(window, OneOffWindow):
        return (window.start, window.end) if window.start <= t < window.end else None
    d = window.duration_ms / 1000
    start = next(window.starts(t - d), None)  # no two occurrences overlap: at most one holds t
    return (start, start + d) if start is not None and start <= t else None


def next_start(window: Window, t: float) -> float | None:
    """The first start of ``window`` strictly after ``t`` (None: never again)."""
    if isinstance(window, OneOffWindow):
        return window.start if window.start > t else None
    return next(window.starts(t), None)


def state_at(windows: tuple[Window, ...], t: float) -> tuple[bool, float]:
    """(is ``t`` inside a window, until when that answer holds at least). The probe engine calls
    this only when a boundary passes, not per probe."""
    inside, until = False, float("inf")
    for w in windows:
        span = span_at(w, t)
        if span is not None:
            inside, until = True, min(until, span[1])
        nxt = next_start(w, t)
        if nxt is not None:
            until = min(until, nxt)
    return inside, until


def upcoming(windows: tuple[Window, ...], t: float) -> tuple[Window, float] | None:
    """The window that starts next after ``t`` and when."""
    found = [(s, i) for i, w in enumerate(windows) if (s := next_start(w, t)) is not None]
    if not found:
        return None
    s, i = min(found)
    return windows[i], s


def next_window_start(windows: tuple[Window, ...], t: float) -> float | None:
    found = upcoming(windows, t)
    return None if found is None else found[1]


def local_time(window: Window, epoch: float) -> str:
    """An absolute date and time with its offset, on the window's own clock."""
    zone = ZoneInfo(window.zone) if isinstance(window, CronWindow) else UTC
    return dt.datetime.fromtimestamp(epoch, zone).isoformat(timespec="seconds")


@lru_cache(maxsize=1024)
def shortest_gap(schedule: str, zone: str) -> float | None:
    """The shortest time between two starts of ``schedule`` over the next year (None: one start)."""
    w = CronWindow(schedule, 1, zone)
    now = dt.datetime.now(UTC).timestamp()
    horizon = now + GAP_SCAN_DAYS * 86_400
    starts = list(itertools.takewhile(lambda s: s < horizon, itertools.islice(w.starts(now), GAP_SCAN_STARTS)))
    return min((b - a for a, b in itertools.pairwise(starts)), default=None)


def parse_instant(value: object, field: str) -> float:
    text = value.isoformat() if isinstance(value, dt.datetime) else value  # YAML may give a datetime
    if not isinstance(text, str):
        raise InvalidSpec(field, value, 'expected an RFC 3339 date and time, e.g. "2026-12-01T02:00:00Z"')
    try:
        parsed = dt.datetime.fromisoformat(text)
    except ValueError:
        raise InvalidSpec(field, value, 'expected an RFC 3339 date and time, e.g. "2026-12-01T02:00:00Z"') from None
    if parsed.tzinfo is None:
        raise InvalidSpec(field, value, 'needs an offset: end it with "Z" or e.g. "+01:00"')
    return parsed.timestamp()


def _cron_window(item: Mapping[str, object], field: str, c: Collect) -> CronWindow:
    schedule, zone = item["schedule"], item.get("timeZone", "UTC")
    try:
        ZoneInfo(str(zone))
    except (ZoneInfoNotFoundError, ValueError):
        c.add(f"{field}.timeZone", zone, 'not a known IANA time zone, e.g. "Europe/Paris"')
    try:
        CronSim(str(schedule), dt.datetime.now(UTC))
    except (CronSimError, ValueError) as e:
        c.add(f"{field}.schedule", schedule, f"not a 5-field cron expression ({e})")
    if "duration" not in item:
        c.add(f"{field}.duration", None, "required with a schedule, e.g. 2h")
    duration = c.get(lambda: parse_duration_ms(item["duration"], f"{field}.duration"), 1) if "duration" in item else 1
    window = CronWindow(str(schedule), duration, str(zone))
    if c.failed(field):  # the checks below need a valid schedule, zone and duration
        return window
    gap = shortest_gap(window.schedule, window.zone)
    if gap is None and next_start(window, dt.datetime.now(UTC).timestamp()) is None:
        c.add(f"{field}.schedule", schedule, "never matches a date")
    if gap is not None and window.duration_ms > gap * 1000:
        c.add(f"{field}.duration", item["duration"], "longer than the time between two starts "
              f"of the schedule ({durations.format_ms(round(gap * 1000))}): windows would overlap")
    return window


def _one_off_window(item: Mapping[str, object], field: str, c: Collect) -> OneOffWindow:
    if "end" not in item:
        c.add(f"{field}.end", None, "required with a start")
    start = c.get(lambda: parse_instant(item["start"], f"{field}.start"), 0.0)
    end = c.get(lambda: parse_instant(item["end"], f"{field}.end"), 1.0) if "end" in item else 1.0
    if end <= start and not c.failed(field):
        c.add(f"{field}.end", item["end"], "must be after the start")
    return OneOffWindow(start, end)


def parse_window(item: object, field: str) -> Window:
    """One window; every independent field error at once."""
    if not isinstance(item, Mapping):
        raise InvalidSpec(field, item, "expected {schedule, duration, timeZone} or {start, end}")
    if "schedule" in item and "start" not in item:
        return collecting(lambda c: _cron_window(item, field, c))
    if "start" in item and "schedule" not in item:
        return collecting(lambda c: _one_off_window(item, field, c))
    raise InvalidSpec(field, sorted(str(k)[:60] for k in item),
                      "expected either a schedule (with duration, timeZone) or a start and an end")


def parse_windows(value: object, field: str = "spec.maintenance") -> tuple[Window, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InvalidSpec(field, value, "expected a list of windows")
    return each(value, field, parse_window)


def annotation_items(text: str, field: str) -> list[dict[str, str]]:
    """``routemonitor.io/maintenance`` lines -> ``spec.maintenance`` items (syntax only; the
    items are validated by :func:`parse_windows`). Blank lines and ``#`` comments are skipped."""
    items: list[dict[str, str]] = []
    c = Collect()
    for n, line in enumerate(str(text).splitlines(), start=1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) == 2:
            items.append({"start": words[0], "end": words[1]})
        elif len(words) in (6, 7):
            items.append({"schedule": " ".join(words[:5]), "duration": words[5],
                          **({"timeZone": words[6]} if len(words) == 7 else {})})
        else:
            c.add(field, line.strip(), f"line {n}: expected 'MIN HOUR DOM MON DOW DURATION [ZONE]' "
                  "(e.g. '0 2 * * SUN 2h Europe/Paris') or 'START END' (two RFC 3339 times)")
    c.done()
    return items


def annotation_windows(text: str, field: str) -> tuple[Window, ...]:
    """The windows of a ``routemonitor.io/maintenance`` annotation; errors name ``field``."""
    try:
        return parse_windows(annotation_items(text, field))
    except InvalidSpec as e:
        raise InvalidSpec.of((as_annotation_error(error, field) for error in e.errors), e.omitted) from None


def as_annotation_error(e: FieldError, field: str) -> FieldError:
    """``spec.maintenance[1].schedule: ...`` -> ``field: window 2 (schedule): ... (got ...)``."""
    if not e.field.startswith("spec.maintenance["):
        return FieldError.of(field, e.value, e.reason)
    index, _, sub = e.field.removeprefix("spec.maintenance[").partition("]")
    where = f"window {int(index) + 1}" + (f" ({sub.lstrip('.')})" if sub else "")
    return FieldError.of(field, e.value, f"{where}: {e.reason}")
