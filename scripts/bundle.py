"""Generate the OLM bundle (``bundle/``) and the one-file release manifest
(``deploy/release/route-monitor.yaml``) from the kustomize base, so neither can drift from it.

    python scripts/bundle.py           # rewrite bundle/ and deploy/release/route-monitor.yaml
    python scripts/bundle.py --check   # exit 1 if the committed files differ from what deploy/ gives

Needs ``kubectl`` (``kubectl kustomize deploy/base``). OperatorHub installs an operator as an
OLM bundle: a ClusterServiceVersion carrying the Deployment and the RBAC the operator's own
ServiceAccount needs (OLM creates that account and binds the rules itself, in the namespace the
user picks), the CRD, and the other objects as plain manifests; ``metadata/annotations.yaml``
names the package and channel. Everything here is taken from the rendered base: only the
catalogue text (description, keywords, the example RouteMonitor) is written in this file.
"""

from __future__ import annotations

import argparse
import base64
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
BASE = ROOT / "deploy" / "base"
BUNDLE = ROOT / "bundle"
RELEASE = ROOT / "deploy" / "release" / "route-monitor.yaml"

PACKAGE = "route-monitor"
CHANNEL = "alpha"
PROJECT_URL = "https://github.com/route-monitor/route-monitor"

ANNOTATIONS = {
    "operators.operatorframework.io.bundle.mediatype.v1": "registry+v1",
    "operators.operatorframework.io.bundle.manifests.v1": "manifests/",
    "operators.operatorframework.io.bundle.metadata.v1": "metadata/",
    "operators.operatorframework.io.bundle.package.v1": PACKAGE,
    "operators.operatorframework.io.bundle.channels.v1": CHANNEL,
    "operators.operatorframework.io.bundle.channel.default.v1": CHANNEL,
}

EXAMPLE = {
    "apiVersion": "routemonitor.io/v1alpha1",
    "kind": "RouteMonitor",
    "metadata": {"name": "checkout"},
    "spec": {
        "target": {"route": {"name": "checkout"}},
        "path": "/healthz",
        "probe": {"interval": "30s", "timeout": "5s"},
        "slo": {"availability": "99.9", "period": "30d"},
        "alerting": {"page": True, "ticket": True},
    },
}
"""The example OperatorHub pre-fills in its "Create RouteMonitor" form (``alm-examples``)."""

DESCRIPTION = """\
Blackbox SLO monitoring for Kubernetes and OpenShift. Annotate a Route, an Ingress, a Gateway API
HTTPRoute or a Service with an availability objective (`routemonitor.io/slo: "99.9"`), or write a
RouteMonitor; route-monitor probes it from inside the cluster, exports SLI metrics, and keeps a
PrometheusRule per target with multiwindow, multi-burn-rate alerts that page when the error
budget burns.

* `kubectl get rmon` shows each monitor's URL, objective, availability and error budget left.
* Maintenance windows, pauses and warm-up keep planned work out of the SLO.
* Never writes to the objects it monitors; reads Secrets only when you grant it.

After installing, annotate a Route:

    oc annotate route checkout routemonitor.io/slo=99.9 routemonitor.io/path=/healthz

Documentation: https://github.com/route-monitor/route-monitor#readme
"""

ICON = ("<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 64 64'><circle cx='32' cy='32' r='30' "
        "fill='#1f6feb'/><path d='M8 36h12l6-14 8 24 6-10h16' fill='none' stroke='#fff' stroke-width='5' "
        "stroke-linejoin='round' stroke-linecap='round'/></svg>")


def render_base() -> str:
    done = subprocess.run(["kubectl", "kustomize", str(BASE)], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        sys.exit(f"scripts/bundle.py: error: kubectl kustomize {BASE.relative_to(ROOT)}: {done.stderr.strip()}")
    return done.stdout


def release_manifest(rendered: str) -> str:
    return ("# route-monitor: everything `kubectl apply -k deploy/` installs, in one file.\n"
            "#   kubectl apply --server-side -f route-monitor.yaml\n"
            "# Generated from deploy/base by scripts/bundle.py; do not edit.\n" + rendered)


def _of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def _bound_rules(objects: list[dict[str, Any]], binding_kind: str, role_kind: str,
                 account: str, namespace: str) -> tuple[list[dict[str, Any]], set[str]]:
    """The rules of every ``role_kind`` a ``binding_kind`` grants the operator's ServiceAccount,
    and the names of the roles and bindings so consumed."""
    roles = {r["metadata"]["name"]: r for r in _of_kind(objects, role_kind)}
    rules: list[dict[str, Any]] = []
    used: set[str] = set()
    for binding in _of_kind(objects, binding_kind):
        if {"kind": "ServiceAccount", "name": account, "namespace": namespace} in binding.get("subjects", []):
            role = roles[binding["roleRef"]["name"]]
            rules += role["rules"]
            used |= {f"{binding_kind}/{binding['metadata']['name']}", f"{role_kind}/{role['metadata']['name']}"}
    return rules, used


def _without_namespace(obj: dict[str, Any], namespace: str) -> dict[str, Any]:
    """OLM creates a bundle's namespaced objects in the namespace the user installs into."""
    out = copy.deepcopy(obj)
    out["metadata"].pop("namespace", None)
    if out["kind"] == "ServiceMonitor" and out["spec"].get("namespaceSelector") == {"matchNames": [namespace]}:
        del out["spec"]["namespaceSelector"]  # a ServiceMonitor's own namespace is the default
    return out


def _owned(crd: dict[str, Any]) -> list[dict[str, Any]]:
    names = crd["spec"]["names"]
    out = []
    for version in crd["spec"]["versions"]:
        out.append({
            "name": crd["metadata"]["name"], "version": version["name"], "kind": names["kind"],
            "displayName": "Route Monitor",
            "description": "One blackbox SLO: what to probe (a Route, HTTPRoute, Ingress, Service or URL), how "
                           "often, the availability and latency objectives, and which alerts page.",
            "resources": [{"kind": "PrometheusRule", "name": "prometheusrules", "version": "v1"}],
            "specDescriptors": [
                {"path": "target", "displayName": "Target", "description": "What to probe."},
                {"path": "slo.availability", "displayName": "Availability objective (%)",
                 "description": "Percent of probes that must succeed over the period."},
            ],
            "statusDescriptors": [
                {"path": "url", "displayName": "URL", "description": "The URL probed."},
                {"path": "conditions", "displayName": "Conditions",
                 "description": "Ready, TargetResolved, Probing, RulesApplied and BudgetExhausted, each with a "
                                "reason and a message.",
                 "x-descriptors": ["urn:alm:descriptor:io.kubernetes.conditions"]},
            ],
        })
    return out


def _file_name(obj: dict[str, Any]) -> str:
    group_version = obj["apiVersion"].replace("/", "_")
    return f"{obj['metadata']['name']}_{group_version}_{obj['kind'].lower()}.yaml"


def bundle_files(rendered: str) -> dict[str, str]:
    objects = [o for o in yaml.safe_load_all(rendered) if o]
    [deployment] = _of_kind(objects, "Deployment")
    [crd] = _of_kind(objects, "CustomResourceDefinition")
    [namespace_obj] = _of_kind(objects, "Namespace")
    namespace = namespace_obj["metadata"]["name"]
    pod = deployment["spec"]["template"]["spec"]
    account = pod["serviceAccountName"]
    [image] = {c["image"] for c in pod["containers"]}
    version = image.rsplit(":", 1)[1]
    cluster_rules, used_cluster = _bound_rules(objects, "ClusterRoleBinding", "ClusterRole", account, namespace)
    rules, used = _bound_rules(objects, "RoleBinding", "Role", account, namespace)
    csv = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "ClusterServiceVersion",
        "metadata": {
            "name": f"{PACKAGE}.v{version}",
            "annotations": {
                "alm-examples": json.dumps([EXAMPLE]),
                "capabilities": "Basic Install",
                "categories": "Monitoring",
                "containerImage": image,
                "description": "Blackbox SLO monitoring: annotate a Route, get probes, SLIs and burn-rate alerts.",
                "operatorframework.io/suggested-namespace": namespace,
                "repository": PROJECT_URL,
                "support": "route-monitor",
            },
            "labels": dict(deployment["metadata"].get("labels", {})),
        },
        "spec": {
            "displayName": "route-monitor",
            "description": DESCRIPTION,
            "version": version,
            "minKubeVersion": "1.21.0",
            "maturity": CHANNEL,
            "provider": {"name": "route-monitor", "url": PROJECT_URL},
            "links": [{"name": "Documentation", "url": f"{PROJECT_URL}#readme"},
                      {"name": "Runbooks", "url": f"{PROJECT_URL}/blob/main/docs/runbooks.md"}],
            "keywords": ["slo", "sli", "error budget", "blackbox", "probe", "route", "prometheus", "alerting"],
            "icon": [{"base64data": base64.b64encode(ICON.encode()).decode(),
                      "mediatype": "image/svg+xml"}],
            "installModes": [{"type": "OwnNamespace", "supported": False},
                             {"type": "SingleNamespace", "supported": False},
                             {"type": "MultiNamespace", "supported": False},
                             {"type": "AllNamespaces", "supported": True}],
            "customresourcedefinitions": {"owned": _owned(crd)},
            "install": {"strategy": "deployment", "spec": {
                "deployments": [{"name": deployment["metadata"]["name"],
                                 "label": dict(deployment["metadata"].get("labels", {})),
                                 "spec": deployment["spec"]}],
                "clusterPermissions": [{"serviceAccountName": account, "rules": cluster_rules}],
                "permissions": [{"serviceAccountName": account, "rules": rules}],
            }},
            "relatedImages": [{"name": PACKAGE, "image": image}],
        },
    }
    files = {f"manifests/{PACKAGE}.clusterserviceversion.yaml": _dump(csv),
             f"manifests/{crd['spec']['group']}_{crd['spec']['names']['plural']}.yaml": _dump(crd),
             "metadata/annotations.yaml": _dump({"annotations": ANNOTATIONS}),
             "bundle.Dockerfile": _dockerfile()}
    skip = used | used_cluster | {f"Namespace/{namespace}", f"ServiceAccount/{account}",
                                  f"Deployment/{deployment['metadata']['name']}",
                                  f"CustomResourceDefinition/{crd['metadata']['name']}"}
    for obj in objects:
        if f"{obj['kind']}/{obj['metadata']['name']}" not in skip:
            files[f"manifests/{_file_name(obj)}"] = _dump(_without_namespace(obj, namespace))
    return files


def _dockerfile() -> str:
    labels = "".join(f"LABEL {k}={v}\n" for k, v in ANNOTATIONS.items())
    return ("# The bundle image OLM pulls: docker build -f bundle/bundle.Dockerfile -t IMAGE bundle/\n"
            "FROM scratch\n" + labels + "COPY manifests /manifests/\nCOPY metadata /metadata/\n")


def _dump(obj: Any) -> str:
    return "# Generated from deploy/base by scripts/bundle.py; do not edit.\n" + yaml.safe_dump(
        obj, sort_keys=False, width=100)


def wanted() -> dict[Path, str]:
    rendered = render_base()
    out = {BUNDLE / rel: text for rel, text in bundle_files(rendered).items()}
    out[RELEASE] = release_manifest(rendered)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a committed file differs")
    args = parser.parse_args(argv)
    files = wanted()
    stale = sorted(str(p.relative_to(ROOT)) for p, text in files.items()
                   if not p.exists() or p.read_text() != text)
    extra = sorted(str(p.relative_to(ROOT)) for p in BUNDLE.rglob("*") if p.is_file() and p not in files)
    if args.check:
        for name in stale:
            print(f"scripts/bundle.py: error: {name} differs from what deploy/ gives", file=sys.stderr)
        for name in extra:
            print(f"scripts/bundle.py: error: {name} is not generated from deploy/", file=sys.stderr)
        if stale or extra:
            print("run: python scripts/bundle.py", file=sys.stderr)
            return 1
        return 0
    for name in extra:
        (ROOT / name).unlink()
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    print(f"wrote {len(files)} files ({len(stale)} changed, {len(extra)} removed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
