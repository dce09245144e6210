"""The restart burst: thousands of monitors start at once beside monitors already running. Does
it make the running ones late?

    python -m benchmarks.burst [--steady 100] [--burst 5000] [--burst-interval 30] [--baseline CHECKOUT]

One engine process per side (``ProbeEngine`` + ``ProbeMetrics``, as ``standalone`` and the
operator hold them) probes ``--steady`` monitors at 1-5 s intervals against the local targets
(:mod:`benchmarks.targets`, a separate process). After ``--before`` seconds it sets
``--burst`` more monitors and settles the heap the way ``standalone`` does on start-up or a
reload (``ProbeEngine.set_monitors``, batches that yield to the loop; code before it set them in
one loop turn; the operator's ``start_owned`` and takeovers start theirs in batches of 100), then watches
``--window`` seconds. Reported per phase (before / during the burst): the steady monitors'
schedule lag (p50, p99, max; measured as the engine does, when the probe starts inside the
concurrency bound), the event loop's lag (a 10 ms sleeper: p99, max), the wall time of setting
the monitors and how long settling the heap held the loop, CPU, and when the new monitors were
first probed (the promise: within ``first_probe_within``, 5 s). With ``--baseline CHECKOUT`` the
same child runs on that checkout's ``route_monitor`` too, one after the other, against the same
targets.
Writes ``results/burst-latest.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks.measure import percentile

HERE = Path(__file__).resolve().parent


def _summary(values: list[float]) -> dict[str, Any]:
    return {"n": len(values), "p50_ms": _ms(percentile(values, 0.5)), "p99_ms": _ms(percentile(values, 0.99)),
            "max_ms": _ms(max(values) if values else None)}


def _ms(v: float | None) -> float | None:
    return None if v is None else round(1000 * v, 2)


async def child(args: argparse.Namespace) -> dict[str, Any]:
    """One engine (the route_monitor on sys.path) through the burst; returns the numbers."""
    from prometheus_client import CollectorRegistry

    from route_monitor.probe.engine import ProbeEngine, settle_heap
    from route_monitor.probe.metrics import ProbeMetrics
    from route_monitor.spec.monitor import MonitorSpec, ProbeSettings, UrlTarget
    from route_monitor.targets.resolve import ResolvedTarget

    urls = json.loads(args.urls)
    loop = asyncio.get_running_loop()

    def monitor(name: str, url: str, interval_s: float) -> tuple[MonitorSpec, ResolvedTarget]:
        ms = int(interval_s * 1000)
        settings = ProbeSettings(interval_ms=ms, timeout_ms=min(10_000, ms * 4 // 5))
        return (MonitorSpec(namespace="bench", name=name, target=UrlTarget(url), probe=settings),
                ResolvedTarget(url=url, kind="url", name=""))

    steady = [monitor(f"steady-{i:03d}", urls[i % len(urls)], 1 + i % 5) for i in range(args.steady)]
    burst = [monitor(f"burst-{i:05d}", urls[i % len(urls)], args.burst_interval) for i in range(args.burst)]
    steady_keys = {s.key for s, _ in steady}
    engine = ProbeEngine(metrics=ProbeMetrics(CollectorRegistry()))
    ticks: dict[tuple[str, str], float] = {}
    lags: list[tuple[float, float]] = []  # (start, lag) of the steady monitors' probes
    first: dict[tuple[str, str], float] = {}
    run_once, probe = engine._run_once, engine.prober.probe

    async def timed_run_once(worker: Any, tick: float) -> None:
        ticks[worker.spec.key] = tick
        await run_once(worker, tick)

    async def timed_probe(req: Any) -> Any:
        now = loop.time()
        if req.key in steady_keys:
            lags.append((now, max(0.0, now - ticks[req.key])))
        else:
            first.setdefault(req.key, now)
        return await probe(req)

    engine._run_once = timed_run_once  # type: ignore[method-assign]
    engine.prober.probe = timed_probe  # type: ignore[method-assign]
    loop_lags: list[tuple[float, float]] = []

    async def watch() -> None:
        while True:
            t = loop.time()
            await asyncio.sleep(0.01)
            woke = loop.time()
            loop_lags.append((woke, max(0.0, woke - t - 0.01)))  # by when it woke: a stall counts where it ends

    watcher = asyncio.create_task(watch())
    async with engine:
        for spec, target in steady:
            engine.set_monitor(spec, target)
        settle_heap()
        await asyncio.sleep(args.before)
        t0, cpu0 = loop.time(), time.process_time()
        if hasattr(engine, "set_monitors"):  # batches that yield to the loop (what standalone uses)
            await engine.set_monitors(burst)
        else:  # code before it: standalone and the operator called set_monitor in one loop turn
            for spec, target in burst:
                engine.set_monitor(spec, target)
        t_set = loop.time()
        try:
            settle_heap(full=False)  # only added: what is frozen is not walked again
        except TypeError:  # code before settle_heap(full=...)
            settle_heap()
        t_settled = loop.time()
        await asyncio.sleep(max(0.0, t0 + args.window - loop.time()))
        cpu = time.process_time() - cpu0
    watcher.cancel()
    firsts = sorted(t - t0 for t in first.values())
    phase = {"before": (t0 - args.before + 3, t0), "during": (t0, t0 + args.window)}
    return {
        "set_monitors_s": round(t_set - t0, 3), "settle_heap_s": round(t_settled - t_set, 3),
        "cpu_s_during": round(cpu, 2),
        **{f"steady_lag_{name}": _summary([lag for t, lag in lags if a <= t < b]) for name, (a, b) in phase.items()},
        **{f"loop_lag_{name}": _summary([lag for t, lag in loop_lags if a <= t < b]) for name, (a, b) in phase.items()},
        "burst_first_probe_s": {"probed": len(firsts), "of": args.burst, "p50": percentile(firsts, 0.5),
                                "p99": percentile(firsts, 0.99), "max": firsts[-1] if firsts else None},
    }


def run_side(root: Path | None, urls: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """The child on ``root``'s route_monitor (None: this checkout's), as a script so that
    ``PYTHONPATH`` decides which ``route_monitor`` it imports."""
    env = dict(os.environ, PYTHONPATH=str(root or HERE.parent))
    argv = [sys.executable, str(HERE / "burst.py"), "--child", "--urls", json.dumps(urls),
            *(f"--{k.replace('_', '-')}={getattr(args, k)}" for k in ("steady", "burst", "burst_interval",
                                                                     "before", "window"))]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, check=False, cwd=root or HERE.parent,
                         preexec_fn=(lambda: os.setpriority(os.PRIO_PROCESS, 0, args.nice)) if args.nice else None)
    if out.returncode != 0:
        raise RuntimeError(f"burst child failed: {out.stderr[-2000:]}")
    commit = subprocess.run(["git", "-C", str(root or HERE.parent), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    return {"code": commit, "loadavg_before": os.getloadavg()[0], **json.loads(out.stdout.splitlines()[-1])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steady", type=int, default=100, help="monitors running before the burst (1-5 s intervals)")
    p.add_argument("--burst", type=int, default=5000, help="monitors set at once")
    p.add_argument("--burst-interval", type=float, default=30.0, help="their interval, s (default 30)")
    p.add_argument("--before", type=float, default=12.0, help="seconds of steady state before the burst")
    p.add_argument("--window", type=float, default=20.0, help="seconds watched from the burst on")
    p.add_argument("--baseline", type=Path, metavar="CHECKOUT", help="also run on this checkout's route_monitor")
    p.add_argument("--nice", type=int, default=0)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--urls", help=argparse.SUPPRESS)
    p.add_argument("--out", type=Path, default=HERE / "results" / "burst-latest.json")
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(asyncio.run(child(args))), flush=True)
        return 0
    sys.path.insert(0, str(HERE.parent))
    from benchmarks import measure, report, targets

    if args.nice:
        os.setpriority(os.PRIO_PROCESS, 0, args.nice)
        os.environ["BENCH_NICE"] = str(args.nice)
    server, ready = measure.start([sys.executable, "-m", "benchmarks.targets", "--ports", "16"], ready_line=True)
    assert ready is not None
    urls = targets.target_urls(ready, 1000)
    started = time.time()
    try:
        sides = []
        for root in ([None, args.baseline] if args.baseline else [None]):
            print(f"[{time.strftime('%H:%M:%S')}] {root or 'this checkout'}, load {os.getloadavg()[0]:.2f}",
                  file=sys.stderr, flush=True)
            sides.append(run_side(root, urls, args))
            print(json.dumps(sides[-1]), file=sys.stderr, flush=True)
    finally:
        measure.stop(server)
    result = {"machine": report.machine(), "started_utc": time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(started)),
              "command": "python -m benchmarks.burst " + " ".join(argv or sys.argv[1:]), "sides": sides}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
