"""A plain TCP probe driven by its socket's readiness callbacks: connect, send and read happen in
I/O callbacks, and the probe's task wakes once, when the steps are done or failed.

Over coroutines (:func:`~route_monitor.probe.net.connect.open_stream`, then
:func:`~route_monitor.probe.tcp.run_steps`) each wait for the socket (connected, then readable)
resolves a future, and the future wakes the task in a loop iteration of its own. A probe costs
CPU mostly in asyncio's machinery, not in its own decisions (``benchmarks/RESULTS-protocols.md``),
so here the task awaits one future per connection attempt, and the callbacks that the selector
calls anyway do the work in between: when connected, send the steps' bytes and wait for the
socket to become readable; when readable, read and match; resolve the future at the end. A
connection the kernel completed within ``connect`` itself (a target on the same host, over
loopback) is used at once, without waiting a loop iteration for it to be reported writable.

Every decision (what to send, a match, a mismatch, a reset) is :class:`~route_monitor.probe.tcp.Steps`',
as over TLS, and what the prober sees is what the coroutine path raised: a connect error as an
``OSError`` in the connect phase (the next address is tried), the rest after it. A pattern that
needs more than an inline slice hands over to the task (``Steps.search_slow``, in a thread),
which then resumes the callbacks.
"""

from __future__ import annotations

import asyncio
import socket

from route_monitor.probe.net import readiness
from route_monitor.probe.net.connect import CONNECT, IN_PROGRESS, Progress, addresses_of, connect_error, new_socket
from route_monitor.probe.reasons import Phase
from route_monitor.probe.tcp import MATCHED, SLOW, Steps

DONE, FAILED = 3, 4
"""What a driver's future resolves to beside :data:`~route_monitor.probe.tcp.SLOW`: every step
done; failed (its ``error``)."""
_IDLE, _CONNECTING, _SENDING, _READING = range(4)


async def run(host: str, port: int, steps: Steps, progress: Progress) -> str:
    """Connect to ``host:port`` (each address in turn until one accepts) and run ``steps``; the
    detail of a success, else the exception the prober classifies."""
    loop = asyncio.get_running_loop()
    last: OSError | None = None
    for address in await addresses_of(host, progress):
        driver = _Driver(loop, address, port, steps, progress)
        try:
            state = await driver.start()
            while state == SLOW:
                state = await driver.resume(await steps.search_slow())
        finally:
            driver.close()
        if state == DONE:
            return steps.detail()
        error = driver.error
        if progress.phase is not Phase.CONNECT or not isinstance(error, OSError):
            raise error
        last = error
    assert last is not None
    raise last


class _Driver:
    """One connection attempt's callbacks; ``future`` resolves to DONE, SLOW or FAILED."""

    __slots__ = ("_address", "_fd", "_future", "_loop", "_out", "_port", "_progress", "_readiness", "_sock", "_steps",
                 "_waiting", "error")

    def __init__(self, loop: asyncio.AbstractEventLoop, address: str, port: int, steps: Steps,
                 progress: Progress) -> None:
        self._loop, self._address, self._port, self._steps, self._progress = loop, address, port, steps, progress
        self._readiness = readiness.of(loop)
        self._sock: socket.socket | None = None
        self._fd = -1
        self._waiting = _IDLE
        self._out = b""
        self._future: asyncio.Future[int] = loop.create_future()
        self.error: BaseException = AssertionError("no error")

    def start(self) -> asyncio.Future[int]:
        try:
            sock = self._sock = new_socket(self._address)
            self._fd = sock.fileno()
            err = sock.connect_ex((self._address, self._port))
        except OSError as e:
            self._fail(e)
            return self._future
        if err in IN_PROGRESS:
            try:  # a handshake the kernel completed within the call (a target on this host): no wait
                sock.getpeername()
            except OSError:  # under way (or failed: SO_ERROR says which once it is writable)
                self._wait(_CONNECTING)
                return self._future
            self._connected()
        elif err:
            self._fail(connect_error(err, self._address, self._port))
        else:
            self._connected()
        return self._future

    def resume(self, state: int) -> asyncio.Future[int]:
        """Go on after the task's slow match."""
        self._future = self._loop.create_future()
        self._advance(state)
        return self._future

    def close(self) -> None:
        """Stop waiting for the socket and close it (the task's ``finally``: done, failed or cancelled)."""
        self._wait(_IDLE)
        if self._sock is not None:
            self._sock.close()

    def _on_ready(self, events: int) -> None:
        if self._future.done():  # cancelled: the task closes
            return
        if self._waiting == _READING:
            self._on_readable()
        else:
            self._on_writable()

    def _on_writable(self) -> None:
        assert self._sock is not None
        if self._waiting == _CONNECTING:
            err = self._sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if err:
                self._fail(connect_error(err, self._address, self._port))
            else:
                self._connected()
        else:
            self._advance(MATCHED)

    def _connected(self) -> None:
        progress = self._progress
        progress.address = self._address
        progress.lap(CONNECT)
        progress.phase = Phase.HTTP
        self._advance(MATCHED)

    def _advance(self, state: int) -> None:
        """On from ``state`` (MATCHED: the current step is done) until the socket must be waited for."""
        steps, sock = self._steps, self._sock
        assert sock is not None
        try:
            while state == MATCHED:
                out = self._out or steps.sends()
                if out:
                    try:
                        sent = sock.send(out)
                    except (BlockingIOError, InterruptedError):
                        sent = 0
                    except (ConnectionResetError, BrokenPipeError) as e:  # closed while we still spoke
                        raise steps.reset(e, sending=True) from None
                    self._out = out[sent:]
                    if self._out:
                        self._wait(_SENDING)
                        return
                if not steps.waiting:
                    self._finish(DONE)
                    return
                state = steps.search()
        except Exception as e:
            self._fail(e)
            return
        if state == SLOW:
            self._finish(SLOW)
        else:
            self._wait(_READING)

    def _on_readable(self) -> None:
        steps, sock = self._steps, self._sock
        assert sock is not None
        try:
            try:
                chunk = sock.recv(steps.room())
            except (BlockingIOError, InterruptedError):
                return
            except (ConnectionResetError, BrokenPipeError) as e:
                raise steps.reset(e, sending=False) from None
            state = steps.feed(chunk)
        except Exception as e:
            self._fail(e)
            return
        self._advance(state)

    def _wait(self, waiting: int) -> None:
        """Be called back when the socket can be read (``_READING``) or written (the connection, the
        rest of a send), or not at all (``_IDLE``)."""
        if waiting == self._waiting:
            return
        if waiting == _IDLE:
            self._readiness.unwatch(self._fd)
        else:
            self._readiness.watch(self._fd, readiness.READ if waiting == _READING else readiness.WRITE, self._on_ready)
        self._waiting = waiting

    def _finish(self, state: int) -> None:
        self._wait(_IDLE)
        if not self._future.done():
            self._future.set_result(state)

    def _fail(self, error: BaseException) -> None:
        self.error = error
        self._finish(FAILED)
