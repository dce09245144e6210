"""The operator's HTTP endpoint: ``/metrics`` (probe and health metrics) and ``/readyz``.

``/readyz`` answers 200 once kopf is running and has started its watches, 503 before; kopf's
own liveness endpoint (``/healthz``, on the health port) is separate.

The page is rendered in a worker thread by ``render`` (the probe metrics' fast renderer, which
is thread-safe): at 5,000 monitors client_python's ``generate_latest`` takes over a second of CPU,
which on the event loop would delay every probe and watch event by that much at each scrape.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


async def serve(registry: CollectorRegistry, *, host: str, port: int, ready: Callable[[], bool],
                render: Callable[[], bytes] | None = None) -> web.AppRunner:
    render_page = render or (lambda: generate_latest(registry))

    async def metrics(_: web.Request) -> web.Response:
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
