"""Probe deadlines (route_monitor.probe.deadlines) decide what asyncio.timeout decides.

On fake time (looptime): a probe past its deadline gets TimeoutError at the deadline, not
before; a cancellation from elsewhere stays a cancellation; probes that end early leave nothing
behind once their deadlines have passed; probes with different timeouts each expire at their
own; and a real probe of a silent server through the engine fails as ``timeout`` at its deadline.
"""

from __future__ import annotations

import asyncio
import socket

import pytest

from route_monitor.probe.deadlines import Deadlines
from route_monitor.probe.prober import Prober
from route_monitor.probe.result import FailureReason
from route_monitor.spec.monitor import parse_routemonitor


async def _guarded(deadlines: Deadlines, seconds: float, work: float) -> float:
    """Sleep ``work`` seconds under a deadline; the loop time when it ended."""
    d = deadlines.start(seconds)
    try:
        try:
            await asyncio.sleep(work)
        except asyncio.CancelledError:
            if d.own():
                raise TimeoutError from None
            raise
        finally:
            d.end()
    except TimeoutError:
        return -asyncio.get_running_loop().time()
    return asyncio.get_running_loop().time()


@pytest.mark.looptime
async def test_a_probe_past_its_deadline_times_out_at_the_deadline() -> None:
    deadlines = Deadlines(asyncio.get_running_loop())
    assert await _guarded(deadlines, 5.0, 7.0) == -5.0  # negative: timed out, at t=5


@pytest.mark.looptime
async def test_probes_that_end_in_time_are_not_cancelled_and_leave_nothing_behind() -> None:
    loop = asyncio.get_running_loop()
    deadlines = Deadlines(loop)
    ends = await asyncio.gather(*(_guarded(deadlines, 5.0, 0.001 * i) for i in range(1, 50)))
    assert all(e > 0 for e in ends)
    assert deadlines.pending() == 49  # dropped lazily, by the queue's timer
    await asyncio.sleep(5.1)
    assert deadlines.pending() == 0


@pytest.mark.looptime
async def test_each_timeout_expires_at_its_own_deadline() -> None:
    deadlines = Deadlines(asyncio.get_running_loop())
    ends = await asyncio.gather(_guarded(deadlines, 3.0, 10), _guarded(deadlines, 1.0, 10),
                                _guarded(deadlines, 3.0, 2.0), _guarded(deadlines, 2.0, 10))
    assert ends == [-3.0, -1.0, 2.0, -2.0]


@pytest.mark.looptime
async def test_a_later_probe_in_the_same_queue_expires_after_an_earlier_one_ended() -> None:
    deadlines = Deadlines(asyncio.get_running_loop())
    first = asyncio.create_task(_guarded(deadlines, 4.0, 1.0))
    await asyncio.sleep(2.0)
    second = asyncio.create_task(_guarded(deadlines, 4.0, 10.0))
    assert await first == 1.0
    assert await second == -6.0


@pytest.mark.looptime
async def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    deadlines = Deadlines(asyncio.get_running_loop())
    task = asyncio.create_task(_guarded(deadlines, 5.0, 10.0))
    await asyncio.sleep(1.0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert task.cancelling() == 1


async def test_a_silent_server_fails_as_timeout_at_the_probe_deadline() -> None:
    """The prober on the real loop: a TCP server that accepts and never answers the expect step."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    port = server.getsockname()[1]
    spec = parse_routemonitor({
        "apiVersion": "routemonitor.io/v1alpha1", "kind": "RouteMonitor",
        "metadata": {"name": "silent", "namespace": "t"},
        "spec": {"target": {"url": f"tcp://127.0.0.1:{port}"}, "slo": {"availability": "99"},
                 "probe": {"timeout": "300ms", "tcp": {"steps": [{"expect": "^220"}]}}}})
    prober = Prober()
    try:
        req = prober.request(spec.key, f"tcp://127.0.0.1:{port}", spec.probe)
        results = [await prober.probe(req) for _ in range(2)]
    finally:
        server.close()
    for r in results:
        assert (r.success, r.reason) == (False, FailureReason.TIMEOUT), r
        assert 0.29 <= r.duration_seconds < 2.0, r
