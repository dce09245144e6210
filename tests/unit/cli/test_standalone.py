"""``route-monitor standalone`` end to end, as a subprocess against real loopback targets.

Covers: RouteMonitors with URL targets, annotated Routes and Services in, ``/metrics`` and one
rule file per monitor out (valid for ``promtool check rules``); a forbidden target reported on
stderr naming the file, object and field while the others run; an edit to the files picked up
(monitor added, changed, removed: series and rule file follow); SIGTERM and SIGINT exit 0;
nothing valid to monitor exits non-zero with a clear line; ``--service-url`` gives an annotated
Service a reachable URL outside the cluster.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from alert_rules import names
from route_monitor.cli.commands.standalone import PATH_RULES_FILE
from tests.support import servers, standalone
from tests.support.net import free_port, wait_for
from tests.support.servers import Targets, status

targets = servers.targets
pytestmark = pytest.mark.timeout(60)


def routemonitor(name: str, url: str, interval: str = "1s", extra: str = "") -> str:
    return standalone.routemonitor(name, url, probe=f"interval: {interval}, timeout: 500ms",
                                   slo=f'availability: "99.5"{extra}')


def route_and_service(host: str) -> str:
    return textwrap.dedent(f"""\
        apiVersion: route.openshift.io/v1
        kind: Route
        metadata:
          name: storefront
          namespace: shop
          annotations: {{routemonitor.io/slo: "99.9", routemonitor.io/interval: 1s, routemonitor.io/path: /}}
        spec: {{host: "{host}", to: {{kind: Service, name: storefront}}}}
        ---
        apiVersion: v1
        kind: Service
        metadata:
          name: payments
          namespace: shop
          annotations: {{routemonitor.io/slo: "99", routemonitor.io/interval: 1s}}
        spec: {{ports: [{{name: http, port: 8080}}]}}
        """)


class Proc:
    def __init__(self, folder: Path, *extra: str) -> None:
        self.port = free_port()
        self.rules = folder.parent / "rules"
        self.stderr_path = folder.parent / "stderr.txt"
        self.p = subprocess.Popen([sys.executable, "-m", "route_monitor.cli.main", "standalone", str(folder),
                                   "--metrics-address", f"127.0.0.1:{self.port}", "--rules-dir", str(self.rules),
                                   *extra], stdout=subprocess.PIPE, stderr=self.stderr_path.open("w"))

    @property
    def stderr(self) -> str:
        return self.stderr_path.read_text()

    def samples(self) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            text = r.read().decode()
        return {(s.name, tuple(sorted(s.labels.items()))): s.value
                for f in text_string_to_metric_families(text) for s in f.samples}

    def value(self, metric: str, /, **labels: str) -> float | None:
        try:
            return self.samples().get((metric, tuple(sorted(labels.items()))))
        except OSError:
            return None

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.p.poll() is None:
            self.p.send_signal(sig)
        return self.p.wait(timeout=10)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    d = tmp_path / "manifests"
    d.mkdir()
    return d


@pytest.fixture
def proc_factory(folder: Path) -> Iterator[list[Proc]]:
    procs: list[Proc] = []
    yield procs
    for p in procs:
        if p.p.poll() is None:
            p.p.kill()
            p.p.wait(timeout=10)


def rule_files(proc: Proc) -> list[str]:
    """The monitors' rule files (the shared-path rules file is there too, whatever the monitors)."""
    return sorted(p.name for p in proc.rules.glob("*.rules.yml") if p.name != PATH_RULES_FILE)


def ok_probes(proc: Proc, monitor: str) -> float:
    return proc.value("route_monitor_probes_total", namespace="shop", monitor=monitor, result="success") or 0


def test_manifests_in_metrics_and_rules_out_edits_followed_sigterm_exits_0(
        targets: Targets, folder: Path, proc_factory: list[Proc]) -> None:
    base = targets.http()
    (folder / "checkout.yaml").write_text(routemonitor("checkout", base + "/health",
                                                       extra=', latency: {threshold: 250ms, objective: "99"}'))
    (folder / "annotated.yaml").write_text(route_and_service(base.removeprefix("http://")))
    (folder / "forbidden.yaml").write_text(routemonitor("sneaky", "http://169.254.169.254/latest/meta-data/"))
    proc = Proc(folder)
    proc_factory.append(proc)

    wait_for(lambda: ok_probes(proc, "checkout") >= 1 and ok_probes(proc, "storefront") >= 1, timeout=20,
             what="successful probes of checkout and storefront")
    # payments fails from its creation (no such DNS name): warm-up, so its failures do not count (Contract 9)
    wait_for(lambda: (proc.value("route_monitor_probes_excluded_total", namespace="shop", monitor="payments",
                                 reason="warmup") or 0) >= 1, timeout=20, what="payments (Service DNS) failing")
    assert proc.value("route_monitor_probe_success", namespace="shop", monitor="payments") == 0
    assert proc.value("route_monitor_probes_total", namespace="shop", monitor="payments", result="failure") == 0
    # excluded failures are not counted: its dns_error series (there from the start for a host
    # name, at 0, for the shared-path rules) stays at 0
    assert proc.value("route_monitor_probe_failures_total", namespace="shop", monitor="payments",
                      reason="dns_error") == 0
    assert proc.value("route_monitor_probe_duration_seconds_bucket", namespace="shop", monitor="checkout",
                      le="0.25") >= 1
    assert proc.value("route_monitor_target_info", namespace="shop", monitor="payments", kind="service",
                      name="payments", url="http://payments.shop.svc.cluster.local:8080/") == 1
    assert proc.value("route_monitor_probes_total", namespace="shop", monitor="sneaky", result="success") is None
    err = proc.stderr
    assert "forbidden.yaml" in err and "RouteMonitor/shop/sneaky" in err and "spec.target" in err
    assert "Forbidden" in err
    assert f"http://127.0.0.1:{proc.port}/metrics" in err

    wait_for(lambda: rule_files(proc) == ["shop_checkout.rules.yml", "shop_payments.rules.yml",
                                          "shop_storefront.rules.yml"], timeout=10, what="one rule file per monitor")
    assert (proc.rules / PATH_RULES_FILE).read_text().startswith(names.GENERATED_HEADER)
    if shutil.which("promtool"):
        check = subprocess.run(["promtool", "check", "rules", *map(str, proc.rules.glob("*.rules.yml"))],
                               capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr

    # edit: checkout now points at a failing target, a new monitor appears, the Route/Service file goes away
    (folder / "checkout.yaml").write_text(routemonitor("checkout", targets.http(status(503))) + "---\n" +
                                          routemonitor("cart", base + "/cart"))
    (folder / "annotated.yaml").unlink()
    wait_for(lambda: ok_probes(proc, "cart") >= 1, timeout=20, what="the added monitor probing")
    # a new URL warms up again: its failures are excluded until the first success or 10 minutes
    wait_for(lambda: (proc.value("route_monitor_probes_excluded_total", namespace="shop", monitor="checkout",
                                 reason="warmup") or 0) >= 1, timeout=20, what="the changed target failing")
    assert proc.value("route_monitor_probe_success", namespace="shop", monitor="checkout") == 0
    wait_for(lambda: proc.value("route_monitor_target_info", namespace="shop", monitor="storefront", kind="route",
                                name="storefront", url=base + "/") is None, timeout=10, what="removed series")
    wait_for(lambda: rule_files(proc) == ["shop_cart.rules.yml", "shop_checkout.rules.yml"], timeout=10,
             what="rule files following the edit")
    assert "reloaded" in proc.stderr

    assert proc.stop(signal.SIGTERM) == 0


def test_sigint_exits_0(targets: Targets, folder: Path, proc_factory: list[Proc]) -> None:
    (folder / "m.yaml").write_text(routemonitor("one", targets.http()))
    proc = Proc(folder)
    proc_factory.append(proc)
    wait_for(lambda: ok_probes(proc, "one") >= 1, timeout=20, what="a probe")
    assert proc.stop(signal.SIGINT) == 0


def test_invalid_spec_on_reload_keeps_the_last_good_one(targets: Targets, folder: Path,
                                                        proc_factory: list[Proc]) -> None:
    (folder / "m.yaml").write_text(routemonitor("steady", targets.http()))
    proc = Proc(folder)
    proc_factory.append(proc)
    wait_for(lambda: ok_probes(proc, "steady") >= 1, timeout=20, what="a probe")
    (folder / "m.yaml").write_text(routemonitor("steady", targets.http(), interval="fast"))
    wait_for(lambda: "keeping its last good spec" in proc.stderr, timeout=10, what="the reload error")
    assert "m.yaml" in proc.stderr and "spec.probe.interval" in proc.stderr
    before = ok_probes(proc, "steady")
    wait_for(lambda: ok_probes(proc, "steady") > before, timeout=10, what="probing to continue")
    assert proc.stop() == 0


@pytest.mark.parametrize("content", [
    pytest.param("kind: RouteMonitor\napiVersion: routemonitor.io/v1alpha1\nmetadata: {name: x}\nspec: {}\n",
                 id="invalid-spec"),
    pytest.param("not: [valid", id="not-yaml"),
    pytest.param(routemonitor("meta", "http://169.254.169.254/"), id="only-a-forbidden-target"),
])
def test_nothing_valid_exits_non_zero_with_a_clear_line(folder: Path, content: str) -> None:
    (folder / "bad.yaml").write_text(content)
    done = subprocess.run([sys.executable, "-m", "route_monitor.cli.main", "standalone", str(folder),
                           "--metrics-address", f"127.0.0.1:{free_port()}"], capture_output=True, text=True,
                          timeout=30)
    assert done.returncode != 0
    assert "bad.yaml" in done.stderr and "nothing valid to monitor" in done.stderr


def test_service_url_overrides_the_cluster_dns_name(targets: Targets, folder: Path,
                                                    proc_factory: list[Proc]) -> None:
    (folder / "svc.yaml").write_text(route_and_service("127.0.0.1:9").split("---\n")[1])
    base = targets.http()
    proc = Proc(folder, "--service-url", f"shop/payments={base}")
    proc_factory.append(proc)
    wait_for(lambda: ok_probes(proc, "payments") >= 1, timeout=20, what="the Service probed at the given URL")
    assert proc.value("route_monitor_target_info", namespace="shop", monitor="payments", kind="service",
                      name="payments", url=base + "/") == 1
    assert proc.stop() == 0


def test_bad_service_url_is_a_clear_error(folder: Path) -> None:
    (folder / "m.yaml").write_text(routemonitor("one", "http://127.0.0.1:9/"))
    done = subprocess.run([sys.executable, "-m", "route_monitor.cli.main", "standalone", str(folder),
                           "--service-url", "payments=localhost"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "--service-url 'payments=localhost'" in done.stderr


def test_an_objective_whose_page_can_never_fire_is_reported_not_silently_accepted(
        targets: Targets, folder: Path, proc_factory: list[Proc]) -> None:
    # 90%: the 1h/5m page would need more than 144% of probes to fail (Contract 4: reported)
    (folder / "m.yaml").write_text(routemonitor("lenient", targets.http()).replace('"99.5"', '"90"'))
    proc = Proc(folder)
    proc_factory.append(proc)
    wait_for(lambda: ok_probes(proc, "lenient") >= 1, timeout=20, what="probing despite the finding")
    wait_for(lambda: "spec.slo.availability" in proc.stderr, timeout=10, what="the finding on stderr")
    line = next(ln for ln in proc.stderr.splitlines() if "spec.slo.availability" in ln)
    assert "m.yaml" in line and "RouteMonitor/shop/lenient" in line and "never fire" in line
    assert proc.stop() == 0
