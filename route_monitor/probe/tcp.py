"""A TCP probe: connect (and TLS), then the monitor's send/expect steps, like
blackbox_exporter's ``tcp`` module with ``query_response``.

The connection is :func:`~route_monitor.probe.net.connect.open_stream`'s (over TLS) or
:mod:`~route_monitor.probe.tcpdriven`'s (plain), so DNS, connect and TLS fail exactly as an
HTTP probe's do. Steps run in order: ``send`` writes its bytes; ``expect`` reads until its
regular expression matches what the server sent since the previous match (a Redis ``+PONG``,
an SMTP ``220`` banner). What does not match fails as ``expect_mismatch``:

- the server closes the connection first: at once, with what was read;
- more than :data:`MAX_READ_BYTES` arrive without a match;
- the deadline passes after some bytes arrived (nothing at all is ``timeout``: the server said
  nothing, which is not a wrong answer).

No step is success once connected (and, with TLS, handshaken).

:class:`Steps` makes these decisions without doing any I/O, so the coroutine over a TLS stream
(:func:`run_steps`) and the I/O callbacks of a plain socket (:mod:`~route_monitor.probe.tcpdriven`)
decide alike.
"""

from __future__ import annotations

from typing import Any

from route_monitor.probe.net.connect import AnyStream, Progress
from route_monitor.probe.reasons import ProbeFailure
from route_monitor.probe.result import FailureReason
from route_monitor.spec.bodyregex import BodyRegex, MatchTimeout
from route_monitor.spec.protocol import TCPStep

MAX_READ_BYTES = 64 * 1024
"""What one ``expect`` reads at most before it gives up."""
_MARGIN_S = 0.02
MATCHED, MORE, SLOW = range(3)
"""What :meth:`Steps.search` found: the step is done; read more (at most :meth:`Steps.room`
bytes); the pattern needs longer than an inline slice (:meth:`Steps.search_slow`)."""


def _shown(data: bytes) -> str:
    text = data[-120:].decode("utf-8", "replace")
    return repr(text) if len(data) <= 120 else f"...{text!r}"


class Steps:
    """Where one probe is in its steps, and what was read and not consumed yet (mutable, owned
    by that probe)."""

    __slots__ = ("_at", "_data", "_last", "_progress", "_regexes", "_steps")

    def __init__(self, steps: tuple[TCPStep, ...], regexes: tuple[BodyRegex | None, ...], progress: Progress) -> None:
        self._steps, self._regexes, self._progress = steps, regexes, progress
        self._at = 0
        self._data = b""
        self._last = ""

    def sends(self) -> bytes:
        """The bytes of the ``send`` steps due now, together (up to the next ``expect``)."""
        steps, at, out = self._steps, self._at, b""
        while at < len(steps) and (send := steps[at].send) is not None:
            out += send
            at += 1
        self._at = at
        return out

    @property
    def waiting(self) -> bool:
        """An ``expect`` step is due (False: every step is done)."""
        return self._at < len(self._steps)

    def room(self) -> int:
        return MAX_READ_BYTES - len(self._data)

    def search(self) -> int:
        """The current ``expect`` on what was read since the previous match (nothing read: no search)."""
        data = self._data
        if data:
            regex = self._regexes[self._at]
            assert regex is not None
            done, found = regex.search_inline(data.decode("latin-1"))  # one character per byte: byte offsets
            if found is not None:
                return self._matched(found)
            # a deadline from here on (a slow match, or the next read) reads as this mismatch
            self._progress.matching = f"no match for /{regex.pattern[:100]}/ in {_shown(data)} before the deadline"
            if not done:
                return SLOW
        return self._more()

    async def search_slow(self) -> int:
        """:meth:`search` for a pattern that needs more than an inline slice, bounded by the deadline."""
        regex = self._regexes[self._at]
        assert regex is not None
        try:
            found = await regex.search_slow(self._data.decode("latin-1"), self._progress.deadline - _MARGIN_S)
        except MatchTimeout as e:
            raise ProbeFailure(FailureReason.EXPECT_MISMATCH, str(e)) from None
        return self._more() if found is None else self._matched(found)

    def feed(self, chunk: bytes) -> int:
        """What one read returned (``b""``: the server closed the connection), then :meth:`search`."""
        if not chunk:
            data, regex = self._data, self._regexes[self._at]
            assert regex is not None
            got = f"after {_shown(data)}" if data else "before sending anything"
            raise ProbeFailure(FailureReason.EXPECT_MISMATCH,
                               f"the server closed the connection {got}; expected /{regex.pattern[:100]}/")
        self._data += chunk
        return self.search()

    def reset(self, e: OSError, *, sending: bool) -> ProbeFailure:
        """The failure of a connection reset while sending, or while reading for an ``expect``."""
        expect = None if sending or not self.waiting else self._steps[self._at].expect
        wanted = f"; expected /{expect[:100]}/" if expect else ""
        return ProbeFailure(FailureReason.EXPECT_MISMATCH,
                            f"the server reset the connection ({e.strerror or type(e).__name__}){wanted}")

    def detail(self) -> str:
        """A success's detail: the last match, if any."""
        return f"connected{', ' + self._last if self._last else ''}"

    def _matched(self, found: Any) -> int:
        data = self._data
        self._progress.matching = ""
        self._last = f"matched {_shown(data[found.start():found.end()])}"
        self._data = data[found.end():]
        self._at += 1
        return MATCHED

    def _more(self) -> int:
        if len(self._data) >= MAX_READ_BYTES:
            regex = self._regexes[self._at]
            assert regex is not None
            raise ProbeFailure(FailureReason.EXPECT_MISMATCH,
                               f"no match for /{regex.pattern[:100]}/ in the first {MAX_READ_BYTES} bytes")
        return MORE


async def run_steps(stream: AnyStream, steps: Steps) -> str:
    """Every step on ``stream``; the detail of a success (the last match, if any)."""
    while True:
        out = steps.sends()
        if out:
            try:
                await stream.write(out)
            except (ConnectionResetError, BrokenPipeError) as e:  # closed while we still spoke: a wrong answer
                raise steps.reset(e, sending=True) from None
        if not steps.waiting:
            return steps.detail()
        state = steps.search()
        while state != MATCHED:
            if state == SLOW:
                state = await steps.search_slow()
                continue
            try:
                chunk = await stream.read(steps.room())
            except (ConnectionResetError, BrokenPipeError) as e:
                raise steps.reset(e, sending=False) from None
            state = steps.feed(chunk)
