"""CPU per probe of the engine's whole per-probe path, in one process, for profiling.

    python -m benchmarks.probe_cost [--probes 2000] [--rate 100] [--scheme http] [--site] [--profile FILE]
    valgrind --tool=callgrind --callgrind-out-file=/tmp/cg.%p python -m benchmarks.probe_cost --probes 200 --rate 10

A :class:`~route_monitor.probe.engine.ProbeEngine` with one URL monitor per target (the
scheduler, the concurrency bound, the metrics, the gate and the prober, as ``standalone``
runs them) probes the local targets (:mod:`benchmarks.targets`, a separate process) until
``--probes`` results have come in, then prints one JSON line: CPU seconds of this process
(``time.process_time``) from the first probe result to the last, and per probe.

``--steady``: the first probes spread over one interval, not all within a second (under
callgrind, a burst of slow handshakes would time out). ``--site``: the HTTPS setup of ``run.py --only site`` (every target on one host:port, the CA trusted
through ``SSL_CERT_FILE`` and the system-store context, as a deployment trusts its CA).

Under callgrind (instruction counts do not depend on the machine's load), run it twice with
different ``--probes`` and divide the difference of the totals by the difference of the counts:
start-up and imports cancel out.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import sys
import time
from pathlib import Path

from prometheus_client import CollectorRegistry

from benchmarks import measure, targets
from benchmarks.engine_proc import monitors
from route_monitor.probe.engine import ProbeEngine, settle_heap
from route_monitor.probe.metrics import ProbeMetrics
from route_monitor.probe.result import ProbeResult
from route_monitor.probe.tls.contexts import TLSContexts


async def run(urls: list[str], *, probes: int, rate: float, ca: str | None,
              profile: cProfile.Profile | None, steady: bool = False) -> dict[str, float]:
    done = asyncio.Event()
    seen = {"n": 0, "ok": 0, "cpu0": 0.0, "t0": 0.0}
    warm = 20

    def on_result(r: ProbeResult) -> None:
        seen["n"] += 1
        seen["ok"] += r.success
        if seen["n"] == warm:
            seen["cpu0"], seen["t0"] = time.process_time(), time.monotonic()
            seen["sys0"] = os.times().system
            if profile is not None:
                profile.enable()
        if seen["n"] == warm + probes:
            if profile is not None:
                profile.disable()
            seen["cpu1"], seen["t1"] = time.process_time(), time.monotonic()
            seen["sys1"] = os.times().system
            done.set()

    tls = TLSContexts.trusting(ca) if ca else None
    engine = ProbeEngine(metrics=ProbeMetrics(CollectorRegistry()), on_result=on_result, tls=tls,
                         first_probe_within=len(urls) / rate if steady else 1.0)
    async with engine:
        for spec, target in monitors(urls, len(urls) / rate):
            engine.set_monitor(spec, target)
        settle_heap()
        await done.wait()
    cpu = seen["cpu1"] - seen["cpu0"]
    return {"probes": probes, "ok_ratio": seen["ok"] / seen["n"], "cpu_s": cpu,
            "cpu_ms_per_probe": 1000 * cpu / probes, "sys_ms_per_probe": 1000 * (seen["sys1"] - seen["sys0"]) / probes, "achieved_per_s": probes / (seen["t1"] - seen["t0"])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--probes", type=int, default=2000)
    p.add_argument("--rate", type=float, default=100.0, help="probes per second (default 100)")
    p.add_argument("--targets", type=int, default=1000)
    p.add_argument("--scheme", default="http", choices=["http", "https-ecdsa", "https-rsa"])
    p.add_argument("--site", action="store_true",
                   help="one host:port for every target, the CA through SSL_CERT_FILE (run.py's site scenarios)")
    p.add_argument("--steady", action="store_true",
                   help="first probes spread over one interval (no start-up burst of every target within 1 s)")
    p.add_argument("--loop", default="asyncio", choices=["asyncio", "uvloop"])
    p.add_argument("--profile", type=Path, help="write cProfile stats of the measured probes here")
    args = p.parse_args(argv)
    workdir = Path(f"/tmp/route-monitor-probecost-{time.time_ns()}")
    server, ready = measure.start([sys.executable, "-m", "benchmarks.targets", "--ports", "8", "--tls-ports", "2",
                                   "--tls-dir", str(workdir), "--workers", "2"], ready_line=True)
    assert ready is not None
    profile = cProfile.Profile() if args.profile else None
    urls = targets.target_urls(ready, args.targets, scheme=args.scheme, ports_used=1 if args.site else None)
    ca = str(ready["ca"]) if args.scheme.startswith("https") else None
    if args.site and ca:
        os.environ["SSL_CERT_FILE"], ca = ca, None  # the system-store context (tls.truststore) reads it
    factory = asyncio.new_event_loop
    if args.loop == "uvloop":
        import uvloop
        factory = uvloop.new_event_loop
    try:
        with asyncio.Runner(loop_factory=factory) as runner:
            out = runner.run(run(urls, probes=args.probes, rate=args.rate, ca=ca, profile=profile,
                                 steady=args.steady))
    finally:
        measure.stop(server)
    if profile is not None:
        profile.dump_stats(str(args.profile))
    print(json.dumps({"scheme": args.scheme, "site": args.site, "loop": args.loop, **out}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
