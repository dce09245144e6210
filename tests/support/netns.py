"""A network namespace the test controls, for a prober whose network fails (``ip netns`` + veth).

:class:`NetNS` is a namespace joined to the host by veth pairs (:class:`Link`), each a /30 of the
198.18.0.0/15 test range (198.19.x.y here), host end ``.1``, namespace end ``.2``. A process
started in it (``ip netns exec``) reaches only what listens on a host end's address (or on
0.0.0.0); :meth:`Link.cut` takes the namespace end down, so its connects fail at once ("network
unreachable") as on a node that lost its network, and :meth:`Link.restore` brings it back. The
namespace and its links are deleted by name when the test ends. Needs root (tests run as root here).

:class:`HostAddresses` are host addresses on an interface of their own that several namespaces route to
through their own links (one target URL probed from every namespace; :meth:`NetNS.unroute` cuts
one namespace's path to it alone).

:class:`Relay` forwards TCP from a host end's address to a loopback port (the test apiserver
listens on 127.0.0.1 only); an HTTP target on a host end's address is
:class:`tests.support.operator.Target` given that ``address``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import subprocess
import sys
import threading
from dataclasses import dataclass

_namespaces = itertools.count(1)


def ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, timeout=20)


@dataclass(frozen=True)
class Link:
    netns: str
    host_end: str
    ns_end: str
    host_address: str
    ns_address: str

    def cut(self) -> None:
        ip("netns", "exec", self.netns, "ip", "link", "set", "dev", self.ns_end, "down")

    def restore(self) -> None:
        ip("netns", "exec", self.netns, "ip", "link", "set", "dev", self.ns_end, "up")


class NetNS:
    def __init__(self) -> None:
        n = next(_namespaces)
        self.tag = f"{os.getpid() % 100000}{n}"
        self.name = f"rm-blind-{self.tag}"
        self._octet = (os.getpid() + 7 * n) % 250
        self.links: list[Link] = []
        ip("netns", "add", self.name)
        self.run_in("ip", "link", "set", "dev", "lo", "up")

    def link(self) -> Link:
        i = len(self.links)
        host_end, ns_end = f"rbh{self.tag}{i}"[:15], f"rbn{self.tag}{i}"[:15]
        host_address, ns_address = f"198.19.{self._octet}.{4 * i + 1}", f"198.19.{self._octet}.{4 * i + 2}"
        ip("link", "add", host_end, "type", "veth", "peer", "name", ns_end)
        self.links.append(Link(self.name, host_end, ns_end, host_address, ns_address))
        ip("link", "set", ns_end, "netns", self.name)
        ip("addr", "add", f"{host_address}/30", "dev", host_end)
        ip("link", "set", "dev", host_end, "up")
        self.run_in("ip", "addr", "add", f"{ns_address}/30", "dev", ns_end)
        self.run_in("ip", "link", "set", "dev", ns_end, "up")
        return self.links[-1]

    def route(self, address: str, link: Link) -> None:
        """Reach the host's ``address`` (:class:`HostAddresses`) through ``link``."""
        self.run_in("ip", "route", "replace", f"{address}/32", "via", link.host_address)

    def unroute(self, address: str) -> None:
        """No route to ``address`` any more: connects fail at once (host unreachable), the rest works."""
        self.run_in("ip", "route", "replace", "unreachable", f"{address}/32")

    def run_in(self, *args: str) -> None:
        ip("netns", "exec", self.name, *args)

    def command(self, *args: str) -> list[str]:
        """``args`` run inside the namespace (``ip netns exec`` execs it: the pid is the process's)."""
        return ["ip", "netns", "exec", self.name, *args]

    def fetch(self, url: str, timeout: float = 5) -> str:
        """GET ``url`` from inside the namespace (e.g. a process's /metrics on its loopback)."""
        code = ("import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], "
                f"timeout={timeout}).read().decode())")
        done = subprocess.run(self.command(sys.executable, "-c", code, url), capture_output=True, text=True,
                              timeout=timeout + 10)
        if done.returncode != 0:
            raise OSError(f"GET {url} in {self.name} failed: {done.stderr.strip()[-300:]}")
        return done.stdout

    def close(self) -> None:
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=20)
        for link in self.links:  # gone with the namespace, normally; by name in case it is not
            subprocess.run(["ip", "link", "del", link.host_end], capture_output=True, timeout=20)


class HostAddresses:
    """Addresses of the host (``198.18.x.1``, ``.2``...) on an interface of their own (a veth pair
    with both ends on the host: this kernel has no dummy interfaces), so that
    one server address is reachable from several namespaces: each routes it through one of its
    links (:meth:`NetNS.route`), and the host delivers it locally. Deleted by name at :meth:`close`."""

    def __init__(self, count: int) -> None:
        self.device = f"rmd{os.getpid() % 100000}{next(_namespaces)}"[:15]
        octet = os.getpid() % 250 + 1
        self.addresses = [f"198.18.{octet}.{i + 1}" for i in range(count)]
        ip("link", "add", self.device, "type", "veth", "peer", "name", f"{self.device}p"[:15])
        for address in self.addresses:
            ip("addr", "add", f"{address}/32", "dev", self.device)
        ip("link", "set", "dev", self.device, "up")
        ip("link", "set", "dev", f"{self.device}p"[:15], "up")

    def close(self) -> None:
        subprocess.run(["ip", "link", "del", self.device], capture_output=True, timeout=20)


class Relay:
    """TCP from ``(address, port)`` (a free port) to ``127.0.0.1:upstream``, in a thread of its own."""

    def __init__(self, address: str, upstream: int) -> None:
        self.address, self._upstream = address, upstream
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="relay", daemon=True)
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, address, 0), self._loop).result(10)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self._upstream)
        except OSError:
            writer.close()
            return
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer), return_exceptions=True)

    def close(self) -> None:
        async def stop() -> None:
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    finally:
        with contextlib.suppress(Exception):
            writer.close()
