"""RSS of ``route-monitor standalone`` with and without TLS monitors, and per TLS monitor.

    .venv/bin/python -m benchmarks.tls_memory [--monitors 1000] [--interval 30] [--baseline CHECKOUT]

Against the local targets (:mod:`benchmarks.targets`: one plain and one HTTPS port, RSA-2048
behind an intermediate, the CA through ``SSL_CERT_FILE`` as ``run.py --only site`` sets it up),
``standalone`` is started four times: one HTTP monitor (a process that never builds a TLS
context), one HTTPS monitor, ``--monitors`` and twice as many HTTPS monitors. Each time the RSS
is read once every monitor has been probed twice (the probe counters, not a sleep: the second
round is spread over the interval, past the start-up burst of handshakes), and the slope
between the last two is the memory per TLS monitor. ``--baseline`` repeats all of it with
another checkout's code (``git worktree add --detach /tmp/base main``), in the same run.
Prints one JSON line per side.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from alert_rules import names
from benchmarks import measure, ours

MIB = 1024 * 1024


def _rss_when_probed(workdir: Path, urls: list[str], interval: float, ca: str, root: Path | None) -> float:
    workdir.mkdir(parents=True, exist_ok=True)
    proc, port = ours._start_standalone(workdir, urls, interval, ca, 500, root)
    try:
        deadline = time.monotonic() + interval * 4 + 60
        while True:
            page = measure.scrape(f"http://127.0.0.1:{port}/metrics?name[]={names.PROBES_TOTAL}")
            if measure.total(page, names.PROBES_TOTAL) >= 2 * len(urls):
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"not every monitor was probed within {deadline:.0f} s (see {workdir})")
            time.sleep(0.5)
        page = measure.scrape(f"http://127.0.0.1:{port}/metrics?name[]={names.PROBES_TOTAL}")
        ok = measure.total(page, names.PROBES_TOTAL, result=names.RESULT_SUCCESS)
        if ok < 2 * len(urls):
            raise RuntimeError(f"{len(urls) - ok:.0f} probes failed (see {workdir})")
        return measure.sample(proc.pid).rss_bytes / MIB
    finally:
        measure.stop(proc)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--monitors", type=int, default=1000)
    p.add_argument("--interval", type=float, default=30.0, help="probe interval, seconds (default 30)")
    p.add_argument("--baseline", type=Path, metavar="CHECKOUT")
    args = p.parse_args(argv)
    workdir = Path(f"/tmp/route-monitor-tlsmem-{time.time_ns()}")
    server, ready = measure.start([sys.executable, "-m", "benchmarks.targets", "--ports", "1", "--tls-ports", "1",
                                   "--tls-dir", str(workdir), "--workers", "2"], ready_line=True)
    assert ready is not None
    try:
        ca = str(ready["ca"])
        http = f"http://127.0.0.1:{ready['http'][0]}"  # type: ignore[index]
        https = f"https://127.0.0.1:{ready['https-rsa'][0]}"  # type: ignore[index]
        n = args.monitors
        for side, root in (("ours", None), *((("baseline", args.baseline),) if args.baseline else ())):
            rss = {label: _rss_when_probed(workdir / f"{side}-{label}", urls, args.interval, ca, root)
                   for label, urls in (("one-http", [f"{http}/h/0"]), ("one-https", [f"{https}/s/0"]),
                                       (f"https-{n}", [f"{https}/s/{i}" for i in range(n)]),
                                       (f"https-{2 * n}", [f"{https}/s/{i}" for i in range(2 * n)]))}
            slope_kib = (rss[f"https-{2 * n}"] - rss[f"https-{n}"]) * 1024 / n
            print(json.dumps({"side": side, "rss_mib": {k: round(v, 1) for k, v in rss.items()},
                              "first_tls_monitor_mib": round(rss["one-https"] - rss["one-http"], 1),
                              "kib_per_tls_monitor": round(slope_kib, 2), "loadavg": os.getloadavg()}),
                  flush=True)
    finally:
        measure.stop(server)
    return 0


if __name__ == "__main__":
    sys.exit(main())
