"""Extra CA certificates for probes (``$ROUTE_MONITOR_CA_FILES``, issue 12).

Covers, against a real HTTPS target whose certificate a private CA (trustme) signed, probed by
``route-monitor standalone`` as a subprocess:

- with the CA supplied the way ``deploy/overlays/openshift`` supplies it (its own
  ``ROUTE_MONITOR_CA_FILES`` value, the files laid out as its ConfigMap mounts lay them out: a
  cluster bundle with comments and other CAs, the service CA, an optional file that is absent),
  the target verifies: probes succeed, the absent file is reported and skipped;
- without it, every probe fails as ``certificate_invalid``;
- a file that holds no certificate stops the command with one line naming the variable and file;
- the certificates are added to the system store, not put in its place;
- a monitor with its own client certificate (a context of its own) trusts them too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path

import pytest
import trustme
import yaml
from prometheus_client.parser import text_string_to_metric_families

from route_monitor.probe.prober import Prober
from route_monitor.probe.result import FailureReason
from route_monitor.probe.tls.trust import ENV_CA_FILES, TrustError, ca_files, contexts_from_env, verify_context
from route_monitor.spec.monitor import ProbeSettings
from route_monitor.spec.request import parse_request
from route_monitor.targets.credentials import build as build_credentials
from tests.support import servers
from tests.support.authtargets import AuthTarget, PrivateCA
from tests.support.cluster import ROOT
from tests.support.net import free_port, wait_for
from tests.support.servers import Targets

targets = servers.targets
pytestmark = pytest.mark.timeout(60)
OVERLAY_PATCH = ROOT / "deploy" / "overlays" / "openshift" / "deployment-trust.yaml"


def overlay_ca_files() -> list[str]:
    """The value the OpenShift overlay gives ``$ROUTE_MONITOR_CA_FILES``, split."""
    patch = yaml.safe_load(OVERLAY_PATCH.read_text())
    [container] = patch["spec"]["template"]["spec"]["containers"]
    [value] = [e["value"] for e in container["env"] if e["name"] == ENV_CA_FILES]
    return list(ca_files({ENV_CA_FILES: value}))


def mounted_layout(root: Path, service_ca: trustme.CA) -> str:
    """Files where the overlay's ConfigMaps are mounted (under ``root``): the cluster bundle as
    the Cluster Network Operator writes it (comment lines, many CAs; here two unrelated ones),
    the service CA that signed the target, and no extra CA (the optional ConfigMap absent)."""
    cluster, service, extra = (root / p.lstrip("/") for p in overlay_ca_files())
    assert (cluster.name, service.name, extra.name) == ("ca-bundle.crt", "service-ca.crt", "ca-bundle.crt")
    cluster.parent.mkdir(parents=True)
    cluster.write_text("".join(f"# Unrelated Root CA {i}\n{trustme.CA().cert_pem.bytes().decode()}\n" for i in (1, 2)))
    service.parent.mkdir(parents=True)
    service_ca.cert_pem.write_to_path(str(service))
    return os.pathsep.join(str(p) for p in (cluster, service, extra))


class Standalone:
    """``route-monitor standalone`` on one RouteMonitor, with a given environment."""

    def __init__(self, folder: Path, url: str, env: dict[str, str]) -> None:
        folder.mkdir()
        (folder / "m.yaml").write_text(textwrap.dedent(f"""\
            apiVersion: routemonitor.io/v1alpha1
            kind: RouteMonitor
            metadata: {{name: internal, namespace: shop}}
            spec:
              target: {{url: "{url}"}}
              # failures count from the first probe; a timeout well above a loaded machine's
              # slowest local TLS handshake (500 ms was not: a probe timed out, a failure counted)
              probe: {{interval: 2s, timeout: 1900ms, warmup: 0s}}
              slo: {{availability: "99.5"}}
            """))
        self.port = free_port()
        self.stderr_path = folder / "stderr.txt"
        clean = {k: v for k, v in os.environ.items() if k not in (ENV_CA_FILES, "SSL_CERT_FILE", "SSL_CERT_DIR")}
        with self.stderr_path.open("w") as err:
            self.p = subprocess.Popen([sys.executable, "-m", "route_monitor.cli.main", "standalone", str(folder),
                                       "--metrics-address", f"127.0.0.1:{self.port}"],
                                      stdout=subprocess.DEVNULL, stderr=err, env={**clean, **env})

    def value(self, metric: str, **labels: str) -> float:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
                text = r.read().decode()
        except OSError:
            return 0
        want = {"namespace": "shop", "monitor": "internal", **labels}
        return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
                   if s.name == metric and s.labels == want)

    def stop(self) -> str:
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=10)
        return self.stderr_path.read_text()


def test_private_ca_supplied_as_the_openshift_overlay_does_verifies(targets: Targets, tmp_path: Path) -> None:
    url = targets.https()
    proc = Standalone(tmp_path / "m", url, {ENV_CA_FILES: mounted_layout(tmp_path / "mnt", targets.ca)})
    try:
        wait_for(lambda: proc.value("route_monitor_probes_total", result="success") >= 2, timeout=40,
                 what="successful probes of the private-CA target")
        assert proc.value("route_monitor_probes_total", result="failure") == 0
    finally:
        stderr = proc.stop()
    assert "trusting 2 certificate(s) from" in stderr and "trusting 1 certificate(s) from" in stderr, stderr
    assert "extra/ca-bundle.crt is absent or empty" in stderr, stderr


def test_without_the_ca_the_target_fails_as_certificate_invalid(targets: Targets, tmp_path: Path) -> None:
    url = targets.https()
    proc = Standalone(tmp_path / "m", url, {})
    try:
        wait_for(lambda: proc.value("route_monitor_probe_failures_total", reason="certificate_invalid") >= 2,
                 timeout=40, what="certificate_invalid failures")
        assert proc.value("route_monitor_probes_total", result="success") == 0
    finally:
        proc.stop()


def test_a_file_without_certificates_stops_with_one_line_naming_it(targets: Targets, tmp_path: Path) -> None:
    bad = tmp_path / "not-a-ca.crt"
    bad.write_text("apiVersion: v1\nkind: ConfigMap\n")
    proc = Standalone(tmp_path / "m", targets.https(), {ENV_CA_FILES: str(bad)})
    assert proc.p.wait(timeout=40) == 2
    stderr = proc.stop()
    assert f"error: {ENV_CA_FILES}: {bad}: no PEM certificate in it" in stderr, stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize("content", [
    pytest.param("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n", id="corrupt-pem"),
])
def test_a_corrupt_bundle_is_an_error_naming_the_file(tmp_path: Path, content: str) -> None:
    bad = tmp_path / "ca.crt"
    bad.write_text(content)
    with pytest.raises(TrustError, match=rf"^{ENV_CA_FILES}: {bad}: not a valid PEM certificate bundle"):
        verify_context((str(bad),))


def test_extra_cas_are_added_to_the_system_store_not_put_in_its_place(tmp_path: Path) -> None:
    """An SSL_CERT_FILE pointing at a file replaces the store; ROUTE_MONITOR_CA_FILES adds to it:
    the default verify paths stay, and both a system-path CA and the extra CA are trusted."""
    system, extra = trustme.CA(), trustme.CA()
    system_file, extra_file = tmp_path / "system.pem", tmp_path / "extra.pem"
    system.cert_pem.write_to_path(str(system_file))
    extra.cert_pem.write_to_path(str(extra_file))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""\
        from route_monitor.probe.tls.trust import verify_context
        ctx, extra = verify_context(({str(extra_file)!r},))
        print(ctx.trusted_count(), extra.loaded[0][1])
        """)], env={**{k: v for k, v in os.environ.items() if k != "SSL_CERT_DIR"},  # a named directory is loaded too
              "SSL_CERT_FILE": str(system_file)}, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["2", "1"]
    ctx, _ = verify_context((str(extra_file),))
    system_only, _ = verify_context(())
    assert ctx.trusted_count() == system_only.trusted_count() + 1  # the image's store, and the extra CA
    assert ctx.verify


@pytest.mark.parametrize("env_ca", [pytest.param(True, id="env-ca-trusted"), pytest.param(False, id="without")])
async def test_a_monitor_with_its_own_client_certificate_trusts_the_extra_cas_too(tmp_path: Path, env_ca: bool) -> None:
    """Monitors with a client certificate (or their own caRef) get a context of their own: it
    trusts ``$ROUTE_MONITOR_CA_FILES`` as well, so mutual TLS to a service-CA-signed Service works."""
    service_ca, client_ca = PrivateCA(), PrivateCA()
    ca_file = tmp_path / "service-ca.crt"
    ca_file.write_bytes(service_ca.pem)
    target = AuthTarget(tls=service_ca.server_context(client_ca=client_ca))
    try:
        options = parse_request({"tls": {"clientCertRef": {"secret": {"name": "probe-client"}}}})
        cert, key = client_ca.client_pair()
        values = {"probe-client/tls.crt": cert, "probe-client/tls.key": key}
        credentials = build_credentials(options, lambda ref: values[f"{ref.ref.name}/{ref.key}"])
        settings = ProbeSettings(timeout_ms=3000, interval_ms=5000, request=options)
        tls, _ = contexts_from_env({ENV_CA_FILES: str(ca_file)} if env_ca else {})
        prober = Prober(tls=tls)
        result = await prober.probe(prober.request(("ns", "m"), target.url(), settings, credentials))
    finally:
        target.close()
    if env_ca:
        assert result.success, result.detail
    else:
        assert result.reason is FailureReason.CERTIFICATE_INVALID, result.detail
