"""Packaging: the Dockerfile, ``deploy/base`` and its RBAC (issues 4, 12).

The image cannot be built here (no container engine), so the Dockerfile is checked for what can
be checked: it parses into stages; the base is a pinned slim Python 3.11; the final stage runs as
a numeric non-root user (so ``runAsNonRoot`` holds for any UID a cluster assigns) and gets only
the virtualenv; and its install steps, replayed in a fresh
virtualenv with exactly the files it copies, give a working ``route-monitor``. ``deploy/``:
the kustomization names files that exist; the Deployment is hardened, admitted unchanged by
OpenShift's restricted-v2 SCC (emulated from its documentation: ``tests/support/scc.py``) and its
probes, ports and flags match the operator's; the ClusterRole is least-privilege, and (against the real
apiserver) grants the operator's user exactly what the operator does, nothing on users' objects.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from packaging.requirements import Requirement

from route_monitor.cli.main import parse
from tests.support.cluster import OPERATOR_TOKEN, ROOT, Cluster
from tests.support.scc import admit_restricted_v2

DEPLOY = ROOT / "deploy" / "base"


# --- Dockerfile ---------------------------------------------------------------------------------
def instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with line continuations joined and comments dropped."""
    out: list[tuple[str, str]] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        full = (pending + stripped).strip()
        pending = ""
        word, _, rest = full.partition(" ")
        out.append((word.upper(), rest.strip()))
    assert not pending, "dangling line continuation"
    return out


DOCKERFILE = instructions((ROOT / "Dockerfile").read_text())


def stages() -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for ins in DOCKERFILE:
        if ins[0] == "FROM":
            result.append([])
        if result:
            result[-1].append(ins)
    return result


def base_image() -> str:
    args = dict(a.split("=", 1) for i, a in DOCKERFILE if i == "ARG" and "=" in a)
    first_from = next(a for i, a in DOCKERFILE if i == "FROM")
    image = first_from.split()[0]
    return re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], image)


def test_dockerfile_is_multi_stage_on_a_pinned_slim_python_311() -> None:
    assert all(i in {"ARG", "FROM", "ENV", "WORKDIR", "COPY", "RUN", "USER", "EXPOSE", "ENTRYPOINT", "CMD", "LABEL"}
               for i, _ in DOCKERFILE)
    assert len(stages()) >= 2
    assert re.fullmatch(r"python:3\.11\.\d+-slim-\w+(@sha256:[0-9a-f]{64})?", base_image()), base_image()


def test_final_stage_is_non_root_and_gets_only_the_virtualenv() -> None:
    final = stages()[-1]
    users = [a for i, a in final if i == "USER"]
    assert users, "the final stage has no USER"
    uid = users[-1].split(":")[0]
    # numeric, so the kubelet can check runAsNonRoot without a passwd entry; the Deployment pins
    # no UID (OpenShift assigns one from the namespace's range, others use this one)
    assert uid not in ("0", "root") and uid.isdigit(), users
    env = " ".join(a for i, a in final if i == "ENV")
    assert "HOME=/tmp" in env, "an arbitrary UID has no home directory: HOME must point somewhere writable"
    copies = [a for i, a in final if i == "COPY"]
    assert copies and all(a.startswith("--from=") for a in copies), copies
    assert [a for i, a in final if i == "RUN"] == [], "the final stage installs nothing"
    entrypoint = [a for i, a in final if i == "ENTRYPOINT"]
    assert entrypoint and "route-monitor" in entrypoint[-1]


def _dockerignore_allows(path: str) -> bool:
    allowed = False
    for line in (ROOT / ".dockerignore").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        negate = line.startswith("!")
        pattern = line.lstrip("!").rstrip("/")
        if fnmatch.fnmatch(path, pattern) or path.startswith(pattern + "/") or pattern == "*":
            allowed = negate
    return allowed


def test_install_steps_give_a_working_route_monitor_in_a_fresh_venv(tmp_path: Path) -> None:
    """Replay the build stage: copy what it copies (through .dockerignore), run its RUN line
    with the venv path moved under tmp_path and pip kept offline, then run the result."""
    build = stages()[0]
    context = tmp_path / "src"
    context.mkdir()
    for i, args in build:
        if i == "COPY":
            *sources, dest = shlex.split(args)
            for src in sources:
                assert (ROOT / src).exists(), f"COPY {src}: missing"
                assert _dockerignore_allows(src), f"COPY {src}: excluded by .dockerignore"
                target = context / dest if not dest.endswith("/") and dest not in ("./", ".") else context / src
                if (ROOT / src).is_dir():
                    shutil.copytree(ROOT / src, target, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy2(ROOT / src, target)
    [run] = [a for i, a in build if i == "RUN"]
    prefix = tmp_path / "venv"
    script = run.replace("/opt/route-monitor", str(prefix)).replace("python -m venv", f"{sys.executable} -m venv")
    # offline: build tools (setuptools, wheel) come from the development venv, dependencies are
    # not installed (they are checked below against pyproject.toml instead)
    script = script.replace("pip install .", "pip install -q --no-index --no-deps --no-build-isolation .")
    assert "pip install -q --no-index" in script, f"unexpected install step: {run}"
    dev_site = next(Path(sys.prefix, "lib").glob("python3*/site-packages"))
    done = subprocess.run(["bash", "-c", script], cwd=context, capture_output=True, text=True, timeout=300,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(dev_site)})
    assert done.returncode == 0, done.stdout + done.stderr
    site = next((prefix / "lib").glob("python3*/site-packages"))
    installed = sorted(p.name for p in site.iterdir() if p.name.startswith(("route_monitor", "alert_rules")))
    assert installed[:2] == ["alert_rules", "route_monitor"], installed
    # with the dependencies from the development venv on the path: every module imports
    (site / "zz-dev-deps.pth").write_text(str(dev_site) + "\n")
    check = ("import importlib, pkgutil, route_monitor, alert_rules\n"
             f"assert route_monitor.__file__.startswith({str(site)!r}), route_monitor.__file__\n"
             "for pkg in (route_monitor, alert_rules):\n"
             "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
             "        importlib.import_module(m.name)\n")
    done = subprocess.run([str(prefix / "bin" / "python"), "-c", check], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    requires = subprocess.run([str(prefix / "bin" / "python"), "-c",
                               "import importlib.metadata as m; print('\\n'.join(m.requires('route-monitor')))"],
                              capture_output=True, text=True, cwd=tmp_path).stdout.split("\n")
    runtime = {Requirement(r) for r in requires if r and "extra ==" not in r}
    declared = {Requirement(d) for d in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    assert {(r.name, r.specifier) for r in runtime} == {(d.name, d.specifier) for d in declared}
    done = subprocess.run([str(prefix / "bin" / "route-monitor"), "operator", "--help"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 0 and "--allow-url-targets" in done.stdout, done.stderr
    # the CRD check validates against ships in the package: a number where the schema says string
    manifest = tmp_path / "rm.yaml"
    manifest.write_text("apiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {name: a, namespace: b}\n"
                        "spec:\n  target: {url: 'https://a.example'}\n  slo: {availability: 99.9}\n")
    done = subprocess.run([str(prefix / "bin" / "route-monitor"), "check", str(manifest)], cwd=tmp_path,
                          capture_output=True, text=True)
    assert done.returncode == 1 and f"{manifest}:6: error: RouteMonitor/b/a: spec.slo.availability: expected a " \
        "string" in done.stderr, done.stderr


# --- deploy/ ------------------------------------------------------------------------------------
def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((DEPLOY / name).read_text())


def test_kustomization_references_files_that_exist() -> None:
    """``kubectl apply -k deploy/`` (the README's command) is the base."""
    top = yaml.safe_load((DEPLOY.parent / "kustomization.yaml").read_text())
    assert top["resources"] == ["base"]
    kustomization = load("kustomization.yaml")
    for res in kustomization["resources"]:
        path = (DEPLOY / res).resolve()
        assert path.exists(), res
        if path.is_dir():
            assert (path / "kustomization.yaml").exists(), f"{res} is a folder without a kustomization.yaml"
            for sub in yaml.safe_load((path / "kustomization.yaml").read_text())["resources"]:
                assert (path / sub).exists(), f"{res}/{sub}"


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed (optional)")
def test_kustomize_builds_every_object() -> None:
    out = subprocess.run(["kubectl", "kustomize", str(DEPLOY.parent)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    kinds = sorted(d["kind"] for d in yaml.safe_load_all(out.stdout))
    assert kinds == sorted(["CustomResourceDefinition", "Namespace", "ServiceAccount", "ClusterRole",
                            "ClusterRole", "ClusterRole",  # the operator's; view and edit aggregated into the built-ins
                            "ClusterRoleBinding", "Role", "Role", "RoleBinding", "RoleBinding",  # Leases; Prometheus
                            "Deployment", "PodDisruptionBudget", "Service", "ServiceMonitor", "PrometheusRule"])


def container() -> dict[str, Any]:
    [c] = load("deployment.yaml")["spec"]["template"]["spec"]["containers"]
    return dict(c)


def test_deployment_is_hardened_and_matches_the_operators_flags() -> None:
    pod = load("deployment.yaml")["spec"]["template"]["spec"]
    c = container()
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert c["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                    "capabilities": {"drop": ["ALL"]}}
    assert c["resources"]["requests"]["cpu"] and c["resources"]["requests"]["memory"]
    assert c["resources"]["limits"]["memory"]
    assert pod["serviceAccountName"] == load("serviceaccount.yaml")["metadata"]["name"]
    args = parse(c["args"], {e["name"]: e["value"] for e in c["env"] if "value" in e})  # the flags exist
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"metrics": args.metrics_address[1], "health": args.health_port}
    assert args.metrics_port is None, "not the deprecated --metrics-port"
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "health"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}


def test_deployment_pins_no_uid_and_keeps_run_as_non_root() -> None:
    """restricted-v2 assigns the UID (GID 0): nothing may pin one, runAsNonRoot stays."""
    pod = load("deployment.yaml")["spec"]["template"]["spec"]
    contexts = [pod["securityContext"], *(c.get("securityContext", {}) for c in pod["containers"])]
    for sc in contexts:
        assert not {"runAsUser", "runAsGroup", "fsGroup", "seLinuxOptions"} & sc.keys(), sc
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}


def test_deployment_is_admitted_unchanged_by_restricted_v2() -> None:
    pod = load("deployment.yaml")["spec"]["template"]["spec"]
    admission = admit_restricted_v2(pod)
    assert admission.rejections == ()
    assert admission.uid != 0, "runAsNonRoot: the kubelet refuses UID 0"


PINNED = {"runAsNonRoot": True, "runAsUser": 65532, "runAsGroup": 65532, "seccompProfile": {"type": "RuntimeDefault"}}


@pytest.mark.parametrize(("pod_context", "container_context", "rejected"), [
    pytest.param(PINNED, {}, "runAsUser: Invalid value: 65532: must be in the ranges: [1000680000, 1000689999]",
                 id="fixed-uid-of-0.1.0"),
    pytest.param({"fsGroup": 2000}, {}, "fsGroup: Invalid value: []int64{2000}", id="fixed-fsgroup"),
    pytest.param({}, {"allowPrivilegeEscalation": True}, "allowPrivilegeEscalation: Invalid value: true",
                 id="privilege-escalation"),
    pytest.param({}, {"capabilities": {"add": ["NET_ADMIN"]}}, "capability may not be added", id="added-capability"),
    pytest.param({"seccompProfile": {"type": "Unconfined"}}, {}, "runtime/default is the only allowed seccomp",
                 id="unconfined-seccomp"),
])
def test_restricted_v2_emulation_rejects_what_the_scc_rejects(pod_context: dict[str, Any],
                                                              container_context: dict[str, Any],
                                                              rejected: str) -> None:
    """The emulation is not a rubber stamp: the Deployment of 0.1.0 (runAsUser 65532) and the usual
    mistakes are refused with the admission plugin's message."""
    pod = load("deployment.yaml")["spec"]["template"]["spec"]
    [c] = pod["containers"]
    pod = {**pod, "securityContext": pod_context,
           "containers": [{**c, "securityContext": {**c["securityContext"], **container_context}}]}
    assert any(rejected in r for r in admit_restricted_v2(pod).rejections), admit_restricted_v2(pod)


def test_deployment_runs_replicas_that_hand_over_without_a_gap() -> None:
    """Contract 6: two replicas, rolling updates that start the new pod before stopping an old one,
    at most one replica disrupted voluntarily, spread over nodes and zones, member name and Lease
    namespace (and the Node, whose zone is the location) from the downward API."""
    deployment = load("deployment.yaml")
    spec, pod = deployment["spec"], deployment["spec"]["template"]["spec"]
    assert spec["replicas"] >= 2
    assert spec["strategy"]["type"] == "RollingUpdate" and spec["strategy"]["rollingUpdate"]["maxUnavailable"] == 0
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    pdb = load("poddisruptionbudget.yaml")
    assert pdb["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert pdb["spec"].get("maxUnavailable") == 1 or pdb["spec"].get("minAvailable") == 1
    keys = {t["topologyKey"] for t in pod["topologySpreadConstraints"]}
    assert keys == {"kubernetes.io/hostname", "topology.kubernetes.io/zone"}
    [term] = pod["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert term["podAffinityTerm"]["labelSelector"]["matchLabels"].items() <= labels.items()
    env = {e["name"]: e["valueFrom"]["fieldRef"]["fieldPath"] for e in container()["env"]}
    assert env == {"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace",
                   "NODE_NAME": "spec.nodeName"}  # the Node's zone is the replica's location
    assert pod["terminationGracePeriodSeconds"] >= 10


def test_leases_and_the_shared_rule_are_granted_by_a_role_in_the_operators_namespace_only() -> None:
    role, binding = load("role.yaml"), load("rolebinding.yaml")
    sa = load("serviceaccount.yaml")["metadata"]
    assert role["kind"] == "Role" and role["metadata"]["namespace"] == sa["namespace"]
    # the Leases, and the shared rule the operator keeps in its own namespace (with its conflict event)
    assert [(r["apiGroups"], r["resources"], r["verbs"]) for r in role["rules"]] == [
        (["coordination.k8s.io"], ["leases"], ["get", "list", "watch", "create", "patch", "delete"]),
        (["monitoring.coreos.com"], ["prometheusrules"], ["get", "create", "update"]),
        ([""], ["events"], ["create"])]
    assert binding["metadata"]["namespace"] == sa["namespace"] and binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}]
    assert not any(r["resources"] == ["leases"] for r in ROLE["rules"]), "no cluster-wide Lease access"


def test_metrics_service_and_servicemonitor_select_the_operator() -> None:
    labels = load("deployment.yaml")["spec"]["template"]["metadata"]["labels"]
    service, monitor = load("service.yaml"), load("servicemonitor.yaml")
    assert all(labels.get(k) == v for k, v in service["spec"]["selector"].items())
    assert all(service["metadata"]["labels"].get(k) == v for k, v in monitor["spec"]["selector"]["matchLabels"].items())
    [port] = service["spec"]["ports"]
    assert port["targetPort"] == "metrics"
    assert [e["port"] for e in monitor["spec"]["endpoints"]] == [port["name"]]


# --- RBAC ---------------------------------------------------------------------------------------
ROLE = load("clusterrole.yaml")
# (group, resource, verb) the operator needs, and only those: kopf watches (list+watch, get for
# discovery-free reads), create + replace of owned objects (never patch or apply over another's),
# reads of rules to check whose they are, status patch, events, deletes of
# generated RouteMonitors. Checked against the ClusterRole and, live, against the apiserver.
NEEDED = {
    *(("route.openshift.io", "routes", v) for v in ("get", "list", "watch")),
    *(("", "services", v) for v in ("get", "list", "watch")),
    *(("networking.k8s.io", r, v) for r in ("ingresses", "ingressclasses") for v in ("get", "list", "watch")),
    *(("gateway.networking.k8s.io", r, v) for r in ("httproutes", "grpcroutes", "tcproutes", "gateways") for v in ("get", "list", "watch")),
    *(("routemonitor.io", "routemonitors", v) for v in ("get", "list", "watch", "create", "update", "delete")),
    ("routemonitor.io", "routemonitors/status", "patch"),
    # get/list: whose rule is at a name (never written over a team's own); delete: only rules of
    # earlier versions under the monitor's own name, with a uid precondition
    *(("monitoring.coreos.com", "prometheusrules", v) for v in ("get", "list", "create", "update", "delete")),
    ("", "events", "create"),
    ("", "nodes", "get"),  # the replica's own Node: its zone is the replica's location
}
FORBIDDEN = [
    pytest.param("route.openshift.io", "routes", "patch", id="patch-routes"),
    pytest.param("route.openshift.io", "routes", "update", id="update-routes-finalizers"),
    pytest.param("", "services", "patch", id="patch-services"),
    pytest.param("", "services", "delete", id="delete-services"),
    pytest.param("", "secrets", "get", id="read-secrets"),
    pytest.param("networking.k8s.io", "ingresses", "patch", id="patch-ingresses"),
    pytest.param("gateway.networking.k8s.io", "httproutes", "update", id="update-httproutes"),
    pytest.param("gateway.networking.k8s.io", "gateways", "patch", id="patch-gateways"),
    pytest.param("monitoring.coreos.com", "prometheusrules", "watch", id="watch-rules"),
    pytest.param("monitoring.coreos.com", "prometheusrules", "patch", id="patch-rules"),
    pytest.param("", "namespaces", "list", id="list-namespaces"),
    pytest.param("", "nodes", "list", id="list-nodes"),
    pytest.param("apiextensions.k8s.io", "customresourcedefinitions", "list", id="list-crds"),
]


def granted() -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in ROLE["rules"] for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"]}


def test_clusterrole_grants_exactly_what_the_operator_needs() -> None:
    assert granted() == NEEDED
    assert not any("*" in x for rule in ROLE["rules"] for x in (*rule["verbs"], *rule["resources"]))
    binding = load("clusterrolebinding.yaml")
    assert binding["roleRef"]["name"] == ROLE["metadata"]["name"]
    sa = load("serviceaccount.yaml")["metadata"]
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": sa["name"], "namespace": sa["namespace"]}]


def can(cluster: Cluster, group: str, resource: str, verb: str) -> bool:
    """Ask the apiserver (SelfSubjectAccessReview) as the operator's test user."""
    res, _, sub = resource.partition("/")
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
              "spec": {"resourceAttributes": {"group": group, "resource": res, "subresource": sub, "verb": verb,
                                              "namespace": "any"}}}
    r = httpx.post(f"{cluster.server}/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", json=review,
                   headers={"Authorization": f"Bearer {OPERATOR_TOKEN}"}, verify=False, timeout=10)
    r.raise_for_status()
    return bool(r.json()["status"]["allowed"])


@pytest.mark.cluster
@pytest.mark.parametrize(("group", "resource", "verb"), sorted(NEEDED))
def test_the_operator_user_may(cluster: Cluster, group: str, resource: str, verb: str) -> None:
    assert can(cluster, group, resource, verb)


@pytest.mark.cluster
@pytest.mark.parametrize(("group", "resource", "verb"), FORBIDDEN)
def test_the_operator_user_may_not(cluster: Cluster, group: str, resource: str, verb: str) -> None:
    assert not can(cluster, group, resource, verb)


def test_secret_access_is_an_opt_in_file_outside_the_default_kustomization() -> None:
    opt_in = list(yaml.safe_load_all((DEPLOY.parent / "optional" / "secrets-reader.yaml").read_text()))
    [role] = [d for d in opt_in if d["kind"] == "ClusterRole"]
    [binding] = [d for d in opt_in if d["kind"] == "ClusterRoleBinding"]
    assert {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"]} == {("", r, v) for r in ("secrets", "configmaps") for v in ("get", "watch")}
    assert binding["roleRef"]["name"] == role["metadata"]["name"]
    assert binding["subjects"] == load("clusterrolebinding.yaml")["subjects"]
    assert not any("optional" in str(r) for r in load("kustomization.yaml")["resources"])
