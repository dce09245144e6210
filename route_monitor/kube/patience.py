"""Start-up requests that wait for the API server instead of ending the process.

At start the operator lists what it watches (:meth:`Supervisor.prime`) and takes its Lease
(:meth:`Membership.join`) before anything else runs. An API server that is restarting, overloaded
or not reachable yet, or RBAC applied a moment after the Deployment, is normal during installs and
cluster upgrades: such a request is tried again with a growing delay (1, 2, 5, then every 10 s),
one warning line per failed try naming what was asked and why, until it answers. The operator is
not ready meanwhile (``/readyz`` answers 503), so a rollout waits for it, and probes nothing
yet. Errors that are not the API's (a bug of ours, a kubeconfig naming a missing file) are not
retried.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from route_monitor.kube.apierrors import status_code, unreachable

log = logging.getLogger("route_monitor.operator")
T = TypeVar("T")
DELAYS = (1.0, 2.0, 5.0, 10.0)
"""Seconds before each next try; the last repeats."""


def from_the_api(error: BaseException) -> bool:
    """A failed request: an HTTP status, or no answer (:func:`apierrors.unreachable`: refused, reset,
    timed out, TLS failed). A bad kubeconfig or a bug of ours is not tried again."""
    return status_code(error) is not None or unreachable(error)


def _why(error: BaseException) -> str:
    code = status_code(error)
    if code in (401, 403):
        return (f"HTTP {code}: the operator's service account may not do this yet (is its ClusterRole "
                "bound? see deploy/)")
    if code is not None:
        return f"HTTP {code}"
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0][:200]}" if text else type(error).__name__


async def until_answered(what: str, call: Callable[[], Awaitable[T]], *,
                         delays: tuple[float, ...] = DELAYS,
                         sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> T:
    """``await call()`` until it returns; API failures are logged and tried again after ``delays``."""
    attempt = 0
    while True:
        try:
            return await call()
        except Exception as e:
            if not from_the_api(e):
                raise
            delay = delays[min(attempt, len(delays) - 1)]
            attempt += 1
            log.warning("%s failed (%s); trying again in %.0f s (try %d)", what, _why(e), delay, attempt)
            await sleep(delay)
