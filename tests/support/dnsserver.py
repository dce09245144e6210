"""A real DNS server (UDP, dnslib for the wire format) whose answers a test changes while it
runs, and a way to make one process use it: ``private_resolver`` runs a command in a private
mount namespace (``unshare --mount``) where ``/etc/resolv.conf`` is bind-mounted over with one
naming this server, so the process resolves through glibc's own resolver exactly as in
production, and nothing else on the machine is touched.

A name answers with its address (A; no AAAA records), ``NXDOMAIN`` (the name is gone),
``SERVFAIL`` (the server failed) or nothing at all (``SILENT``: the query is dropped, as by a
name server that stopped answering, so ``getaddrinfo`` waits until resolv.conf's ``timeout:`` x
``attempts:``).

resolv.conf names a server without a port, so by default it listens on port 53 of a random
address in 127.0.0.0/8 (Linux answers on the whole block): several runs on one machine do not
collide; that needs root (port 53, ``unshare``, ``mount``). With ``port=0`` it listens on a free
port of 127.0.0.1 instead, for the DNS probe, which is told the server's port (no root).
"""

from __future__ import annotations

import errno
import os
import random
import shutil
import socket
import threading
from pathlib import Path

from dnslib import QTYPE, RCODE, RR, A, DNSRecord

NXDOMAIN = "nxdomain"
SERVFAIL = "servfail"
SILENT = "silent"


def usable() -> str | None:
    """Why this machine cannot run it, or None."""
    if os.geteuid() != 0:
        return "needs root: a DNS server on port 53 and a private mount namespace for /etc/resolv.conf"
    if not shutil.which("unshare") or not shutil.which("mount"):
        return "needs unshare(1) and mount(8) (util-linux)"
    return None


class DNSServer:
    def __init__(self, answers: dict[str, str], *, port: int = 53) -> None:
        """``port``: 53 on a random loopback address (for resolv.conf), else on 127.0.0.1 (0: a free one)."""
        self.answers = dict(answers)
        """name -> IPv4 address, NXDOMAIN, SERVFAIL or SILENT (changed by the test while it runs)."""
        self.queries = 0
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        if port == 53:
            self.address = self._bind_port_53()
        else:
            self.address = "127.0.0.1"
            self._sock.bind((self.address, port))
        self.port = int(self._sock.getsockname()[1])
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="dns-server", daemon=True)
        self._thread.start()

    def _bind_port_53(self) -> str:
        rng = random.Random()
        for _ in range(50):
            address = f"127.{rng.randint(100, 250)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}"
            try:
                self._sock.bind((address, 53))
                return address
            except OSError as e:
                if e.errno != errno.EADDRINUSE:
                    raise
        raise RuntimeError("no free port 53 on 127.0.0.0/8")

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                data, peer = self._sock.recvfrom(4096)
            except TimeoutError:
                continue
            except OSError:
                return
            self.queries += 1
            reply = self._reply(data)
            if reply is not None:
                self._sock.sendto(reply, peer)

    def _reply(self, data: bytes) -> bytes | None:
        try:
            query = DNSRecord.parse(data)
        except Exception:
            return None
        name = str(query.q.qname).rstrip(".").lower()
        answer = self.answers.get(name, NXDOMAIN)
        if answer == SILENT:
            return None
        reply = query.reply()
        if answer in (NXDOMAIN, SERVFAIL):
            reply.header.rcode = RCODE.NXDOMAIN if answer == NXDOMAIN else RCODE.SERVFAIL
        elif query.q.qtype == QTYPE.A:
            reply.add_answer(RR(query.q.qname, QTYPE.A, rdata=A(answer), ttl=0))
        return bytes(reply.pack())

    def resolv_conf(self, path: Path, *, timeout: int, attempts: int) -> Path:
        path.write_text(f"nameserver {self.address}\noptions timeout:{timeout} attempts:{attempts}\n")
        return path

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()


def private_resolver(resolv_conf: Path, command: list[str]) -> list[str]:
    """``command`` run with ``resolv_conf`` as its /etc/resolv.conf (a private mount namespace)."""
    script = 'mount --bind "$0" /etc/resolv.conf && exec "$@"'
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, str(resolv_conf), *command]
