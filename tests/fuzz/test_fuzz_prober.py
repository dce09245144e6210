"""Property: the prober survives any HTTP response and any cut TLS handshake (issue 15).

Generated hostile answers from a real loopback socket server (``tests.support.hostile``):
status lines (valid, odd versions and codes, garbage), header counts and sizes (up to past the
64 KiB head limit), framings (Content-Length right, short, long, conflicting; chunked with valid,
garbage or huge chunk sizes; read-until-close), bodies, written in pieces, then closed, reset or
left hanging; and real TLS handshakes cut after any number of server bytes. Whatever comes
back, a probe returns a result (never raises), a failure carries a reason from the closed set,
and it ends within its timeout.

Examples are bounded and derandomized in CI (``tests.support.fuzzing``);
``RM_HYPOTHESIS_PROFILE=long`` runs ten times as many, randomly.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from route_monitor.probe.prober import Prober, ProbeRequest
from route_monitor.probe.result import FailureReason, ProbeResult
from route_monitor.probe.tls.contexts import TLSContexts
from route_monitor.spec.monitor import ProbeSettings
from tests.support import servers
from tests.support.fuzzing import examples
from tests.support.hostile import ENDINGS, Hostile, Script

targets = servers.targets

TIMEOUT_S = 0.4
SLACK_S = 0.5  # scheduling on a shared 2-core machine; a stuck probe would take far longer

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def hostile(targets: servers.Targets) -> Iterator[Hostile]:
    h = Hostile()
    yield h
    h.close()  # before ``targets`` (its TLS upstream) closes, so no handshake is left half-way
    time.sleep(0.2)


@pytest.fixture(scope="module")
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()


TOKEN = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-ABCXYZ0123456789", min_size=1, max_size=20)
ANY_BYTES = st.binary(max_size=200)
LINE_BYTES = st.binary(max_size=100).map(lambda b: b.replace(b"\r", b"").replace(b"\n", b""))

status_line = st.one_of(
    st.builds(lambda v, c, r: b"%s %d %s\r\n" % (v, c, r),
              st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2", b"HTTP/0.9", b"HTTP/1.1 ", b"http/1.1", b""]),
              st.one_of(st.integers(100, 599), st.integers(-5, 100_000)), LINE_BYTES),
    ANY_BYTES.map(lambda b: b + b"\r\n"),
)
header = st.one_of(
    st.tuples(TOKEN.map(str.encode), LINE_BYTES),
    st.tuples(LINE_BYTES, ANY_BYTES),
    st.tuples(st.just(b"X-Big"), st.integers(1, 70_000).map(lambda n: b"v" * n)),
)
headers = st.lists(header, max_size=60).map(
    lambda hs: b"".join(k + b": " + v + b"\r\n" for k, v in hs))
many_headers = st.integers(0, 3000).map(lambda n: b"".join(b"X-H%d: v\r\n" % i for i in range(n)))
body = st.one_of(ANY_BYTES, st.integers(0, 300_000).map(lambda n: b"x" * n))


@st.composite
def chunked(draw: st.DrawFn) -> bytes:
    out = b"Transfer-Encoding: chunked\r\n\r\n"
    for data in draw(st.lists(ANY_BYTES, max_size=5)):
        size = draw(st.one_of(st.just(b"%x" % len(data)), st.just(b"%x" % (len(data) + 3)),
                              st.sampled_from([b"zz", b"-1", b"ffffffffffffffffffff", b"", b"0;ext=1"]),
                              LINE_BYTES))
        out += size + b"\r\n" + data + draw(st.sampled_from([b"\r\n", b"", b"\n"]))
    return out + draw(st.sampled_from([b"0\r\n\r\n", b"", b"0\r\nTrailer: x\r\n\r\n", b"5\r\nab"]))


@st.composite
def framed(draw: st.DrawFn) -> bytes:
    data = draw(body)
    kind = draw(st.sampled_from(["length", "short", "long", "conflict", "none", "chunked", "garbage-length"]))
    if kind == "chunked":
        return draw(chunked())
    length = {"length": b"%d" % len(data), "short": b"%d" % max(0, len(data) - 1),
              "long": b"%d" % (len(data) + 10), "conflict": b"%d\r\nContent-Length: %d" % (len(data), len(data) + 1),
              "garbage-length": b"-1"}.get(kind)
    head = b"" if length is None else b"Content-Length: " + length + b"\r\n"
    return head + b"\r\n" + data


@st.composite
def responses(draw: st.DrawFn) -> Script:
    raw = draw(status_line) + draw(st.one_of(headers, many_headers)) + draw(framed())
    if draw(st.integers(0, 9)) == 0:
        raw = draw(ANY_BYTES)  # not HTTP at all
    cuts = sorted(draw(st.lists(st.integers(0, len(raw)), max_size=4)))
    pieces = tuple(raw[a:b] for a, b in zip([0, *cuts], [*cuts, len(raw)], strict=True))
    ending = draw(st.sampled_from(ENDINGS)) if draw(st.integers(0, 4)) == 0 else "close"
    return Script(pieces, ending, read_request=draw(st.booleans()))


def probe_once(loop: asyncio.AbstractEventLoop, prober: Prober, url: str) -> tuple[ProbeResult, float]:
    req = ProbeRequest.build(("fuzz", "m"), url, ProbeSettings(timeout_ms=int(TIMEOUT_S * 1000), interval_ms=5000,
                                                               body_regex="ok"))
    t0 = time.perf_counter()
    result = loop.run_until_complete(prober.probe(req))  # an exception here fails the property
    return result, time.perf_counter() - t0


def check(result: ProbeResult, elapsed: float) -> None:
    assert elapsed < TIMEOUT_S + SLACK_S, result
    if result.success:
        assert result.reason is None and result.status_code is not None and 200 <= result.status_code < 400
    else:
        assert isinstance(result.reason, FailureReason), result
        assert result.detail and len(result.detail) <= 2000


@settings(max_examples=examples(150))
@given(script=responses())
def test_any_http_response_gives_a_result_with_a_closed_reason(hostile: Hostile, loop: asyncio.AbstractEventLoop,
                                                               script: Script) -> None:
    result, elapsed = probe_once(loop, Prober(), hostile.serve(script))
    check(result, elapsed)


@settings(max_examples=examples(40))
@given(n=st.integers(0, 4000), ending=st.sampled_from(ENDINGS))
def test_a_tls_handshake_cut_anywhere_fails_with_a_reason(hostile: Hostile, loop: asyncio.AbstractEventLoop,
                                                          targets: servers.Targets, n: int, ending: str) -> None:
    upstream = int(targets.https().rsplit(":", 1)[1])
    prober = Prober(tls=TLSContexts(verify=targets.client_context()))
    result, elapsed = probe_once(loop, prober, hostile.tls_cut(upstream, n, ending))
    check(result, elapsed)
    if n < 500:  # inside the server's first flight (hello + certificate): the handshake cannot complete
        assert result.reason in {FailureReason.TLS_ERROR, FailureReason.CONNECTION_TIMEOUT, FailureReason.TIMEOUT,
                                 FailureReason.OTHER}, result
