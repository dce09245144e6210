"""``route-monitor check`` on manifests meant for the operator, whose targets live in the cluster.

A RouteMonitor whose Route or Service is not in the given files, or an HTTPRoute whose Gateway
is not, is a warning (one line naming the file, the object and the field) and the monitor is
still explained: ``check`` exits 0 unless there is a real error. ``standalone``, which must
resolve every target from its files, keeps refusing such a monitor (an error line) and probes
the others. Every command runs as a user runs it (a subprocess on files in a temporary folder).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import standalone

GOOD = ("apiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {name: good, namespace: shop}\n"
        "spec:\n  target: {url: 'https://good.example'}\n  slo: {availability: '99.9'}\n")


def monitor(target: str, name: str = "web") -> str:
    return (f"apiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {{name: {name}, namespace: shop}}\n"
            f"spec:\n  target: {target}\n  slo: {{availability: '99.9'}}\n")


HTTPROUTE = ("apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata: {name: pay, namespace: shop, "
             "annotations: {routemonitor.io/slo: '99.9'}}\nspec:\n  parentRefs: [{name: edge}]\n"
             "  hostnames: [pay.example.com]\n")

ELSEWHERE = [
    pytest.param(monitor("{route: {name: web}}"), "RouteMonitor/shop/web: spec.target: RouteNotFound",
                 "target: route web", id="route"),
    pytest.param(monitor("{service: {name: web, port: http}}"), "RouteMonitor/shop/web: spec.target: ServiceNotFound",
                 "target: service web", id="service"),
    pytest.param(monitor("{ingress: {name: web}}"), "RouteMonitor/shop/web: spec.target: IngressNotFound",
                 "target: ingress web", id="ingress"),
    pytest.param(HTTPROUTE, "HTTPRoute/shop/pay: spec.target: GatewayNotFound", "target: httproute pay",
                 id="httproute-gateway"),
]


def check(*paths: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "route_monitor.cli.main", "check", *map(str, paths)],
                          capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(("text", "warning", "explained"), ELSEWHERE)
def test_a_target_in_the_cluster_is_a_warning_and_the_monitor_is_explained(tmp_path: Path, text: str, warning: str,
                                                                           explained: str) -> None:
    path = tmp_path / "operator.yaml"
    path.write_text(text)
    run = check(path)
    assert run.returncode == 0, run.stderr
    [line] = [line for line in run.stderr.splitlines() if ": warning: " in line]
    assert re.match(rf"{re.escape(str(path))}:\d+: warning: {warning}: ", line), run.stderr
    assert "not in the given files" in line and "standalone" in line, line
    assert run.stderr.splitlines()[-1] == "1 monitor(s), 0 error(s), 1 warning(s)"
    assert explained in run.stdout and "RouteMonitorErrorBudgetBurn" in run.stdout


def test_a_route_whose_host_the_cluster_assigns_is_a_warning(tmp_path: Path) -> None:
    """No spec.host and no status: the router assigns the host on admission, as it does for
    most Routes (``oc expose``); standalone cannot probe it, the operator will."""
    route = ("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: web, namespace: shop, "
             "annotations: {routemonitor.io/slo: '99.9'}}\nspec: {to: {kind: Service, name: web}, tls: {}}\n")
    path = tmp_path / "route.yaml"
    path.write_text(route)
    run = check(path)
    assert run.returncode == 0, run.stderr
    [line] = [line for line in run.stderr.splitlines() if ": warning: " in line]
    assert line.startswith(f"{path}:4: warning: Route/shop/web: spec.target: NoHost: ") and "standalone" in line, line
    assert run.stderr.splitlines()[-1] == "1 monitor(s), 0 error(s), 1 warning(s)"
    assert "target: route web" in run.stdout
    refused = route.replace("tls: {}}", "tls: {}}\nstatus: {ingress: [{host: web.apps.example, conditions: "
                            "[{type: Admitted, status: 'False'}]}]}")
    path.write_text(refused)
    run = check(path)
    assert run.returncode == 1 and "error: Route/shop/web: spec.target: NoHost: " in run.stderr, run.stderr


def test_a_real_error_beside_a_target_in_the_cluster_still_fails(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text(monitor("{route: {name: web}}") + "---\n" +
                                     monitor("{url: 'http://169.254.169.254/'}", name="meta"))
    run = check(tmp_path)
    assert run.returncode == 1
    assert sorted(line.split(": ")[1:4] for line in run.stderr.splitlines()[:-1]) == [
        ["error", "RouteMonitor/shop/meta", "spec.target"], ["warning", "RouteMonitor/shop/web", "spec.target"]]
    assert run.stderr.splitlines()[-1] == "1 monitor(s), 1 error(s), 1 warning(s)"


def test_a_target_in_the_files_resolves_without_a_warning(tmp_path: Path) -> None:
    route = ("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata: {name: web, namespace: shop}\n"
             "spec: {host: web.example.com, to: {kind: Service, name: web}}\n")
    (tmp_path / "a.yaml").write_text(monitor("{route: {name: web}}") + "---\n" + route)
    run = check(tmp_path)
    assert run.returncode == 0 and run.stderr.strip() == "1 monitor(s), 0 error(s), 0 warning(s)", run.stderr


@pytest.mark.parametrize(("text", "warning", "explained"), ELSEWHERE)
def test_standalone_refuses_a_target_not_in_its_files_and_probes_the_others(tmp_path: Path, text: str, warning: str,
                                                                            explained: str) -> None:
    path = tmp_path / "both.yaml"
    path.write_text(GOOD + "---\n" + text)
    with standalone.started(tmp_path) as lines:
        errors = [line for line in lines if re.match(rf"{re.escape(str(path))}:\d+: error: ", line)]
        assert len(errors) == 1 and warning in errors[0], "".join(lines)
        assert "not in the given files" in errors[0] or "is not known" in errors[0]
        assert any("monitoring shop/good" in line for line in lines) and len(
            [line for line in lines if ": monitoring " in line]) <= 1, "".join(lines)
