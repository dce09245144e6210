"""The heap is trimmed once per burst of reconciles, when the queue is empty, never in between;
and glibc's ``malloc_trim`` is found on this machine (the benchmark's RSS figures rely on it)."""

from __future__ import annotations

from route_monitor.operator import trim


def test_trimmed_once_the_queue_empties_after_a_burst() -> None:
    calls: list[int] = []
    trimmer = trim.HeapTrimmer(after=3, trim=lambda: calls.append(1))
    trimmer.done()
    trimmer.done()
    trimmer.idle()
    assert calls == [], "two reconciles are no burst"
    trimmer.done()
    trimmer.idle()
    trimmer.idle()
    assert calls == [1], "once per burst"


def test_malloc_trim_is_found_on_glibc() -> None:
    assert trim._malloc_trim() is not None
