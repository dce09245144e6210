"""The RouteMonitor CRD (``crds/routemonitor.yaml``) and the test stand-ins for Route and
PrometheusRule, as a real kube-apiserver (1.20) applies them:

- the schema accepts good RouteMonitors and rejects what a schema can catch (two targets,
  100% availability, a duration in words, an unknown method...), naming the field;
- the printer columns are URL, SLO, Availability, Budget, Last result, Ready, Age (and Probed by
  with -o wide; the SLO columns from ``status.slo``, shown by the apiserver's Table output as
  ``kubectl get rmon`` prints it); short name ``rmon``; status is a subresource (a spec write
  cannot change status);
- the duration pattern is the one ``alert_rules.durations`` parses, and ``lastProbe.message``'s
  bound the one the operator truncates to;
- the PrometheusRule stand-in rejects invalid rules like upstream does.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from alert_rules import durations
from route_monitor.operator import status
from route_monitor.spec import crdschema
from tests.support.cluster import ADMIN_TOKEN, ROOT, Cluster
from tests.support.net import wait_for

CRD = yaml.safe_load((ROOT / "crds" / "routemonitor.yaml").read_text())
VERSION = CRD["spec"]["versions"][0]
SCHEMA = VERSION["schema"]["openAPIV3Schema"]

GOOD: dict[str, Any] = {
    "apiVersion": "routemonitor.io/v1alpha1", "kind": "RouteMonitor",
    "metadata": {"name": "checkout", "namespace": "crd-tests"},
    "spec": {
        "target": {"route": {"name": "checkout"}},
        "path": "/healthz",
        "probe": {"interval": "30s", "timeout": "10s", "method": "GET", "expectedStatus": ["200-399", "404", "2xx"],
                  "bodyRegex": "ok", "tls": {"insecureSkipVerify": False}},
        "slo": {"availability": "99.9", "period": "30d", "latency": {"threshold": "500ms", "objective": "99"}},
        "alerting": {"page": True, "ticket": True, "labels": {"team": "shop"},
                     "annotations": {"runbook_url": "https://runbooks.example/checkout"}},
    },
}


REQUEST_SETTINGS: dict[str, Any] = {
    "headers": {"X-Probe": "route-monitor"},
    "auth": {"basic": {"secretRef": {"name": "creds", "usernameKey": "user", "passwordKey": "pass"}}},
    "tls": {"insecureSkipVerify": False, "serverName": "checkout.internal",
            "caRef": {"configMap": {"name": "company-ca", "key": "ca.crt"}},
            "clientCertRef": {"secret": {"name": "probe-client"}}},
}


def with_spec(**changes: Any) -> dict[str, Any]:
    """GOOD with dotted spec paths replaced (a value of None deletes the key)."""
    obj = copy.deepcopy(GOOD)
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = obj["spec"]
        for p in parents:
            node = node.setdefault(p, {})
        if value is None:
            node.pop(leaf, None)
        else:
            node[leaf] = value
    return obj


def api(cluster: Cluster, method: str, path: str, body: Any = None, **headers: str) -> httpx.Response:
    return httpx.request(method, cluster.server + path, json=body, verify=False, timeout=10,
                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}", **headers})


def namespace(cluster: Cluster, name: str) -> str:
    """``name``, created if it is not there yet."""
    r = api(cluster, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": name}})
    assert r.status_code in (201, 409), r.text
    return name


@pytest.fixture(scope="module")
def crd_ns(cluster: Cluster) -> str:
    return namespace(cluster, "crd-tests")


def create(cluster: Cluster, obj: dict[str, Any], plural: str = "routemonitors",
           group: str = "routemonitor.io/v1alpha1", dry_run: bool = True) -> httpx.Response:
    query = "?dryRun=All" if dry_run else ""
    return api(cluster, "POST", f"/apis/{group}/namespaces/crd-tests/{plural}{query}", obj)


def test_duration_pattern_is_the_one_the_generator_parses() -> None:
    probe = SCHEMA["properties"]["spec"]["properties"]["probe"]["properties"]
    assert probe["interval"]["pattern"] == durations.PATTERN
    assert probe["warmup"]["pattern"] == durations.PATTERN
    assert re.fullmatch(durations.PATTERN, "1h30m") and not re.fullmatch(durations.PATTERN, "30 seconds")


def test_the_package_carries_this_crd_for_check() -> None:
    """``check`` validates against the copy in the package (it ships in the wheel); keep them equal:
    ``cp crds/routemonitor.yaml route_monitor/crds/``."""
    packaged = ROOT / "route_monitor" / "crds" / "routemonitor.yaml"
    assert packaged.read_bytes() == (ROOT / "crds" / "routemonitor.yaml").read_bytes(), \
        "cp crds/routemonitor.yaml route_monitor/crds/routemonitor.yaml"
    assert crdschema.schema() == SCHEMA


def test_probe_message_bound_is_the_one_the_operator_truncates_to() -> None:
    last_probe = SCHEMA["properties"]["status"]["properties"]["lastProbe"]["properties"]
    assert last_probe["message"]["maxLength"] == status.PROBE_MESSAGE_MAX


def test_printer_columns_short_name_and_status_subresource() -> None:
    assert [c["name"] for c in VERSION["additionalPrinterColumns"]] == ["URL", "SLO", "Availability", "Budget",
                                                                        "Last result", "Ready", "Age", "Probed by"]
    assert [c.get("priority", 0) for c in VERSION["additionalPrinterColumns"]] == [0, 0, 0, 0, 0, 0, 0, 1]  # -o wide
    assert CRD["spec"]["names"]["shortNames"] == ["rmon"]
    assert VERSION["subresources"] == {"status": {}}


@pytest.mark.cluster
@pytest.mark.parametrize("obj", [
    pytest.param(GOOD, id="everything"),
    pytest.param(with_spec(target={"service": {"name": "checkout", "port": "http", "scheme": "https"}}), id="service-port-name"),
    pytest.param(with_spec(target={"service": {"name": "checkout", "port": 8443}}), id="service-port-number"),
    pytest.param(with_spec(target={"url": "https://checkout.example.com"}), id="url"),
    pytest.param(with_spec(probe=None, path=None, alerting=None, slo={"availability": "99.95"}), id="minimal"),
    pytest.param(with_spec(slo__availability="0.5"), id="availability-below-one"),
    pytest.param(with_spec(probe=REQUEST_SETTINGS), id="headers-auth-tls-references"),
    pytest.param(with_spec(maintenance=[{"schedule": "0 2 * * SUN", "duration": "2h", "timeZone": "Europe/Paris"},
                                        {"start": "2026-12-01T02:00:00Z", "end": "2026-12-01T04:00:00Z"}],
                           paused=True, probe__warmup="0s"), id="maintenance-paused-warmup"),
])
def test_schema_accepts(cluster: Cluster, crd_ns: str, obj: dict[str, Any]) -> None:
    r = create(cluster, obj)
    assert r.status_code == 201, r.text
    assert r.json()["spec"] == obj["spec"], "the apiserver pruned fields the schema does not declare"


@pytest.mark.cluster
@pytest.mark.parametrize(("obj", "field"), [
    pytest.param(with_spec(target={"route": {"name": "a"}, "url": "http://x"}), "spec.target", id="two-targets"),
    pytest.param(with_spec(target={}), "spec.target", id="no-target"),
    pytest.param(with_spec(slo__availability="100"), "spec.slo.availability", id="availability-100"),
    pytest.param(with_spec(slo__availability="0"), "spec.slo.availability", id="availability-0"),
    pytest.param(with_spec(slo__availability="high"), "spec.slo.availability", id="availability-word"),
    pytest.param(with_spec(slo__availability=99.9), "spec.slo.availability", id="availability-not-a-string"),
    pytest.param(with_spec(probe__interval="30 seconds"), "spec.probe.interval", id="interval-in-words"),
    pytest.param(with_spec(slo__period="1month"), "spec.slo.period", id="period-unknown-unit"),
    pytest.param(with_spec(probe__method="DELETE"), "spec.probe.method", id="method-not-allowed"),
    pytest.param(with_spec(probe__expectedStatus=["600"]), "spec.probe.expectedStatus", id="status-600"),
    pytest.param(with_spec(target={"service": {"name": "a", "scheme": "ftp"}}), "spec.target.service.scheme",
                 id="scheme-ftp"),
    pytest.param(with_spec(path="healthz"), "spec.path", id="relative-path"),
    pytest.param(with_spec(target={"url": "checkout.example.com"}), "spec.target.url", id="url-without-scheme"),
    pytest.param(with_spec(slo__latency={"threshold": "500ms"}), "spec.slo.latency.objective", id="latency-half"),
    pytest.param(with_spec(probe__auth={"basic": {"secretRef": {"name": "a"}}, "bearer": {"secretRef": {"name": "b"}}}),
                 "spec.probe.auth", id="two-auths"),
    pytest.param(with_spec(probe__auth={"bearer": {"secretRef": {"key": "token"}}}), "spec.probe.auth.bearer.secretRef.name",
                 id="secret-ref-without-name"),
    pytest.param(with_spec(probe__tls={"caRef": {"configMap": {"name": "a"}, "secret": {"name": "b"}}}),
                 "spec.probe.tls.caRef", id="ca-from-two-places"),
    pytest.param(with_spec(probe__headers={"X-Count": 3}), "spec.probe.headers", id="header-not-a-string"),
    pytest.param(with_spec(maintenance=[{"schedule": "0 2 * * SUN"}]), "spec.maintenance", id="window-without-duration"),
    pytest.param(with_spec(maintenance=[{"start": "2026-12-01T02:00:00Z"}]), "spec.maintenance", id="window-without-end"),
    pytest.param(with_spec(maintenance=[{"start": "tomorrow", "end": "2026-12-01T04:00:00Z"}]), "spec.maintenance",
                 id="window-start-not-a-time"),
    pytest.param(with_spec(probe__warmup="10 minutes"), "spec.probe.warmup", id="warmup-in-words"),
])
def test_schema_rejects(cluster: Cluster, crd_ns: str, obj: dict[str, Any], field: str) -> None:
    r = create(cluster, obj)
    assert r.status_code == 422, r.text
    assert field in r.text or field.rsplit(".", 1)[-1] in r.text, r.text


@pytest.mark.cluster
def test_printer_columns_and_status_subresource_in_the_apiserver(cluster: Cluster, crd_ns: str) -> None:
    obj = copy.deepcopy(GOOD)
    obj["metadata"]["name"] = "columns"
    r = create(cluster, obj, dry_run=False)
    assert r.status_code == 201, r.text
    base = "/apis/routemonitor.io/v1alpha1/namespaces/crd-tests/routemonitors/columns"
    status = {"status": {"url": "https://checkout.apps.example/healthz", "observedGeneration": 1,
                         "lastProbe": {"time": "2026-01-01T00:00:00Z", "result": "success"},
                         "probedBy": "route-monitor-7c9f-x2",
                         "slo": {"window": "30d", "availability": "99.9731", "budgetRemaining": "73.1",
                                 "burnRate1h": "0.4", "updated": "2026-11-23T08:00:00Z"},
                         "conditions": [{"type": "Ready", "status": "True", "reason": "Ready", "message": "ok",
                                         "lastTransitionTime": "2026-01-01T00:00:00Z"},
                                        {"type": "BudgetExhausted", "status": "False", "reason": "BudgetRemaining",
                                         "message": "73.1% left", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}}
    ct = {"Content-Type": "application/merge-patch+json"}
    assert api(cluster, "PATCH", base, status, **ct).json().get("status") is None, "status written through spec"
    assert api(cluster, "PATCH", base + "/status", status, **ct).status_code == 200
    table = api(cluster, "GET", base, Accept="application/json;as=Table;v=v1;g=meta.k8s.io").json()
    columns = [c["name"] for c in table["columnDefinitions"]]
    assert columns == ["Name", "URL", "SLO", "Availability", "Budget", "Last result", "Ready", "Age", "Probed by"]
    assert table["rows"][0]["cells"][1:7] == ["https://checkout.apps.example/healthz", "99.9", "99.9731", "73.1",
                                              "success", "True"]
    assert table["rows"][0]["cells"][8] == "route-monitor-7c9f-x2"
    stored = api(cluster, "GET", base).json()["status"]
    assert stored["slo"]["burnRate1h"] == "0.4"
    assert [c["type"] for c in stored["conditions"]] == ["Ready", "BudgetExhausted"]
    short = api(cluster, "GET", "/apis/routemonitor.io/v1alpha1").json()
    assert [r.get("shortNames") for r in short["resources"] if r["name"] == "routemonitors"] == [["rmon"]]


def _rule(**rule: Any) -> dict[str, Any]:
    return {"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
            "metadata": {"name": "r", "namespace": "crd-tests"},
            "spec": {"groups": [{"name": "g", "interval": "30s", "rules": [rule]}]}}


@pytest.mark.cluster
@pytest.mark.parametrize(("obj", "ok"), [
    pytest.param(_rule(record="job:up:sum", expr="sum(up)"), True, id="record"),
    pytest.param(_rule(alert="Down", expr="up == 0", **{"for": "5m"}, labels={"severity": "critical"}), True,
                 id="alert"),
    pytest.param(_rule(alert="Down", expr="up == 0", **{"for": "5 minutes"}), False, id="for-in-words"),
    pytest.param(_rule(record="bad name", expr="up"), False, id="record-not-a-metric-name"),
    pytest.param(_rule(record="a", alert="B", expr="up"), False, id="record-and-alert"),
    pytest.param(_rule(alert="Down"), False, id="no-expr"),
    pytest.param(_rule(alert="Down", expr="up", labels={"severity": 2}), False, id="label-not-a-string"),
])
def test_prometheusrule_stand_in_validates_like_upstream(cluster: Cluster, crd_ns: str, obj: dict[str, Any],
                                                         ok: bool) -> None:
    r = create(cluster, obj, plural="prometheusrules", group="monitoring.coreos.com/v1")
    assert (r.status_code == 201) == ok, r.text


@pytest.mark.cluster
def test_route_stand_in_accepts_a_loopback_host_with_port(cluster: Cluster, crd_ns: str) -> None:
    route = {"apiVersion": "route.openshift.io/v1", "kind": "Route", "metadata": {"name": "r", "namespace": "crd-tests"},
             "spec": {"host": "127.0.0.1:8080", "to": {"kind": "Service", "name": "r"}, "tls": {"termination": "edge"}}}
    assert create(cluster, route, plural="routes", group="route.openshift.io/v1").status_code == 201
    route["spec"]["host"] = "Not A Host"
    assert create(cluster, route, plural="routes", group="route.openshift.io/v1").status_code == 422


def test_examples_are_routemonitors_the_crd_names() -> None:
    checked = 0
    for path in sorted(Path(ROOT / "examples").glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "RouteMonitor":
                assert doc["apiVersion"] == f"{CRD['spec']['group']}/{VERSION['name']}", path
                checked += 1
    assert checked >= 1, "no RouteMonitor found in examples/"


@pytest.mark.cluster
def test_the_schema_kubectl_validates_with_knows_every_field_and_keeps_none_unknown(cluster: Cluster) -> None:
    """The API server prunes a field the schema does not declare; kubectl refuses it before that
    with the schema the API server publishes (client-side validation, or server-side field
    validation from 1.25): so that schema must declare every field and preserve none unknown."""
    def published() -> dict[str, Any]:
        found: dict[str, Any] = api(cluster, "GET", "/openapi/v2").json()["definitions"]
        return found
    wait_for(lambda: "io.routemonitor.v1alpha1.RouteMonitor" in published(), timeout=30,
             what="the RouteMonitor schema in the published OpenAPI")
    spec = published()["io.routemonitor.v1alpha1.RouteMonitor"]["properties"]["spec"]
    assert set(spec["properties"]) == set(SCHEMA["properties"]["spec"]["properties"])
    assert "x-kubernetes-preserve-unknown-fields" not in json.dumps(spec)
    assert "x-kubernetes-preserve-unknown-fields" not in json.dumps(SCHEMA)
