"""The operator's HTTP endpoint: ``/metrics`` (probe and health metrics) and ``/readyz``.

``/readyz`` answers 200 once kopf is running and has started its watches, 503 before; kopf's
own liveness endpoint (``/healthz``, on the health port) is separate.

The page is rendered in a worker thread by ``render`` (the probe metrics' fast renderer, which
is thread-safe): at 5,000 monitors client_python's ``generate_latest`` takes over a second of CPU,
which on the event loop would delay every probe and watch event by that much at each scrape.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?")


async def serve(registry: CollectorRegistry, *, host: str, port: int, ready: Callable[[], bool],
                render: Callable[[], bytes] | None = None,
                render_namespace: Callable[[str], bytes] | None = None) -> web.AppRunner:
    """``render_namespace``: the page for ``/metrics?namespace=NS`` (one namespace's probe series)."""
    render_page = render or (lambda: generate_latest(registry))

    async def metrics(request: web.Request) -> web.Response:
        namespace = request.query.get("namespace")
        if namespace is not None and render_namespace is not None:
            if not DNS_LABEL.fullmatch(namespace):
                return web.Response(text=f"namespace: {namespace[:63]!r} is not a namespace name\n", status=400)
            body = await asyncio.to_thread(render_namespace, namespace)
        else:
            body = await asyncio.to_thread(render_page)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def readyz(_: web.Request) -> web.Response:
        ok = ready()
        return web.Response(text="ok\n" if ok else "starting\n", status=200 if ok else 503)

    app = web.Application()
    app.router.add_get("/metrics", metrics)
    app.router.add_get("/readyz", readyz)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, host, port).start()
    return runner
