"""The time range of ``route-monitor report``: a calendar month or dates, in a time zone; pure.

Months and dates are resolved in ``--timezone`` (UTC by default): ``--month 2026-10`` is
``[2026-10-01T00:00, 2026-11-01T00:00)`` there. ``--to`` as a date includes that day (up to the
next midnight); as a date-time it is the end itself. Without any option: the previous calendar
month. A range reaching past now ends now (and says so); one starting in the future is refused.
Errors name the option.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


class RangeError(ValueError):
    """An option of the range is invalid; the message names it."""


@dataclass(frozen=True)
class ReportRange:
    start: dt.datetime
    end: dt.datetime
    zone: str
    clipped: bool = False
    """The requested end was in the future: the range ends at the time of the report."""

    @property
    def seconds(self) -> int:
        return int(self.end.timestamp() - self.start.timestamp())  # not wall-clock: DST days are 23/25 h

    def describe(self) -> str:
        def fmt(t: dt.datetime) -> str:
            return t.isoformat(timespec="seconds").replace("+00:00", "Z")
        note = " (so far: the range ends in the future)" if self.clipped else ""
        return f"{fmt(self.start)} to {fmt(self.end)} ({self.zone}){note}"


def _zone(name: str) -> ZoneInfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise RangeError(f"--timezone: {name!r} is not an IANA time zone (e.g. UTC, Europe/Paris)") from None


def _month_start(year: int, month: int, tz: ZoneInfo) -> dt.datetime:
    return dt.datetime(year + (month - 1) // 12, (month - 1) % 12 + 1, 1, tzinfo=tz)


def _instant(text: str, option: str, tz: ZoneInfo, *, end: bool) -> dt.datetime:
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        try:
            day = dt.date.fromisoformat(text)
        except ValueError:
            raise RangeError(f"{option}: {text!r} is not a date") from None
        midnight = dt.datetime(day.year, day.month, day.day, tzinfo=tz)
        return (midnight + dt.timedelta(days=1)).replace(tzinfo=tz) if end else midnight
    try:
        t = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise RangeError(f"{option}: {text!r} is not a date (YYYY-MM-DD) or an ISO date-time") from None
    return (t if t.tzinfo else t.replace(tzinfo=tz)).replace(microsecond=0)


def resolve(*, month: str | None, start: str | None, end: str | None, zone: str, now: dt.datetime) -> ReportRange:
    tz = _zone(zone)
    if month is not None and (start is not None or end is not None):
        raise RangeError("--month: give either --month or --from/--to, not both")
    if end is not None and start is None:
        raise RangeError("--to: needs --from")
    if month is not None:
        m = re.fullmatch(r"(\d{4})-(\d{2})", month)
        if m is None or not 1 <= int(m[2]) <= 12:
            raise RangeError(f"--month: {month!r} is not a month (YYYY-MM, e.g. 2026-10)")
        begin = _month_start(int(m[1]), int(m[2]), tz)
        finish = _month_start(int(m[1]), int(m[2]) + 1, tz)
    elif start is not None:
        begin = _instant(start, "--from", tz, end=False)
        finish = _instant(end, "--to", tz, end=True) if end is not None else now
    else:
        local = now.astimezone(tz)
        finish = _month_start(local.year, local.month, tz)
        begin = _month_start(local.year, local.month - 1, tz)
    if begin >= now:
        raise RangeError(f"--from: the range starts in the future ({begin.isoformat()})")
    if finish <= begin:
        raise RangeError("--to: the range ends before it starts")
    clipped = finish > now
    return ReportRange(begin, min(finish, now.replace(microsecond=0)), zone, clipped)
