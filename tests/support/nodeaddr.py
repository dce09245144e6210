"""A non-loopback address of this machine, for objects the API server validates like a node's.

The API server refuses loopback addresses in v1 Endpoints ("may not be in the loopback range"),
as it would a pod IP of 127.0.0.1; EndpointSlices of ``discovery.k8s.io/v1beta1`` take them. To
list a process of the test machine in Endpoints, the test gives it an address of the benchmarking
range 198.18.0.0/15: the near end of a veth pair whose far end sits in a network namespace of the
test's own. Processes bound to 0.0.0.0 (the operator's ``/metrics``) answer on it, and traffic to
it never leaves the machine. The link and the namespace are deleted by name at the end.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True, timeout=30)


@contextmanager
def node_address() -> Iterator[tuple[str, str]]:
    """(address, peer): an address like a node's (198.18.X.Y/30 on the veth end in this namespace),
    unique to this process, and its peer's (the far end: nothing listens there)."""
    n = os.getpid() % 16000
    netns, near, far = f"rmnode{n}", f"rmn{n}a", f"rmn{n}b"
    base = 4 * n  # a /30 of its own in 198.18.0.0/16
    address, peer = f"198.18.{base // 256}.{base % 256 + 1}", f"198.18.{base // 256}.{base % 256 + 2}"
    _ip("netns", "add", netns)
    try:
        _ip("link", "add", near, "type", "veth", "peer", "name", far, "netns", netns)
        _ip("addr", "add", f"{address}/30", "dev", near)
        _ip("link", "set", near, "up")
        _ip("-n", netns, "addr", "add", f"{peer}/30", "dev", far)
        _ip("-n", netns, "link", "set", far, "up")
        yield address, peer
    finally:
        subprocess.run(["ip", "link", "del", near], capture_output=True, timeout=30)
        subprocess.run(["ip", "netns", "del", netns], capture_output=True, timeout=30)
