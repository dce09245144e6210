"""The range of ``route-monitor report`` (pure): calendar months in UTC by default or in a zone
(DST months are 743/745 hours), dates with ``--to`` included, the previous month by default, a
range reaching past now ends now, and errors that name the option; the day-long chunks the
probes are counted in cover the range exactly.
"""

from __future__ import annotations

import datetime as dt

import pytest

from route_monitor.cli.commands.report import chunks
from route_monitor.reports.reportrange import RangeError, resolve

NOW = dt.datetime(2026, 11, 23, 10, 0, 0, 123456, tzinfo=dt.UTC)


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.UTC)


@pytest.mark.parametrize(("kwargs", "start", "end", "hours"), [
    pytest.param({"month": "2026-10"}, utc(2026, 10, 1), utc(2026, 11, 1), 744, id="month-utc"),
    pytest.param({"month": "2026-02"}, utc(2026, 2, 1), utc(2026, 3, 1), 672, id="february"),
    pytest.param({"month": "2025-12"}, utc(2025, 12, 1), utc(2026, 1, 1), 744, id="december-rolls-the-year"),
    pytest.param({"month": "2026-10", "zone": "Europe/Paris"}, utc(2026, 9, 30, 22), utc(2026, 10, 31, 23), 745,
                 id="paris-october-has-745-hours"),
    pytest.param({"month": "2026-03", "zone": "Europe/Paris"}, utc(2026, 2, 28, 23), utc(2026, 3, 31, 22), 743,
                 id="paris-march-has-743-hours"),
    pytest.param({}, utc(2026, 10, 1), utc(2026, 11, 1), 744, id="default-previous-month"),
    pytest.param({"start": "2026-10-01", "end": "2026-10-07"}, utc(2026, 10, 1), utc(2026, 10, 8), 168,
                 id="to-date-is-included"),
    pytest.param({"start": "2026-10-01T06:00:00Z", "end": "2026-10-01T18:00:00+00:00"}, utc(2026, 10, 1, 6),
                 utc(2026, 10, 1, 18), 12, id="date-times"),
    pytest.param({"start": "2026-11-23"}, utc(2026, 11, 23), utc(2026, 11, 23, 10), 10, id="from-until-now"),
])
def test_ranges(kwargs: dict[str, str], start: dt.datetime, end: dt.datetime, hours: int) -> None:
    rng = resolve(month=kwargs.get("month"), start=kwargs.get("start"), end=kwargs.get("end"),
                  zone=kwargs.get("zone", "UTC"), now=NOW)
    assert (rng.start, rng.end, rng.seconds) == (start, end, hours * 3600)


def test_a_range_reaching_past_now_ends_now_and_says_so() -> None:
    rng = resolve(month="2026-11", start=None, end=None, zone="UTC", now=NOW)
    assert rng.clipped and rng.end == NOW.replace(microsecond=0)
    assert rng.describe() == "2026-11-01T00:00:00Z to 2026-11-23T10:00:00Z (UTC) (so far: the range ends in the future)"


@pytest.mark.parametrize(("kwargs", "message"), [
    pytest.param({"month": "2026-13"}, "--month: '2026-13' is not a month", id="month-13"),
    pytest.param({"month": "October"}, "--month:", id="month-in-words"),
    pytest.param({"month": "2026-10", "start": "2026-10-01"}, "either --month or --from/--to", id="both"),
    pytest.param({"end": "2026-10-01"}, "--to: needs --from", id="to-alone"),
    pytest.param({"start": "2026-02-30"}, "--from: '2026-02-30' is not a date", id="no-such-day"),
    pytest.param({"start": "yesterday"}, "--from: 'yesterday'", id="words"),
    pytest.param({"start": "2026-10-08", "end": "2026-10-01"}, "--to: the range ends before it starts", id="reversed"),
    pytest.param({"start": "2027-01-01"}, "--from: the range starts in the future", id="future"),
    pytest.param({"month": "2026-10", "zone": "Mars/Olympus"}, "--timezone: 'Mars/Olympus'", id="bad-zone"),
])
def test_errors_name_the_option(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(RangeError, match=message.replace("(", r"\(")):
        resolve(month=kwargs.get("month"), start=kwargs.get("start"), end=kwargs.get("end"),
                zone=kwargs.get("zone", "UTC"), now=NOW)


def test_chunks_cover_the_range_exactly() -> None:
    start = utc(2026, 9, 30, 22).timestamp()
    got = chunks(start, 745 * 3600)
    assert len(got) == 32 and got[-1] == (start + 745 * 3600, 3600)
    assert [end - length for end, length in got] == [start, *(end for end, _ in got[:-1])]
    assert chunks(start, 86_400) == [(start + 86_400, 86_400)]
