"""The prober's name resolution (``probe/net/dns.py``) against a real DNS server through glibc's own
resolver (``tests/support/dnsserver.py``: a private ``/etc/resolv.conf`` under ``unshare
--mount``, so nothing else on the machine is touched).

Covers: a name whose name server stopped answering holds one resolver thread however many
ports it is probed on at once (the lookup is joined per name, not per name and port), and one
per hanging name; every such probe fails as ``dns_error`` at its own deadline, not at the
resolver's; a name that resolves is probed on the port of its URL.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.support import dnsserver, servers
from tests.support.servers import Targets

targets = servers.targets
ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.timeout(60)

SCRIPT = """
import asyncio, json, os, sys, threading, time
from route_monitor.probe.prober import Prober, ProbeRequest
from route_monitor.spec.monitor import ProbeSettings

async def main(urls):
    prober = Prober()
    settings = ProbeSettings(timeout_ms=1000, interval_ms=5000)
    start = time.monotonic()
    results = await asyncio.gather(*(prober.probe(ProbeRequest.build(("ns", str(i)), url, settings))
                                     for i, url in enumerate(urls)))
    elapsed = time.monotonic() - start
    threads = [t.name for t in threading.enumerate() if t.name.startswith("route-monitor-dns")]
    print(json.dumps({"results": [[r.url, r.reason.value if r.reason else None, r.detail] for r in results],
                      "elapsed": elapsed, "resolver_threads": len(threads)}), flush=True)
    os._exit(0)  # the hanging lookups' threads end only when the resolver gives up

asyncio.run(main(sys.argv[1:]))
"""


def run_probes(tmp_path: Path, answers: dict[str, str], urls: list[str]) -> dict[str, object]:
    """Probe ``urls`` at once (timeout 1 s) in a process resolving through a DNS server answering
    ``answers``; what it saw: each result, how long they took, the resolver threads then alive."""
    why = dnsserver.usable()
    if why:
        pytest.skip(why)
    dns = dnsserver.DNSServer(answers)
    try:
        resolv = dns.resolv_conf(tmp_path / "resolv.conf", timeout=5, attempts=1)
        command = dnsserver.private_resolver(resolv, [sys.executable, "-c", SCRIPT, *urls])
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=30)
    finally:
        dns.close()
    assert proc.returncode == 0, proc.stderr
    seen: dict[str, object] = json.loads(proc.stdout)
    return seen


def test_a_hanging_name_holds_one_resolver_thread_whatever_the_ports(tmp_path: Path) -> None:
    urls = [f"http://{name}.dns.test:{port}/" for name in ("hung1", "hung2") for port in (8080, 8443, 9090)]
    seen = run_probes(tmp_path, {"hung1.dns.test": dnsserver.SILENT, "hung2.dns.test": dnsserver.SILENT}, urls)
    results = seen["results"]
    assert isinstance(results, list)
    assert [(url, reason) for url, reason, _ in results] == [(url, "dns_error") for url in urls], results
    assert all("name resolution timed out" in detail for _, _, detail in results), results
    assert isinstance(seen["elapsed"], float) and seen["elapsed"] < 3, seen  # the probe's deadline, not 5 s
    assert seen["resolver_threads"] == 2, seen  # one per name, not one per (name, port)


def test_a_name_that_resolves_is_probed_on_the_port_of_its_url(tmp_path: Path, targets: Targets) -> None:
    good, other = urlsplit(targets.http()).port, urlsplit(targets.refused_url()).port
    urls = [f"http://up.dns.test:{good}/", f"http://up.dns.test:{other}/"]
    seen = run_probes(tmp_path, {"up.dns.test": "127.0.0.1"}, urls)
    assert [reason for _, reason, _ in seen["results"]] == [None, "connection_refused"], seen  # type: ignore[union-attr]
