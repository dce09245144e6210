"""The engine's prober run once against a test server, for the protocol tests: a probe spec as a
user writes it (``settings``), parsed by the same code as a RouteMonitor's ``spec.probe``, and a
:class:`Prober` trusting a test CA (``ca_file``) or the system's roots.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trustme

from alert_rules.fielderrors import Collect
from route_monitor.probe.prober import Prober
from route_monitor.probe.result import ProbeResult
from route_monitor.probe.tls.contexts import TLSContexts
from route_monitor.probe.tls.sslcache import SSLContextCache
from route_monitor.spec.probe import ProbeSettings, probe_settings
from route_monitor.targets.credentials import Credentials
from tests.support.dnsserver import NXDOMAIN, SERVFAIL, SILENT

DNS_ANSWERS = {"shop.example": "10.96.4.2", "gone.example": NXDOMAIN, "broken.example": SERVFAIL,
               "hang.example": SILENT}
"""The DNS probe tests' name server: an address, a name that is gone, a failing server, silence."""


def settings(probe: dict[str, Any]) -> ProbeSettings:
    """``probe`` (a ``spec.probe`` mapping) with a 1 s timeout and 5 s interval unless it says otherwise."""
    c = Collect()
    s = probe_settings({"timeout": "1s", "interval": "5s", **probe}, "spec.probe", c)
    c.done()
    return s


def ca_file(folder: Path) -> tuple[trustme.CA, Path]:
    """A fresh CA and its certificate written to ``folder/ca.pem``."""
    ca = trustme.CA()
    path = folder / "ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return ca, path


def prober(cafile: Path | None = None) -> Prober:
    tls = TLSContexts.trusting(str(cafile)) if cafile else TLSContexts()
    return Prober(tls=tls, contexts=SSLContextCache(cafile=str(cafile) if cafile else None))


async def probe(url: str, s: ProbeSettings, cafile: Path | None = None,
                credentials: Credentials | None = None) -> ProbeResult:
    """One probe of ``url`` by monitor ns/m."""
    p = prober(cafile)
    return await p.probe(p.request(("ns", "m"), url, s, credentials))
