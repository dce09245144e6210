"""Client CPU of the operator's kind watches per listed object and per watch event, in one process,
without an API server: what the list+watch loop itself costs around the world's ``observe``.

    .venv/bin/python -m benchmarks.watch_events [--objects 20000] [--events 100000] [--rounds 5]

A stand-in for the REST client (``route_monitor.kube.rest.Rest``'s ``get`` and ``watch``) hands
``--objects`` Routes as list pages of 500 and then ``--events`` MODIFIED events already decoded,
to ``KindWatch`` (``route_monitor.operator.watches``) with an ``observe`` that does nothing; the
JSON decoding and the world's work are not counted, being the same whichever loop runs. Both
``KindWatch``'s constructor and the two REST calls are the same before and after the reflector
(issue 23), so the same script measures another checkout: ``--baseline DIR`` runs it there too,
alternating rounds, and prints both.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Mapping
from typing import Any


def _route(i: int) -> dict[str, Any]:
    return {"metadata": {"name": f"r{i}", "namespace": "bench", "resourceVersion": str(i)},
            "spec": {"host": f"r{i}.example.com"}}


class StandIn:
    """``get`` (list pages) and ``watch`` (events, then the stream stays open) of the REST client."""

    def __init__(self, objects: int, events: int) -> None:
        self.objects, self.events = objects, events
        self.done = asyncio.Event()

    async def get(self, where: str, query: Mapping[str, str]) -> dict[str, Any]:
        start = int(query.get("continue") or 0)
        end = min(start + 500, self.objects)
        meta = {"resourceVersion": "1", **({"continue": str(end)} if end < self.objects else {})}
        return {"items": [_route(i) for i in range(start, end)], "metadata": meta}

    async def watch(self, where: str, query: Mapping[str, str], read_timeout: float) -> AsyncIterator[dict[str, Any]]:
        for i in range(self.events):
            yield {"type": "MODIFIED", "object": _route(i % max(self.objects, 1))}
        self.done.set()
        await asyncio.Event().wait()


async def _round(objects: int, events: int) -> tuple[float, float]:
    """CPU seconds of the list, then of the events."""
    from route_monitor.operator.watches import KindWatch, api_of

    rest = StandIn(objects, events)
    watch = KindWatch(rest, api_of("route"), ("bench",), observe=lambda kind, event, obj: None,  # type: ignore[arg-type]
                      known=lambda: [])
    t0 = time.process_time()
    assert await watch.prime()
    t1 = time.process_time()
    task = asyncio.create_task(watch.run())
    await rest.done.wait()
    t2 = time.process_time()
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return t1 - t0, t2 - t1


def _here(args: argparse.Namespace) -> dict[str, float]:
    """One round in this process, with the ``route_monitor`` of the checkout it runs in."""
    import route_monitor

    listing, watching = asyncio.run(_round(args.objects, args.events))
    assert route_monitor.__file__ is not None and route_monitor.__file__.startswith(os.getcwd()), route_monitor.__file__
    return {"us_per_listed_object": 1e6 * listing / args.objects, "us_per_event": 1e6 * watching / args.events}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=20_000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline", help="another checkout, measured in alternation")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(_here(args)))
        return
    sides = {"this": os.getcwd(), **({"baseline": args.baseline} if args.baseline else {})}
    results: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
    for _ in range(args.rounds):
        for side, root in sides.items():
            env = {**os.environ, "PYTHONPATH": root}  # that checkout's route_monitor, this interpreter
            out = subprocess.run([sys.executable, __file__, "--one", "--objects",
                                  str(args.objects), "--events", str(args.events)], cwd=root, env=env,
                                 capture_output=True, text=True, check=True).stdout
            results[side].append(json.loads(out))
    for side, runs in results.items():
        listed = sorted(r["us_per_listed_object"] for r in runs)
        events = sorted(r["us_per_event"] for r in runs)
        print(f"{side:8s} median of {len(runs)}: {listed[len(listed) // 2]:.2f} us per listed object, "
              f"{events[len(events) // 2]:.2f} us per event (all: {', '.join(f'{e:.2f}' for e in events)})")


if __name__ == "__main__":
    main()
