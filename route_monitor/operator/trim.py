"""Give the C heap's free pages back to the system after a burst of reconciles.

A burst (hundreds of new monitors, a start-up) allocates and frees many large buffers: response
bodies of ~11 KiB PrometheusRules, TLS records, JSON. glibc keeps what was freed inside its heap
unless it lies at the very top, so the resident size stays at the burst's high-water mark. On a
1,000-monitor burst ``malloc_trim(0)`` handed back ~4 MiB (4 KiB per monitor, measured in
``benchmarks/RESULTS-operator.md``). It runs once the reconcile queue is empty after at least
``after`` reconciles, never during one; on a C library without it (musl), nothing happens.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import time
from collections.abc import Callable

log = logging.getLogger(__name__)


def _malloc_trim() -> Callable[[], object] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    return lambda: trim(0)


class HeapTrimmer:
    """``done()`` after each reconcile, ``idle()`` when the queue is empty."""

    def __init__(self, after: int = 200, trim: Callable[[], object] | None = None) -> None:
        self._after = after
        self._count = 0
        self._trim = trim or _malloc_trim()

    def done(self) -> None:
        self._count += 1

    def idle(self) -> None:
        if self._count < self._after or self._trim is None:
            return
        self._count = 0
        start = time.perf_counter()
        self._trim()
        log.debug("heap trimmed after a burst of reconciles in %.1f ms", (time.perf_counter() - start) * 1000)
