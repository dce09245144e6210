"""The OLM bundle (``bundle/``) and the one-file release manifest (``deploy/release/``), both
generated from ``deploy/base`` by ``scripts/bundle.py``.

Covers: regenerating changes nothing (so neither drifts from deploy/), and a change to the base
shows in the CSV; the CSV carries the base's Deployment, its ServiceAccount's rules and the CRD;
the bundle keeps OLM's bundle rules (``tests/support/olm_bundle.py``), and each rule catches the
broken bundle it is about; the CSV is accepted by the upstream ClusterServiceVersion CRD on the
test control plane, and its alm-examples are RouteMonitors the CRD and ``route-monitor check``
accept.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
import yaml

from tests.support import olm_bundle, upstream_crds
from tests.support.cluster import ADMIN_TOKEN, Cluster, install_crd
from tests.support.operator import VENV_BIN
from tests.support.upstream_crds import ROOT

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
BUNDLE = ROOT / "bundle"
CSV_FILE = BUNDLE / "manifests" / "route-monitor.clusterserviceversion.yaml"


def script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bundle_script", ROOT / "scripts" / "bundle.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def csv() -> dict[str, Any]:
    return dict(yaml.safe_load(CSV_FILE.read_text()))


def base() -> list[dict[str, Any]]:
    out = subprocess.run(["kubectl", "kustomize", str(ROOT / "deploy" / "base")], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def named(objects: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    [obj] = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    return obj


# --- generated, never drifting ------------------------------------------------------------------
def test_bundle_and_release_manifest_are_what_deploy_gives() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "bundle.py"), "--check"], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_a_change_to_the_base_shows_in_the_csv() -> None:
    rendered = subprocess.run(["kubectl", "kustomize", str(ROOT / "deploy" / "base")], capture_output=True,
                              text=True, timeout=60).stdout
    changed = rendered.replace("replicas: 2", "replicas: 3", 1).replace("- --health-port=8081",
                                                                        "- --health-port=8081\n        - --log-format=json")
    files = script().bundle_files(changed)
    [deployment] = yaml.safe_load(files["manifests/route-monitor.clusterserviceversion.yaml"])["spec"]["install"][
        "spec"]["deployments"]
    assert deployment["spec"]["replicas"] == 3 and "--log-format=json" in deployment["spec"]["template"]["spec"][
        "containers"][0]["args"]
    assert files["manifests/route-monitor.clusterserviceversion.yaml"] != CSV_FILE.read_text()


def test_release_manifest_holds_every_object_of_the_base() -> None:
    release = [d for d in yaml.safe_load_all((ROOT / "deploy" / "release" / "route-monitor.yaml").read_text()) if d]
    assert release == base()


def test_csv_carries_the_deployment_rbac_and_crd_of_the_base() -> None:
    objects, got = base(), csv()
    strategy = got["spec"]["install"]["spec"]
    [deployment] = strategy["deployments"]
    assert deployment["spec"] == named(objects, "Deployment", "route-monitor")["spec"]
    [cluster_perm] = strategy["clusterPermissions"]
    assert cluster_perm == {"serviceAccountName": "route-monitor",
                            "rules": named(objects, "ClusterRole", "route-monitor")["rules"]}
    [perm] = strategy["permissions"]
    assert perm["rules"] == named(objects, "Role", "route-monitor-leases")["rules"]
    crd = named(objects, "CustomResourceDefinition", "routemonitors.routemonitor.io")
    assert yaml.safe_load((BUNDLE / "manifests" / "routemonitor.io_routemonitors.yaml").read_text()) == crd
    [owned] = got["spec"]["customresourcedefinitions"]["owned"]
    assert (owned["name"], owned["version"], owned["kind"]) == (crd["metadata"]["name"],
                                                               crd["spec"]["versions"][0]["name"], "RouteMonitor")
    image = deployment["spec"]["template"]["spec"]["containers"][0]["image"]
    assert got["spec"]["relatedImages"] == [{"name": "route-monitor", "image": image}]
    assert got["spec"]["version"] == image.rsplit(":", 1)[1] and got["metadata"]["name"] == f"route-monitor.v{image.rsplit(':', 1)[1]}"


# --- OLM's bundle rules -------------------------------------------------------------------------
def test_bundle_keeps_olms_bundle_rules() -> None:
    assert olm_bundle.problems(BUNDLE) == []


def _edit_csv(change: Callable[[dict[str, Any]], None]) -> Callable[[Path], None]:
    def edit(folder: Path) -> None:
        path = folder / "manifests" / CSV_FILE.name
        doc = yaml.safe_load(path.read_text())
        change(doc)
        path.write_text(yaml.safe_dump(doc))
    return edit


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        for key in parents:
            doc = doc[key]
        doc[last] = value
    return change


BROKEN: dict[str, tuple[Callable[[Path], object], str]] = {
    "owned CRD missing": (lambda f: (f / "manifests" / "routemonitor.io_routemonitors.yaml").unlink(),
                          "owned CRD routemonitor.io/v1alpha1 RouteMonitor not found in the bundle"),
    "CRD not owned": (_edit_csv(_set("spec.customresourcedefinitions", {"owned": []})),
                      "is in the bundle but not defined in the CSV"),
    "name not DNS-1123": (_edit_csv(_set("metadata.name", "Route_Monitor.v0.1.0")), "is not a DNS-1123 subdomain"),
    "version not semver": (_edit_csv(_set("spec.version", "0.1")), "is not a semantic version"),
    "name not package.vVERSION": (_edit_csv(_set("spec.version", "0.2.0")), "should be route-monitor.v0.2.0"),
    "no install mode supported": (_edit_csv(_set("spec.installModes", [{"type": "AllNamespaces", "supported": False}])),
                                  "none of the install modes is supported"),
    "duplicate install modes": (_edit_csv(_set("spec.installModes", [{"type": "AllNamespaces", "supported": True}] * 2)),
                                "duplicate install modes"),
    "example of another kind": (_edit_csv(_set("metadata.annotations.alm-examples",
                                               json.dumps([{"apiVersion": "routemonitor.io/v1", "kind": "Monitor"}]))),
                                "is not a provided API"),
    "examples not JSON": (_edit_csv(_set("metadata.annotations.alm-examples", "[{")), "alm-examples is not JSON"),
    "unknown capability": (_edit_csv(_set("metadata.annotations.capabilities", "Basic")), "is not a capability level"),
    "no deployment": (_edit_csv(_set("spec.install.spec.deployments", [])), "deployments is empty"),
    "wrong mediatype": (lambda f: (f / "metadata" / "annotations.yaml").write_text(
        (f / "metadata" / "annotations.yaml").read_text().replace("registry+v1", "plain+v0")),
        "mediatype.v1 must be 'registry+v1'"),
    "ServiceAccount beside the CSV's": (lambda f: (f / "manifests" / "sa.yaml").write_text(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: route-monitor}\n"), "OLM creates it"),
    "a folder in manifests": (lambda f: (f / "manifests" / "extra").mkdir(), "manifests/ holds a folder"),
    "a kind OLM cannot install": (lambda f: (f / "manifests" / "job.yaml").write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: x}\n"), "OLM cannot install this kind"),
    "a PDB that blocks drains": (lambda f: (f / "manifests" / "route-monitor_policy_v1_poddisruptionbudget.yaml")
                                 .write_text("apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: x}\n"
                                             "spec: {maxUnavailable: 0}\n"), "maxUnavailable cannot be 0"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_each_olm_rule_catches_its_broken_bundle(case: str, tmp_path: Path) -> None:
    folder = tmp_path / "bundle"
    shutil.copytree(BUNDLE, folder)
    breaking, expected = BROKEN[case]
    breaking(folder)
    found = olm_bundle.problems(folder)
    assert any(expected in line for line in found), found


# --- on a real API server -----------------------------------------------------------------------
def _admin(cluster: Cluster, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
    return httpx.request(method, f"{cluster.server}{path}", json=body, verify=False, timeout=30,
                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})


EMPTY = "core-group-stand-in"
"""The test apiserver (Debian's kube-apiserver 1.20) reads an empty string in any string field of a
custom resource as null and refuses it ("must be of type string: \"null\""), which real
apiservers do not; the CSV's rules need ``apiGroups: [""]`` (the core group)."""


def empty_strings(node: Any, path: str = "") -> set[str]:
    """Paths (list indexes dropped, as the apiserver reports them) of every empty string."""
    if isinstance(node, dict):
        return {p for k, v in node.items() for p in empty_strings(v, f"{path}.{k}" if path else k)}
    if isinstance(node, list):
        return {p for v in node for p in empty_strings(v, path)}
    return {path} if node == "" else set()


def without_empty_strings(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: without_empty_strings(v) for k, v in node.items()}
    if isinstance(node, list):
        return [without_empty_strings(v) for v in node]
    return EMPTY if node == "" else node


@pytest.mark.cluster
def test_csv_and_its_examples_are_accepted_by_the_api_server(cluster: Cluster, tmp_path: Path) -> None:
    """The upstream ClusterServiceVersion CRD (adapted for 1.20 only where 1.20 refuses it) is
    installed and the CSV created for real; nothing in it is pruned as unknown. As written, it is
    refused for its empty strings only (see ``EMPTY``); with them stood in for, it is created."""
    if "operators.coreos.com/v1alpha1" not in cluster.served:
        install_crd(cluster, upstream_crds.CLUSTERSERVICEVERSION)
    ns = "olm-bundle"
    r = _admin(cluster, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    assert r.status_code in (201, 409), r.text
    url = f"/apis/operators.coreos.com/v1alpha1/namespaces/{ns}/clusterserviceversions"
    want = csv()
    r = _admin(cluster, "POST", url, want)
    if r.status_code != 201:
        assert r.status_code == 422, r.text
        causes = r.json()["details"]["causes"]
        assert {c["field"] for c in causes} == empty_strings(want), causes
        assert all('must be of type string: "null"' in c["message"] for c in causes), causes
        want = without_empty_strings(want)
        r = _admin(cluster, "POST", url, want)
    assert r.status_code == 201, r.text
    got = r.json()
    assert got["spec"] == want["spec"]
    assert got["metadata"]["annotations"] == want["metadata"]["annotations"]

    examples = json.loads(want["metadata"]["annotations"]["alm-examples"])
    for example in examples:
        example = {**example, "metadata": {**example["metadata"], "namespace": ns}}
        r = _admin(cluster, "POST", f"/apis/routemonitor.io/v1alpha1/namespaces/{ns}/routemonitors", example)
        assert r.status_code == 201, r.text
    (tmp_path / "examples.yaml").write_text(yaml.safe_dump_all(examples))
    done = subprocess.run([str(VENV_BIN / "route-monitor"), "check", str(tmp_path / "examples.yaml")],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 error(s)" in done.stdout + done.stderr
