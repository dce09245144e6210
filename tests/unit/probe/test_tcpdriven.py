"""A plain TCP probe driven by its socket's callbacks decides exactly as the coroutine path over a
stream does (the path TLS takes), against the real line server: the same success or failure, the
same reason, the same detail, for every kind of answer; and it leaves no socket behind when its
deadline cuts it off, a send larger than the socket's buffer, or a slow pattern handed to a thread;
where there is no epoll, the loop's own watches do the same."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import threading

import pytest

from route_monitor.probe import tcp, tcpdriven
from route_monitor.probe.net import readiness
from route_monitor.probe.net.connect import Progress, open_stream
from route_monitor.probe.perloop import PerLoop
from route_monitor.probe.reasons import ProbeFailure, classify
from route_monitor.probe.result import FailureReason as R
from route_monitor.spec import bodyregex
from route_monitor.spec.bodyregex import BodyRegex
from route_monitor.spec.protocol import TCPStep
from tests.support.dnsserver import SILENT
from tests.support.protocolservers import BANNER, CLOSE, ERROR, PONG, LineServer

pytestmark = pytest.mark.timeout(60)

PING = (TCPStep(send=b"PING\r\n"), TCPStep(expect=r"^\+PONG"))
AGAIN = (TCPStep(send=b"PING\r\n"), TCPStep(expect=r"\+PONG"))
"""A second round: what follows the first match (its line end) is read before the next ``+PONG``."""
Outcome = tuple[bool, R | None, str]


async def _probe(port: int, steps: tuple[TCPStep, ...], *, driven: bool, timeout: float = 0.5) -> Outcome:
    """One probe as the prober runs it (its deadline and classification), by one of the two paths."""
    progress = Progress(deadline=asyncio.get_running_loop().time() + timeout)
    progress.mismatch = R.EXPECT_MISMATCH
    state = tcp.Steps(steps, tuple(BodyRegex.of(s.expect) if s.expect is not None else None for s in steps), progress)
    try:
        async with asyncio.timeout(timeout):
            if driven:
                return True, None, await tcpdriven.run("127.0.0.1", port, state, progress)
            stream = await open_stream("127.0.0.1", port, progress, tls=None)
            try:
                return True, None, await tcp.run_steps(stream, state)
            finally:
                stream.abort()
    except Exception as e:
        error: Exception = ProbeFailure(progress.mismatch, progress.matching) if (
            isinstance(e, TimeoutError) and progress.matching) else e
        return False, *classify(error, progress.phase)


async def _both(mode: str, steps: tuple[TCPStep, ...]) -> tuple[Outcome, Outcome]:
    server = LineServer(mode)
    try:
        return await _probe(server.port, steps, driven=True), await _probe(server.port, steps, driven=False)
    finally:
        server.close()


@pytest.mark.parametrize(("mode", "steps", "ok", "reason"), [
    (PONG, PING, True, None),
    (PONG, (), True, None),
    (PONG, PING + AGAIN + (TCPStep(send=b"PING\r\n"),), True, None),
    (BANNER, (TCPStep(expect="^220 "), TCPStep(expect="ready")), True, None),
    (BANNER, (TCPStep(expect="^220 "), TCPStep(expect="nowhere")), False, R.EXPECT_MISMATCH),
    (ERROR, PING, False, R.EXPECT_MISMATCH),
    (CLOSE, (TCPStep(expect=r"^\+PONG"),), False, R.EXPECT_MISMATCH),
    (SILENT, PING, False, R.TIMEOUT),
], ids=["ping-pong", "connect-only", "two-rounds-and-a-last-send", "banner-then-rest-of-line-unread",
        "banner-then-no-match-before-the-deadline", "wrong-answer", "closed-at-once", "silent"])
async def test_both_paths_decide_alike(mode: str, steps: tuple[TCPStep, ...], ok: bool, reason: R | None) -> None:
    driven, streamed = await _both(mode, steps)
    assert driven == streamed
    assert driven[:2] == (ok, reason), driven


async def test_refused_port_is_a_connect_failure_on_both_paths() -> None:
    server = LineServer()
    port = server.port
    server.close()
    driven, streamed = await _probe(port, PING, driven=True), await _probe(port, PING, driven=False)
    assert driven == streamed
    assert driven[1] is R.CONNECTION_REFUSED


async def test_a_send_larger_than_the_socket_buffer_goes_out_whole() -> None:
    filler = (b"x" * 1023 + b"\n") * 8192  # 8 MiB of lines the server reads and ignores, then PING
    steps = (TCPStep(send=filler), *PING)
    server = LineServer(PONG)
    try:
        outcome = await _probe(server.port, steps, driven=True, timeout=20)
    finally:
        server.close()
    assert outcome == (True, None, "connected, matched '+PONG'")


async def test_a_pattern_too_slow_for_the_loop_is_matched_in_a_thread_and_the_steps_go_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bodyregex, "INLINE_SLICE_S", 1e-9)  # every match is "slow": the hand-over path
    driven, streamed = await _both(PONG, PING + AGAIN)
    assert driven == streamed == (True, None, "connected, matched '+PONG'")


async def _fds_down_to(count: int, within: float = 10.0) -> int:
    """Open descriptors once they are down to ``count`` (the servers, in this process, close their
    side when they see ours closed), or as many as are still open after ``within`` seconds."""
    loop = asyncio.get_running_loop()
    give_up = loop.time() + within
    while (now := len(os.listdir("/proc/self/fd"))) > count and loop.time() < give_up:
        await asyncio.sleep(0.05)
    return now


async def test_probes_cut_off_by_their_deadline_leave_no_socket_open() -> None:
    silent, pong = LineServer(SILENT), LineServer(PONG)
    readiness.of(asyncio.get_running_loop())  # the loop's epoll set (one descriptor for the loop's life)
    try:
        before = len(os.listdir("/proc/self/fd"))
        outcomes = await asyncio.gather(*(_probe(silent.port, PING, driven=True, timeout=0.5) for _ in range(20)))
        after = await _fds_down_to(before)
        again = [await _probe(pong.port, PING, driven=True) for _ in range(5)]  # descriptors reused
    finally:
        silent.close()
        pong.close()
    assert {o[1] for o in outcomes} <= {R.TIMEOUT, R.CONNECTION_TIMEOUT}, outcomes  # cut off, whichever phase
    assert after <= before
    assert all(o[0] for o in again), again


async def test_without_epoll_the_loop_watches_the_sockets_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readiness, "_EPOLL", False)  # as on a system without epoll
    monkeypatch.setattr(readiness, "of", PerLoop(readiness.Readiness).of)  # a fresh one, made without epoll
    driven, streamed = await _both(PONG, PING + AGAIN)
    assert driven == streamed == (True, None, "connected, matched '+PONG'")
    assert readiness.of(asyncio.get_running_loop())._epoll is None


async def test_a_connection_that_completes_later_is_waited_for() -> None:
    """A full accept queue drops the SYN: the connection completes on the kernel's retransmission
    (after a second or more), once the server accepts; not within ``connect``, as on loopback
    otherwise, so the probe waits for the socket to become writable."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(0)
    port = server.getsockname()[1]
    fillers = []
    for _ in range(4):  # fill the accept queue (its length is the backlog + 1 on Linux)
        filler = socket.socket()
        filler.setblocking(False)
        filler.connect_ex(("127.0.0.1", port))
        fillers.append(filler)

    def serve() -> None:
        server.settimeout(10)
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            conn.settimeout(5)
            with contextlib.suppress(OSError):
                if conn.recv(100).startswith(b"PING"):
                    conn.sendall(b"+PONG\r\n")
            conn.close()

    probe = asyncio.create_task(_probe(port, (TCPStep(send=b"PING\r\n"), TCPStep(expect=r"^\+PONG")), driven=True,
                                       timeout=20))
    await asyncio.sleep(0)  # the probe's first step: its SYN sent (and dropped); then the server accepts
    for filler in fillers:
        filler.close()
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        assert await probe == (True, None, "connected, matched '+PONG'")
    finally:
        server.close()
        thread.join(10)
