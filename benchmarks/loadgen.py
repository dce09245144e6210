"""Load generator for the peer: calls blackbox_exporter's ``/probe`` for every target on the
same schedule our engine uses (each target once per interval, start offsets spread evenly over
the interval), over a small pool of keep-alive connections, written on raw asyncio streams so
that it stays cheap. Its own CPU is not part of the comparison (only the exporter's is).
"""

from __future__ import annotations

import asyncio
import time
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class LoadStats:
    sent: int = 0
    answered: int = 0
    succeeded: int = 0
    """Answers whose body says ``probe_success 1``."""
    errors: int = 0
    latencies: list[float] = field(default_factory=list)
    """Seconds from writing the request to the end of the exporter's answer (its queueing + the probe)."""
    late: list[float] = field(default_factory=list)
    """Seconds from the scheduled time until the request was written (the load generator's own lag,
    not the exporter's)."""

    def reset(self) -> None:
        self.sent = self.answered = self.succeeded = self.errors = 0
        self.latencies.clear()
        self.late.clear()


class ExporterPool:
    """Keep-alive HTTP/1.1 connections to one exporter; at most ``size`` requests in flight."""

    def __init__(self, host: str, port: int, size: int) -> None:
        self.host, self.port = host, port
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.slots = asyncio.Semaphore(size)

    async def get(self, path: str) -> bytes:
        async with self.slots:
            conn = self.idle.pop() if self.idle else await asyncio.open_connection(self.host, self.port)
            reader, writer = conn
            try:
                writer.write(f"GET {path} HTTP/1.1\r\nHost: {self.host}\r\n\r\n".encode())
                head = (await reader.readuntil(b"\r\n\r\n")).lower()
                if b"transfer-encoding: chunked" in head:
                    body = await _read_chunked(reader)
                else:
                    at = head.index(b"content-length:") + 15
                    body = await reader.readexactly(int(head[at:head.index(b"\r\n", at)]))
            except BaseException:
                writer.close()
                raise
            self.idle.append(conn)
            return body

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()


async def _read_chunked(reader: asyncio.StreamReader) -> bytes:
    parts = []
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
        if size == 0:
            await reader.readuntil(b"\r\n")
            return b"".join(parts)
        parts.append((await reader.readexactly(size + 2))[:-2])


async def _probe(pool: ExporterPool, path: str, due: float, stats: LoadStats) -> None:
    sent = time.monotonic()
    stats.late.append(sent - due)
    stats.sent += 1
    try:
        body = await pool.get(path)
    except (OSError, asyncio.IncompleteReadError, ValueError):
        stats.errors += 1
        return
    stats.answered += 1
    stats.latencies.append(time.monotonic() - sent)
    if b"\nprobe_success 1" in body:
        stats.succeeded += 1


async def drive(*, exporter: tuple[str, int], targets: Sequence[str], interval: float, duration: float,
                stats: LoadStats, module: str = "http_2xx", concurrency: int = 256) -> None:
    """Probe every target once per ``interval`` for ``duration`` seconds, then wait for answers."""
    pool = ExporterPool(exporter[0], exporter[1], concurrency)
    paths = [f"/probe?module={module}&target={urllib.parse.quote(t, safe='')}" for t in targets]
    n = len(paths)
    start = time.monotonic()
    end = start + duration
    tasks: set[asyncio.Task[None]] = set()
    k = 0
    while True:
        due = start + (k // n) * interval + (k % n) * interval / n
        if due >= end:
            break
        delay = due - time.monotonic()
        if delay > 0.001:
            await asyncio.sleep(delay)
        task = asyncio.create_task(_probe(pool, paths[k % n], due, stats))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        k += 1
    if tasks:
        await asyncio.wait(tasks, timeout=interval)
    for task in tasks:
        task.cancel()
    pool.close()
