"""A TCP probe: connect (and TLS), then the monitor's send/expect steps, like
blackbox_exporter's ``tcp`` module with ``query_response``.

The connection is :func:`~route_monitor.probe.net.connect.open_stream`'s, so DNS, connect and TLS
fail exactly as an HTTP probe's do. Steps run in order: ``send`` writes its bytes; ``expect``
reads until its regular expression matches what the server sent since the previous match (a
Redis ``+PONG``, an SMTP ``220`` banner). What does not match fails as ``expect_mismatch``:

- the server closes the connection first: at once, with what was read;
- more than :data:`MAX_READ_BYTES` arrive without a match;
- the deadline passes after some bytes arrived (nothing at all is ``timeout``: the server said
  nothing, which is not a wrong answer).

No step is success once connected (and, with TLS, handshaken).
"""

from __future__ import annotations

from route_monitor.probe.net.connect import AnyStream, Progress
from route_monitor.probe.reasons import ProbeFailure
from route_monitor.probe.result import FailureReason
from route_monitor.spec.bodyregex import BodyRegex, MatchTimeout
from route_monitor.spec.protocol import TCPStep

MAX_READ_BYTES = 64 * 1024
"""What one ``expect`` reads at most before it gives up."""
_MARGIN_S = 0.02


def _shown(data: bytes) -> str:
    text = data[-120:].decode("utf-8", "replace")
    return repr(text) if len(data) <= 120 else f"...{text!r}"


async def run_steps(stream: AnyStream, steps: tuple[TCPStep, ...], regexes: tuple[BodyRegex | None, ...],
                    progress: Progress) -> str:
    """Every step on ``stream``; the detail of a success (the last line matched, if any)."""
    pending = b""
    last = ""
    for step, regex in zip(steps, regexes, strict=True):
        try:
            if step.send is not None:
                await stream.write(step.send)
                continue
            assert regex is not None
            pending, last = await _expect(stream, regex, pending, progress)
        except (ConnectionResetError, BrokenPipeError) as e:  # closed while we still spoke: a wrong answer
            wanted = f"; expected /{step.expect[:100]}/" if step.expect else ""
            raise ProbeFailure(FailureReason.EXPECT_MISMATCH,
                               f"the server reset the connection ({e.strerror or type(e).__name__}){wanted}") from None
    return f"connected{', ' + last if last else ''}"


async def _expect(stream: AnyStream, regex: BodyRegex, pending: bytes, progress: Progress) -> tuple[bytes, str]:
    """Read until ``regex`` matches; what follows the match (for the next step) and a detail."""
    data = pending
    while True:
        if data:
            text = data.decode("latin-1")  # one character per byte: match offsets are byte offsets
            done, found = regex.search_inline(text)
            if found is None:
                # a deadline from here on (a slow match, or the next read) reads as this mismatch
                progress.matching = f"no match for /{regex.pattern[:100]}/ in {_shown(data)} before the deadline"
            if not done:
                try:
                    found = await regex.search_slow(text, progress.deadline - _MARGIN_S)
                except MatchTimeout as e:
                    raise ProbeFailure(FailureReason.EXPECT_MISMATCH, str(e)) from None
            if found is not None:
                progress.matching = ""
                return data[found.end():], f"matched {_shown(data[found.start():found.end()])}"
        if len(data) >= MAX_READ_BYTES:
            raise ProbeFailure(FailureReason.EXPECT_MISMATCH,
                               f"no match for /{regex.pattern[:100]}/ in the first {MAX_READ_BYTES} bytes")
        chunk = await stream.read(MAX_READ_BYTES - len(data))
        if not chunk:
            got = f"after {_shown(data)}" if data else "before sending anything"
            raise ProbeFailure(FailureReason.EXPECT_MISMATCH,
                               f"the server closed the connection {got}; expected /{regex.pattern[:100]}/")
        data += chunk

