"""Open one fresh connection for one probe: resolve, refuse forbidden addresses, TCP, TLS.

The connection phase is the prober's own (not httpcore's connection pool), so that each step
sets the probe's :class:`~route_monitor.probe.reasons.Phase` and fails with an exception that
:func:`~route_monitor.probe.reasons.classify` maps unambiguously, and so that the address check
runs on the resolved addresses, after DNS. The resulting :class:`Stream` carries the HTTP/1.1 exchange
(``http11``): the socket itself for plain HTTP, :mod:`tlsstream` for TLS.
"""

from __future__ import annotations

import asyncio
import errno
import ipaddress
import socket
import time
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from alert_rules.names import PHASES
from route_monitor.probe.net import dns
from route_monitor.probe.net.readiness import until_readable, until_writable
from route_monitor.probe.net.tlsstream import TLSStream, open_tls
from route_monitor.probe.reasons import Phase, ProbeFailure
from route_monitor.probe.result import FailureReason
from route_monitor.targets.safety import forbidden_host, forbidden_ip

if TYPE_CHECKING:
    from route_monitor.probe.tls.ossl import ClientContext


@dataclass(slots=True)
class Progress:
    """Where one probe is (mutable, owned by that probe)."""

    phase: Phase = Phase.DNS
    address: str = ""
    cert_not_after: float | None = None
    last_endpoint: Any = None
    """The endpoint of the current hop (for reading a certificate that failed verification)."""
    deadline: float = 0.0
    """The probe's deadline on the event loop's clock (bounds a ``bodyRegex`` match)."""
    matching: str = ""
    """Set while ``bodyRegex`` (or a TCP ``expect``, a DNS ``answerRegex``) runs: the detail for a
    deadline hit during the match."""
    mismatch: FailureReason = FailureReason.BODY_MISMATCH
    """The reason of a deadline hit while ``matching``."""
    outcome: str = ""
    """A gRPC, TCP or DNS probe's detail of its success."""
    phases: list[float] = field(default_factory=lambda: [0.0] * len(PHASES))
    """Seconds spent in each of ``names.PHASES`` (summed over redirects)."""
    lap_started: float = 0.0

    def lap(self, phase: int) -> None:
        """Add the time since the last lap to ``phases[phase]`` (an index into ``names.PHASES``)."""
        now = time.perf_counter()
        if self.lap_started:
            self.phases[phase] += now - self.lap_started
        self.lap_started = now


class Stream:
    """One plain TCP connection, read and written on the socket itself: no transport, protocol or
    stream objects for a connection that carries one request. A read tries the socket, then
    waits for it to be readable (what ``loop.sock_recv`` does, without its per-read done callback
    and file-object lookups)."""

    __slots__ = ("_fd", "_loop", "_sock")

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._fd = sock.fileno()
        self._loop = asyncio.get_running_loop()

    async def read(self, max_bytes: int) -> bytes:
        recv = self._sock.recv
        try:
            return recv(max_bytes)
        except (BlockingIOError, InterruptedError):
            pass
        loop, fd = self._loop, self._fd
        while True:
            await until_readable(loop, fd)
            try:
                return recv(max_bytes)
            except (BlockingIOError, InterruptedError):
                continue

    async def write(self, buffer: bytes) -> None:
        try:
            sent = self._sock.send(buffer)
        except (BlockingIOError, InterruptedError):
            sent = 0
        if sent < len(buffer):
            await self._loop.sock_sendall(self._sock, buffer[sent:])

    def abort(self) -> None:
        self._sock.close()

    def get_extra_info(self, info: str) -> Any:
        return None


DNS, CONNECT, TLS, PROCESSING, TRANSFER = range(len(PHASES))
"""Indexes of :attr:`Progress.phases`."""

AnyStream = Stream | TLSStream
"""What :func:`open_stream` returns: plain (the socket itself) or TLS (:mod:`tlsstream`)."""


@lru_cache(maxsize=8192)
def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


async def resolve(host: str) -> list[str]:
    """Addresses for ``host`` (IP literals skip DNS); raises ProbeFailure for forbidden ones."""
    if forbidden_host(host):
        raise ProbeFailure(FailureReason.OTHER, f"forbidden address {host}: link-local and cloud metadata "
                           "addresses are never probed")
    if _is_ip(host):
        addresses = [host]
    else:
        addresses = await dns.addresses(host)
    for address in addresses:
        if forbidden_ip(address):
            raise ProbeFailure(FailureReason.OTHER, f"forbidden address {address} for {host}: link-local and "
                               "cloud metadata addresses are never probed")
    return addresses


def new_socket(address: str, *, nodelay: bool = False) -> socket.socket:
    """A non-blocking TCP socket for ``address`` (an IP literal). ``nodelay`` for TLS: the
    handshake's last flight and the request are two writes."""
    sock = socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setblocking(False)
        if nodelay:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except BaseException:
        sock.close()
        raise
    return sock


def connect_error(err: int, address: str, port: int) -> OSError:
    """What a failed connect raises (as ``loop.sock_connect`` words it)."""
    return OSError(err, f"Connect call failed {(address, port)}")


async def _connect(address: str, port: int, *, nodelay: bool) -> socket.socket:
    """A non-blocking TCP socket connected to ``address`` (an IP literal). ``loop.sock_connect``
    would resolve the literal again and look the socket's family up through its enum properties
    on every call; this waits for the socket to become writable and reads its error, no more."""
    sock = new_socket(address, nodelay=nodelay)
    try:
        err = sock.connect_ex((address, port))
        if err in IN_PROGRESS:
            await until_writable(asyncio.get_running_loop(), sock.fileno())
            err = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
        if err:
            raise connect_error(err, address, port)
    except BaseException:
        sock.close()
        raise
    return sock


IN_PROGRESS = frozenset({errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EINTR})
"""What ``connect_ex`` of a non-blocking socket returns while the connection is under way."""


async def addresses_of(host: str, progress: Progress) -> list[str]:
    """A probe's DNS phase (timed): ``host``'s addresses, an allowed IP literal as it is; then
    the probe connects."""
    progress.phase = Phase.DNS
    progress.lap_started = time.perf_counter()
    addresses = [host] if _is_ip(host) and not forbidden_host(host) else await resolve(host)
    progress.lap(DNS)
    progress.phase = Phase.CONNECT
    return addresses


async def open_stream(host: str, port: int, progress: Progress, *, tls: ClientContext | None,
                      server_hostname: str | None = None) -> AnyStream:
    """A connected (and, with ``tls``, handshaken) stream; sets ``progress`` as it goes.

    TCP connect and TLS are two steps (so a failure names its phase); TLS runs on the
    connected socket through :mod:`~route_monitor.probe.net.tlsstream`, not asyncio's SSL transport."""
    addresses = await addresses_of(host, progress)
    last: OSError | None = None
    for address in addresses:
        try:
            sock = await _connect(address, port, nodelay=tls is not None)
        except OSError as e:
            last = e
            continue
        progress.address = address
        break
    else:
        assert last is not None
        raise last
    progress.lap(CONNECT)
    if tls is not None:
        progress.phase = Phase.TLS
        stream: AnyStream = await open_tls(sock, tls, server_hostname or host)
        progress.lap(TLS)
    else:
        stream = Stream(sock)
    progress.phase = Phase.HTTP
    return stream
