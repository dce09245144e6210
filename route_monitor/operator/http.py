"""The operator's HTTP endpoint: ``/metrics`` (probe and health metrics) and ``/readyz``.

``/readyz`` answers 200 once kopf is running and has started its watches, 503 before; kopf's
own liveness endpoint (``/healthz``, on the health port) is separate.
"""

from __future__ import annotations

from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


async def serve(registry: CollectorRegistry, *, host: str, port: int, ready: Callable[[], bool]) -> web.AppRunner:
    async def metrics(_: web.Request) -> web.Response:
        body = generate_latest(registry)  # on the loop: collectors read the engine's state
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
