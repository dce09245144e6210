"""OLM's bundle rules as checks over a bundle folder (``operator-sdk bundle validate`` cannot be had
here). Learnt from operator-framework/api at 3048ccdc (2026-08-03): its bundle loader
(``pkg/manifests``: one flat ``manifests/`` folder, no hidden files, one CSV, the
``metadata/annotations.yaml`` keys), ``pkg/validation/internal`` (bundle: owned CRDs present and
every CRD owned, no ServiceAccount object named like the CSV's, size, related images; csv: name,
replaces, install modes, alm-examples against the owned APIs, minKubeVersion, required fields,
case-sensitive annotation keys; object: PodDisruptionBudget, PriorityClass, RBAC on default SCCs;
operatorhub, standardcapabilities, standardcategories: icon, links, maintainers, provider,
capability level, categories), and OLM's catalog operator (the kinds it can install from a bundle).

``problems(folder)`` returns every finding as one line; their warnings count as problems here.
"""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path
from typing import Any

import yaml

PREFIX = "operators.operatorframework.io.bundle."
REQUIRED_ANNOTATIONS = {f"{PREFIX}mediatype.v1": "registry+v1", f"{PREFIX}manifests.v1": "manifests/",
                        f"{PREFIX}metadata.v1": "metadata/"}
INSTALL_MODES = {"OwnNamespace", "SingleNamespace", "MultiNamespace", "AllNamespaces"}
CAPABILITIES = {"Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights", "Auto Pilot"}
CATEGORIES = {"AI/Machine Learning", "Application Runtime", "Big Data", "Cloud Provider", "Developer Tools",
              "Database", "Integration & Delivery", "Logging & Tracing", "Monitoring", "Modernization & Migration",
              "Networking", "OpenShift Optional", "Security", "Storage", "Streaming & Messaging", "Observability"}
ICON_TYPES = {"image/gif", "image/jpeg", "image/png", "image/svg+xml"}
CASE_SENSITIVE_KEYS = ("olm.operatorGroup", "olm.operatorNamespace", "olm.targetNamespaces", "olm.providedAPIs",
                       "olm.skipRange")
INSTALLABLE_KINDS = {"ClusterServiceVersion", "CustomResourceDefinition", "Secret", "ConfigMap", "ServiceAccount",
                     "Service", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "PrometheusRule",
                     "ServiceMonitor", "PodDisruptionBudget", "PriorityClass", "VerticalPodAutoscaler",
                     "ConsoleYAMLSample", "ConsoleQuickStart", "ConsoleCLIDownload", "ConsoleLink"}
DEFAULT_SCCS = {"privileged", "restricted", "anyuid", "hostaccess", "hostmount-anyuid", "hostnetwork", "nonroot"}
MAX_COMPRESSED = 1 << 20
SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
IMAGE = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(:[0-9]+)?(/[a-z0-9]+([._-][a-z0-9]+)*)*(:[\w][\w.-]{0,127})?"
                   r"(@sha256:[0-9a-f]{64})?$")
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
URL = re.compile(r"^https?://[^\s/$.?#].[^\s]*$")


def _name_ok(name: Any) -> bool:
    return isinstance(name, str) and len(name) <= 63 and bool(DNS1123_SUBDOMAIN.match(name)) \
        and bool(LABEL_VALUE.match(name))


def _gvk(crd_name: str, version: str, kind: str) -> tuple[str, str, str]:
    return (crd_name.split(".", 1)[1] if "." in crd_name else crd_name, version, kind)


def layout(folder: Path) -> tuple[list[str], list[dict[str, Any]], dict[str, Any]]:
    """The bundle loader's rules; the objects of manifests/ and the annotations."""
    out: list[str] = []
    manifests, metadata = folder / "manifests", folder / "metadata" / "annotations.yaml"
    if not manifests.is_dir():
        return ["no manifests/ folder"], [], {}
    objects: list[dict[str, Any]] = []
    for path in sorted(manifests.iterdir()):
        if path.is_dir():
            out.append(f"manifests/ holds a folder: {path.name}")
        elif path.name.startswith("."):
            out.append(f"manifests/ holds a hidden file: {path.name}")
        else:
            docs = [d for d in yaml.safe_load_all(path.read_text()) if d]
            if len(docs) != 1 or not isinstance(docs[0], dict):
                out.append(f"manifests/{path.name}: expected exactly one object, found {len(docs)}")
            objects += [d for d in docs if isinstance(d, dict)]
    annotations: dict[str, Any] = {}
    if not metadata.is_file():
        out.append("no metadata/annotations.yaml")
    else:
        annotations = dict((yaml.safe_load(metadata.read_text()) or {}).get("annotations") or {})
    return out, objects, annotations


def annotation_problems(annotations: dict[str, Any], folder: Path) -> list[str]:
    out = [f"metadata/annotations.yaml: {k} must be {v!r} (got {annotations.get(k)!r})"
           for k, v in REQUIRED_ANNOTATIONS.items() if annotations.get(k) != v]
    package = annotations.get(f"{PREFIX}package.v1")
    if not (isinstance(package, str) and _name_ok(package)):
        out.append(f"metadata/annotations.yaml: {PREFIX}package.v1 must name the package (got {package!r})")
    channels = [c.strip() for c in str(annotations.get(f"{PREFIX}channels.v1") or "").split(",") if c.strip()]
    if not channels:
        out.append(f"metadata/annotations.yaml: {PREFIX}channels.v1 must list at least one channel")
    default = annotations.get(f"{PREFIX}channel.default.v1")
    if default is not None and default not in channels:
        out.append(f"metadata/annotations.yaml: default channel {default!r} is not among the channels {channels}")
    dockerfile = folder / "bundle.Dockerfile"
    if dockerfile.is_file():
        labels = dict(line.split(None, 1)[1].split("=", 1) for line in dockerfile.read_text().splitlines()
                      if line.startswith("LABEL "))
        if {k: v for k, v in labels.items() if k.startswith(PREFIX)} != {k: str(v) for k, v in annotations.items()}:
            out.append("bundle.Dockerfile: its LABELs differ from metadata/annotations.yaml")
    return out


def csv_problems(csv: dict[str, Any], package: str | None) -> list[str]:
    out: list[str] = []
    meta, spec = csv.get("metadata") or {}, csv.get("spec") or {}
    name = meta.get("name")
    if csv.get("apiVersion") != "operators.coreos.com/v1alpha1":
        out.append(f"CSV: apiVersion must be operators.coreos.com/v1alpha1 (got {csv.get('apiVersion')!r})")
    if not _name_ok(name):
        out.append(f"CSV: metadata.name {name!r} is not a DNS-1123 subdomain and label value")
    if spec.get("replaces") is not None and not _name_ok(spec["replaces"]):
        out.append(f"CSV: spec.replaces {spec['replaces']!r} is not a valid CSV name")
    version = spec.get("version")
    if not (isinstance(version, str) and SEMVER.match(version)):
        out.append(f"CSV: spec.version {version!r} is not a semantic version")
    elif package and name != f"{package}.v{version}":
        out.append(f"CSV: metadata.name {name!r} should be {package}.v{version}")
    if not (isinstance(spec.get("minKubeVersion"), str) and SEMVER.match(spec["minKubeVersion"])):
        out.append(f"CSV: spec.minKubeVersion {spec.get('minKubeVersion')!r} is missing or not a semantic version")
    if not spec.get("displayName"):
        out.append("CSV: spec.displayName is required")
    out += _install_mode_problems(spec.get("installModes") or [])
    out += _install_problems(spec.get("install") or {})
    for i, owned in enumerate((spec.get("customresourcedefinitions") or {}).get("owned") or []):
        out += [f"CSV: spec.customresourcedefinitions.owned[{i}].{f} is required"
                for f in ("name", "version", "kind") if not owned.get(f)]
        if "." not in str(owned.get("name", "")):
            out.append(f"CSV: owned[{i}].name {owned.get('name')!r} is not plural.group")
    out += _example_problems(meta.get("annotations") or {}, spec)
    out += _hub_problems(meta.get("annotations") or {}, spec)
    for key in meta.get("annotations") or {}:
        for good in CASE_SENSITIVE_KEYS:
            if key.lower() == good.lower() and key != good:
                out.append(f"CSV: annotation {key} uses the wrong case; should be {good}")
        if key == "olm.properties":
            out.append("CSV: the olm.properties annotation belongs in metadata/properties.yaml")
    for i, related in enumerate(spec.get("relatedImages") or []):
        if not IMAGE.match(str(related.get("image") or "")):
            out.append(f"CSV: spec.relatedImages[{i}].image {related.get('image')!r} is not an image reference")
    return out


def _install_mode_problems(modes: list[dict[str, Any]]) -> list[str]:
    if not modes:
        return ["CSV: spec.installModes: install modes not found"]
    types = [m.get("type") for m in modes]
    out = [f"CSV: spec.installModes: unknown type {t!r}" for t in types if t not in INSTALL_MODES]
    if len(set(types)) != len(types):
        out.append("CSV: spec.installModes: duplicate install modes present")
    if not any(m.get("supported") is True for m in modes):
        out.append("CSV: spec.installModes: none of the install modes is supported")
    return out


def _install_problems(install: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if install.get("strategy") != "deployment":
        out.append(f"CSV: spec.install.strategy must be 'deployment' (got {install.get('strategy')!r})")
    strategy = install.get("spec") or {}
    deployments = strategy.get("deployments") or []
    if not deployments:
        out.append("CSV: spec.install.spec.deployments is empty")
    for i, d in enumerate(deployments):
        if not d.get("name") or not isinstance(d.get("spec"), dict):
            out.append(f"CSV: spec.install.spec.deployments[{i}] needs a name and a spec")
    for field in ("permissions", "clusterPermissions"):
        for i, perm in enumerate(strategy.get(field) or []):
            if not perm.get("serviceAccountName") or not isinstance(perm.get("rules"), list):
                out.append(f"CSV: spec.install.spec.{field}[{i}] needs a serviceAccountName and rules")
            out += rbac_problems(perm.get("rules") or [], f"CSV {field}[{i}]")
    return out


def _example_problems(annotations: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    raw = annotations.get("alm-examples")
    if raw is None:
        return ["CSV: the alm-examples annotation is missing"]
    try:
        examples = json.loads(raw)
    except json.JSONDecodeError as e:
        return [f"CSV: alm-examples is not JSON: {e}"]
    if not isinstance(examples, list) or not all(isinstance(e, dict) for e in examples):
        return ["CSV: alm-examples must be a JSON list of objects"]
    provided = {_gvk(o.get("name", ""), o.get("version", ""), o.get("kind", ""))
                for o in (spec.get("customresourcedefinitions") or {}).get("owned") or []}
    given = set()
    for example in examples:
        group, _, version = str(example.get("apiVersion", "")).rpartition("/")
        given.add((group, version, str(example.get("kind"))))
    out = [f"CSV: alm-examples: {g}/{v} {k} is not a provided API" for g, v, k in sorted(given - provided, key=str)]
    out += [f"CSV: provided API {g}/{v} {k} has no alm-examples entry" for g, v, k in sorted(provided - given)]
    return out


def _hub_problems(annotations: dict[str, Any], spec: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if annotations.get("capabilities") not in CAPABILITIES:
        out.append(f"CSV: capabilities {annotations.get('capabilities')!r} is not a capability level")
    out += [f"CSV: category {c.strip()!r} is not a standard category"
            for c in str(annotations.get("categories", "")).split(",") if c.strip() not in CATEGORIES]
    icons = spec.get("icon") or []
    if len(icons) != 1:
        out.append("CSV: spec.icon should have exactly one element")
    for icon in icons:
        if icon.get("mediatype") not in ICON_TYPES or not icon.get("base64data"):
            out.append("CSV: spec.icon needs base64data and a mediatype among " + ", ".join(sorted(ICON_TYPES)))
        else:
            base64.b64decode(icon["base64data"], validate=True)
    out += [f"CSV: spec.links: {link!r} needs a name and an http(s) url" for link in spec.get("links") or []
            if not link.get("name") or not URL.match(str(link.get("url", "")))]
    out += [f"CSV: spec.maintainers: {m!r} needs a name and an email" for m in spec.get("maintainers") or []
            if not m.get("name") or not EMAIL.match(str(m.get("email", "")))]
    if not (spec.get("provider") or {}).get("name"):
        out.append("CSV: spec.provider.name is required")
    return out


def rbac_problems(rules: list[dict[str, Any]], where: str) -> list[str]:
    out = []
    for rule in rules:
        groups, resources, verbs = (set(rule.get(k) or []) for k in ("apiGroups", "resources", "verbs"))
        if "policy" in groups and "poddisruptionbudgets" in resources and verbs & {"*", "create", "update", "patch"}:
            out.append(f"{where}: grants create/update on poddisruptionbudgets, which could impact cluster stability")
        if ("security.openshift.io" in groups and "securitycontextconstraints" in resources
                and verbs & {"*", "delete", "update", "patch"} and set(rule.get("resourceNames") or []) & DEFAULT_SCCS):
            out.append(f"{where}: may modify a default SecurityContextConstraints")
    return out


def object_problems(objects: list[dict[str, Any]], csv: dict[str, Any]) -> list[str]:
    out: list[str] = []
    strategy = ((csv.get("spec") or {}).get("install") or {}).get("spec") or {}
    accounts = {d["spec"]["template"]["spec"].get("serviceAccountName") for d in strategy.get("deployments") or []
                if isinstance(d.get("spec"), dict)}
    for obj in objects:
        kind, name = obj.get("kind"), (obj.get("metadata") or {}).get("name")
        if kind not in INSTALLABLE_KINDS:
            out.append(f"{kind}/{name}: OLM cannot install this kind from a bundle")
        if kind == "ServiceAccount" and name in accounts:
            out.append(f"ServiceAccount/{name}: the CSV already names this account; OLM creates it")
        if kind == "PodDisruptionBudget":
            spec = obj.get("spec") or {}
            if spec.get("maxUnavailable") in (0, "0%"):
                out.append(f"PodDisruptionBudget/{name}: maxUnavailable cannot be 0 or 0%")
            if spec.get("minAvailable") == "100%":
                out.append(f"PodDisruptionBudget/{name}: minAvailable cannot be 100%")
        if kind == "PriorityClass" and obj.get("globalDefault"):
            out.append(f"PriorityClass/{name}: globalDefault cannot be true")
        if kind in ("Role", "ClusterRole"):
            out += rbac_problems(obj.get("rules") or [], f"{kind}/{name}")
        if (obj.get("metadata") or {}).get("namespace"):
            out.append(f"{kind}/{name}: a bundle object names no namespace (OLM installs into the chosen one)")
    return out


def crd_problems(objects: list[dict[str, Any]], csv: dict[str, Any]) -> list[str]:
    out: list[str] = []
    in_bundle: list[tuple[str, str, str]] = []
    for crd in (o for o in objects if o.get("kind") == "CustomResourceDefinition"):
        if crd.get("apiVersion") not in ("apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1"):
            out.append(f"CRD {crd['metadata']['name']}: unsupported apiVersion {crd.get('apiVersion')}")
        spec = crd.get("spec") or {}
        in_bundle += [(str(spec.get("group")), str(v.get("name")), str((spec.get("names") or {}).get("kind")))
                      for v in spec.get("versions") or []]
    owned = [_gvk(o.get("name", ""), o.get("version", ""), o.get("kind", ""))
             for o in ((csv.get("spec") or {}).get("customresourcedefinitions") or {}).get("owned") or []]
    out += [f"CRD {g}/{v} {k} is twice in the bundle" for g, v, k in {x for x in in_bundle if in_bundle.count(x) > 1}]
    out += [f"owned CRD {g}/{v} {k} not found in the bundle" for g, v, k in owned if (g, v, k) not in in_bundle]
    owned_kinds = {(g, k) for g, _, k in owned}
    out += [f"CRD {g}/{v} {k} is in the bundle but not defined in the CSV" for g, v, k in in_bundle
            if (g, v, k) not in owned and (g, k) not in owned_kinds]
    return out


def size_problems(folder: Path) -> list[str]:
    files = [p for p in folder.rglob("*") if p.is_file()]
    compressed = sum(len(base64.b64encode(gzip.compress(p.read_bytes()))) for p in files)
    return [] if compressed <= MAX_COMPRESSED else [f"bundle is {compressed} bytes compressed, over {MAX_COMPRESSED}"]


def problems(folder: Path) -> list[str]:
    out, objects, annotations = layout(folder)
    csvs = [o for o in objects if o.get("kind") == "ClusterServiceVersion"]
    if len(csvs) != 1:
        return [*out, f"manifests/ must hold exactly one ClusterServiceVersion (found {len(csvs)})"]
    [csv] = csvs
    package = annotations.get(f"{PREFIX}package.v1")
    out += annotation_problems(annotations, folder)
    out += csv_problems(csv, package if isinstance(package, str) else None)
    out += crd_problems(objects, csv)
    out += object_problems([o for o in objects if o is not csv], csv)
    out += size_problems(folder)
    return out

