"""Exact probe counts over one chunk of a report's range, never extrapolated; pure.

``increase()`` stretches a window's first and last samples to the window's edges, in
proportion to the window's own average rate. Summed over the days of a month, every day with
failures gains about one scrape interval's worth of them (720 failures in a day read as 720.5
at 1-minute scrapes), although the jump between two days' samples had none. So the report
counts what the samples say, per series, over each chunk ``(start, end]``:

- a *regular* series (a sample in the hour before ``start``, no counter reset in the chunk)
  counted ``last sample <= end`` minus ``last sample <= start``: consecutive chunks telescope,
  so the range's count is exactly the sum of the increments of the samples within it;
- any other series (a reset: the prober restarted; or no sample in the hour before: a new
  series, a prober that moved to another pod, a gap in the data) from its raw samples: each
  sample adds its rise over the previous one, or its whole value after a reset (the counter
  started again from 0), as ``increase()`` does but without extrapolation. A series with no
  sample before the chunk starts counting from its first one. Such series are few (restarts
  and moves), so their raw samples are read one series at a time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from alert_rules import names
from route_monitor.slo.promapi import Sample

PAD_SECONDS = 3600
"""How far before a chunk a series' last sample is looked for (a regular series has one)."""

SeriesKey = tuple[tuple[str, str], ...]


def key_of(labels: Mapping[str, str]) -> SeriesKey:
    return tuple(sorted((k, v) for k, v in labels.items() if k != "__name__"))


def _values(samples: Sequence[Sample]) -> dict[SeriesKey, float]:
    return {key_of(s.labels): s.value for s in samples}


@dataclass(frozen=True)
class Chunk:
    """What four instant queries say of every counter series over ``(start, end]``."""

    start: float
    at_end: Sequence[Sample]
    """The last sample within the chunk (``last_over_time`` over the chunk, at its end)."""
    at_start: Sequence[Sample]
    """The last sample within :data:`PAD_SECONDS` before the chunk (at its start)."""
    resets_to_end: Sequence[Sample]
    """Counter resets from :data:`PAD_SECONDS` before the chunk to its end."""
    resets_to_start: Sequence[Sample]
    """Counter resets within :data:`PAD_SECONDS` before the chunk."""


def split(chunk: Chunk) -> tuple[dict[SeriesKey, float], list[SeriesKey]]:
    """Counts of the regular series, and the series to count from their raw samples."""
    end, start = _values(chunk.at_end), _values(chunk.at_start)
    to_end, to_start = _values(chunk.resets_to_end), _values(chunk.resets_to_start)
    counts: dict[SeriesKey, float] = {}
    irregular: list[SeriesKey] = []
    for key, last in end.items():
        first = start.get(key)
        if first is not None and to_end.get(key, 0.0) == to_start.get(key, 0.0) and last >= first:
            counts[key] = last - first
        else:
            irregular.append(key)
    return counts, sorted(irregular)


def counted(points: Sequence[tuple[float, float]], start: float) -> float:
    """Sum of the increments of the samples after ``start`` (each over the sample before it)."""
    before = [v for t, v in points if t <= start]
    after = [v for t, v in points if t > start]
    previous = before[-1] if before else (after.pop(0) if after else 0.0)
    total = 0.0
    for value in after:
        total += value - previous if value >= previous else value
        previous = value
    return total


def by_result(counts: Mapping[SeriesKey, float]) -> list[Sample]:
    """Counts summed by namespace, monitor and result (what the report reads)."""
    wanted = (*names.IDENTITY_LABELS, names.LABEL_RESULT)
    out: dict[SeriesKey, float] = {}
    for key, value in counts.items():
        labels = dict(key)
        group = tuple((k, labels.get(k, "")) for k in wanted)
        out[group] = out.get(group, 0.0) + value
    return [Sample(dict(k), v) for k, v in sorted(out.items())]
