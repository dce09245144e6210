"""The README's commands that can run here.

Covers: the second of the two commands is what ``.ci/run`` runs; every row of the install table
names a layout that renders with ``kubectl kustomize``, whose flags the operator accepts, and
which ``route-monitor doctor``'s offline judgement (``route_monitor.cli.doctor.check_all``) passes
against the Prometheus that row's monitoring stack runs, configured as that stack configures it
(selectors, namespace labels, an enforced namespace label); every row whose stack has a known
Prometheus address sets ``--prometheus-url`` so ``kubectl get rmon`` fills its budget columns.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from route_monitor.cli.doctor import Generated, check_all, namespace_selected, selects
from route_monitor.cli.main import build_parser
from tests.support.upstream_crds import ROOT

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
README = (ROOT / "README.md").read_text()
OURS = {"app.kubernetes.io/managed-by": "route-monitor"}


def prometheus(name: str, namespace: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": namespace}, "spec": spec}


NOT_PLATFORM = {"matchExpressions": [{"key": "openshift.io/cluster-monitoring", "operator": "NotIn", "values": ["true"]},
                                     {"key": "openshift.io/user-monitoring", "operator": "NotIn", "values": ["false"]}]}
PLATFORM = {"matchLabels": {"openshift.io/cluster-monitoring": "true"}}
STACKS: dict[str, tuple[dict[str, Any], str, dict[str, str]]] = {
    # layout: (its stack's Prometheus, a namespace with monitors, that namespace's labels)
    "deploy/": (prometheus("k8s", "monitoring", ruleSelector={}, ruleNamespaceSelector={},
                           serviceMonitorSelector={}, serviceMonitorNamespaceSelector={}), "shop", {}),
    "deploy/overlays/kube-prometheus-stack": (
        prometheus("kube-prometheus-stack-prometheus", "monitoring",
                   ruleSelector={"matchLabels": {"release": "kube-prometheus-stack"}}, ruleNamespaceSelector={},
                   serviceMonitorSelector={"matchLabels": {"release": "kube-prometheus-stack"}},
                   serviceMonitorNamespaceSelector={}), "shop", {}),
    # OpenShift's platform Prometheus reads namespaces labelled for cluster monitoring only
    "deploy/overlays/openshift": (
        prometheus("k8s", "openshift-monitoring", ruleSelector={}, ruleNamespaceSelector=PLATFORM,
                   serviceMonitorSelector={}, serviceMonitorNamespaceSelector=PLATFORM),
        "openshift-console", {"openshift.io/cluster-monitoring": "true"}),
    # user-workload monitoring: every other namespace, rules labelled leaf-prometheus, namespace enforced
    "deploy/overlays/openshift-user-workload": (
        prometheus("user-workload", "openshift-user-workload-monitoring", enforcedNamespaceLabel="namespace",
                   ruleSelector={"matchLabels": {"openshift.io/prometheus-rule-evaluation-scope": "leaf-prometheus"}},
                   ruleNamespaceSelector=NOT_PLATFORM, serviceMonitorSelector={},
                   serviceMonitorNamespaceSelector=NOT_PLATFORM), "shop", {}),
}
PROMETHEUS_URLS = {"deploy/": None,
                   "deploy/overlays/kube-prometheus-stack": "http://kube-prometheus-stack-prometheus.monitoring.svc:9090",
                   "deploy/overlays/openshift": "https://thanos-querier.openshift-monitoring.svc:9091",
                   "deploy/overlays/openshift-user-workload": "https://thanos-querier.openshift-monitoring.svc:9091"}


def install_table() -> dict[str, str]:
    """The install table's rows: stack -> the layout its one command applies."""
    section = README.split("\n## Install", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        found = re.search(r"`(?:kubectl|oc) apply -k ([^`\s]+)`", line)
        if line.startswith("|") and found:
            rows[line.split("|")[1].strip()] = found.group(1)
    return rows


def render(layout: str) -> list[dict[str, Any]]:
    out = subprocess.run(["kubectl", "kustomize", str(ROOT / layout)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    [obj] = [o for o in objects if o["kind"] == kind]
    return obj


def test_the_test_command_is_what_ci_runs() -> None:
    blocks = re.findall(r"```sh\n(.*?)```", README.split("\n## ", 2)[1], re.S)
    assert [b.strip() for b in blocks][1] == "bash scripts/test.sh"
    assert "exec bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()
    assert "`.ci/run` runs exactly that command" in README
    assert "route-monitor demo" in blocks[0]


def test_the_install_table_has_one_row_per_stack() -> None:
    assert sorted(install_table().values()) == sorted(STACKS)
    assert len(install_table()) == 4


@pytest.mark.parametrize("layout", sorted(STACKS))
def test_each_install_row_passes_doctor_against_its_stacks_prometheus(layout: str) -> None:
    objects = render(layout)
    args = build_parser().parse_args(one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"])
    prom, monitored, monitored_labels = STACKS[layout]
    own_ns = one(objects, "Namespace")
    namespace_labels = {monitored: monitored_labels, own_ns["metadata"]["name"]: own_ns["metadata"].get("labels", {})}
    service_monitor = one(objects, "ServiceMonitor")
    made = Generated(rule_labels={**OURS, **dict(args.rule_label)}, rule_namespaces=(monitored,),
                     service_monitor=service_monitor)
    findings = check_all([prom], made, namespace_labels)
    assert [f for f in findings if f.level == "problem"] == [], findings
    enforced = bool(prom["spec"].get("enforcedNamespaceLabel"))
    assert any("enforces the namespace label" in f.message for f in findings) is enforced
    assert args.scrape_per_namespace is enforced  # the set-up doctor asks for where the label is enforced
    own_alerts = one(objects, "PrometheusRule")
    assert selects(prom["spec"]["ruleSelector"], own_alerts["metadata"].get("labels", {}))
    assert namespace_selected(prom["spec"]["ruleNamespaceSelector"], prom["metadata"]["namespace"],
                              own_alerts["metadata"]["namespace"], namespace_labels[own_alerts["metadata"]["namespace"]])


@pytest.mark.parametrize("layout", sorted(STACKS))
def test_rows_that_know_where_prometheus_is_fill_the_budget_columns(layout: str) -> None:
    objects = render(layout)
    args = build_parser().parse_args(one(objects, "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"])
    assert args.prometheus_url == PROMETHEUS_URLS[layout]
    if args.prometheus_url and args.prometheus_url.startswith("https://thanos-querier"):
        bindings = [b for b in objects if b["kind"] == "ClusterRoleBinding"
                    and b["roleRef"]["name"] == "cluster-monitoring-view"]
        assert [s["name"] for b in bindings for s in b["subjects"]] == ["route-monitor"]


def test_the_readme_commands_name_files_that_exist() -> None:
    for command in re.findall(r"`((?:kubectl|oc) apply [^`]+)`", README):
        words = shlex.split(command)
        for flag in ("-k", "-f"):
            if flag in words:
                assert (ROOT / words[words.index(flag) + 1]).exists(), command


USER_DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
INTERNAL = re.compile(r"contract|\bissues?\b|test_|tests/|the reference operator", re.I)


def _slug(heading: str) -> str:
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("doc", USER_DOCS, ids=lambda p: p.name)
def test_user_docs_speak_to_users_and_their_links_resolve(doc: Path) -> None:
    text = doc.read_text()
    assert [m.group(0) for m in INTERNAL.finditer(text)] == []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if target.startswith("http"):
            continue
        path, _, anchor = target.partition("#")
        linked = (doc.parent / path).resolve() if path else doc
        assert linked.exists(), f"{doc.name}: {target}"
        if anchor and linked.suffix == ".md":
            headings = {_slug(h) for h in re.findall(r"^#+ (.+)$", linked.read_text(), re.M)}
            assert anchor in headings, f"{doc.name}: {target}"


def test_every_docs_page_is_linked_from_the_readme() -> None:
    linked = set(re.findall(r"\]\(docs/([^)#]+)", README))
    assert linked == {p.name for p in (ROOT / "docs").glob("*.md")}
