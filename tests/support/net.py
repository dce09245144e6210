"""Loopback ports and readiness waits for real servers started by tests."""

from __future__ import annotations

import socket
import time
from collections.abc import Callable


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def wait_for(predicate: Callable[[], bool], *, timeout: float = 30, interval: float = 0.1,
             what: str = "condition") -> None:
    """Poll ``predicate`` until it is true; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except Exception as e:
            last = e
        time.sleep(interval)
    raise TimeoutError(f"timed out after {timeout}s waiting for {what}" + (f" (last error: {last!r})" if last else ""))


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex((host, port)) == 0
