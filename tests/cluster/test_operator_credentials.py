"""Contract 8 in the operator, on the real control plane, with the operator running as the
user bound only to ``deploy/base/clusterrole.yaml`` (which grants no Secret access at all) plus,
per namespace, exactly what the README tells a user to grant:

- ``granted``: a namespace Role on *named* Secrets and a ConfigMap (``resourceNames``), the
  least-privilege way; it is enough because the operator reads and watches one object at a
  time (a cluster- or namespace-wide Secret watch would be refused);
- ``reader``: the opt-in ``deploy/optional/secrets-reader.yaml`` ClusterRole, bound there;
- ``denied``: nothing: references are reported ``Forbidden``.

Covers: basic auth from a Secret, a rotation of that Secret picked up without a restart, the
Secret deleted (``SecretNotFound``, a Warning event, probing stops) and created again, its watch
stopped when no monitor references it any more; mutual
TLS with a private CA from a ConfigMap, a ``kubernetes.io/tls`` Secret and ``serverName``;
bearer auth through the opt-in ClusterRole; ``InvalidCertificate``; a URL with user info
refused pointing to ``spec.probe.auth``. Last, a sweep of ``/metrics``, the operator's log,
every event, status and generated PrometheusRule for any secret value used here: none.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Event, Namespace, Secret
from lightkube.resources.rbac_authorization_v1 import ClusterRole, Role, RoleBinding
from lightkube.types import PatchType

from alert_rules import names
from tests.support.authtargets import AuthTarget, PrivateCA
from tests.support.cluster import OPERATOR_USER, ROOT, Cluster
from tests.support.net import wait_for
from tests.support.operator import (
    Operator,
    admin_client,
    condition,
    get,
    running_operator,
    wait_monitor,
    warnings_for,
)
from tests.support.resources import PrometheusRule, RouteMonitor

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(180)]
GRANTED, READER, DENIED = "creds-granted", "creds-reader", "creds-denied"
NAMED = ["basic-creds", "probe-client", "bad-client"]
SECRETS_USED: list[str] = []
"""Every secret value these tests put in the cluster (the last test looks for them everywhere)."""


def secret_value(text: str) -> str:
    SECRETS_USED.extend([text, base64.b64encode(text.encode()).decode()])
    return text


def basic(user: str, password: str) -> str:
    encoded = base64.b64encode(f"{user}:{password}".encode()).decode()
    SECRETS_USED.append(encoded)
    return f"Basic {encoded}"


def subject() -> list[dict[str, str]]:
    return [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": OPERATOR_USER}]


@pytest.fixture(scope="module")
def kube(cluster: Cluster) -> Client:
    client = admin_client(cluster)
    for ns in (GRANTED, READER, DENIED):
        client.create(Namespace(metadata=ObjectMeta(name=ns)))
    client.create(Role.from_dict({
        "metadata": {"name": "route-monitor-reads-named", "namespace": GRANTED},
        "rules": [{"apiGroups": [""], "resources": ["secrets"], "resourceNames": NAMED, "verbs": ["get", "watch"]},
                  {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["company-ca"],
                   "verbs": ["get", "watch"]}]}))
    client.create(RoleBinding.from_dict({
        "metadata": {"name": "route-monitor-reads-named", "namespace": GRANTED},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "route-monitor-reads-named"},
        "subjects": subject()}))
    opt_in = list(yaml.safe_load_all((ROOT / "deploy" / "optional" / "secrets-reader.yaml").read_text()))
    role = next(d for d in opt_in if d["kind"] == "ClusterRole")
    client.create(ClusterRole.from_dict(role))
    client.create(RoleBinding.from_dict({  # the opt-in ClusterRole, bound in one namespace only
        "metadata": {"name": "route-monitor-secrets-reader", "namespace": READER},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]},
        "subjects": subject()}))
    return client


@pytest.fixture(scope="module")
def operator(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    args = ["--allow-url-targets", *(a for ns in (GRANTED, READER, DENIED) for a in ("--namespace", ns))]
    with running_operator(cluster, tmp_path_factory.mktemp("operator"), *args) as op:
        yield op


@pytest.fixture(scope="module")
def company_ca() -> PrivateCA:
    return PrivateCA()


def monitor(ns: str, name: str, url: str, probe: dict[str, Any]) -> Any:
    return RouteMonitor.from_dict({"apiVersion": names.API_VERSION, "kind": names.KIND,
                                   "metadata": {"name": name, "namespace": ns},
                                   "spec": {"target": {"url": url}, "slo": {"availability": "99.9"},
                                            "probe": {"interval": "1s", "timeout": "800ms", **probe}}})


def secret(ns: str, name: str, values: dict[str, str], type_: str = "Opaque") -> Any:
    return Secret(metadata=ObjectMeta(name=name, namespace=ns), type=type_, stringData=values)


def ready(m: dict[str, Any]) -> bool:
    return condition(m, "Ready").get("status") == "True"


def resolved_reason(reason: str) -> Any:
    return lambda m: condition(m, "TargetResolved").get("reason") == reason


def sent(target: AuthTarget, authorization: str) -> int:
    return sum(1 for s in target.seen if s.headers.get("Authorization") == authorization)


BASIC = {"auth": {"basic": {"secretRef": {"name": "basic-creds"}}}}


def test_basic_auth_from_a_secret_rotation_and_deletion(kube: Client, operator: Operator,
                                                       started: list[AuthTarget]) -> None:
    first, second = secret_value("first-Password-1"), secret_value("second-Password-2")
    target = AuthTarget(authorization=basic("probe", first))
    started.append(target)
    kube.create(secret(GRANTED, "basic-creds", {"username": "probe", "password": first}))
    kube.create(monitor(GRANTED, "basic", target.url() + "/health", BASIC))
    wait_monitor(kube, GRANTED, "basic", lambda m: ready(m) and (m["status"].get("lastProbe") or {}).get(
        "result") == "success", "Ready with a successful authenticated probe")

    # rotation: the Secret changes, the next probes send the new password, no restart
    target.expected = basic("probe", second)
    kube.patch(Secret, "basic-creds", {"stringData": {"password": second}}, namespace=GRANTED,
               patch_type=PatchType.MERGE)
    wait_for(lambda: sent(target, basic("probe", second)) >= 2, timeout=20, what="the rotated password to be sent")
    wait_monitor(kube, GRANTED, "basic", lambda m: (m["status"].get("lastProbe") or {}).get("result") == "success",
                 "success after the rotation")
    assert operator.proc is not None and operator.proc.poll() is None

    # deletion: SecretNotFound, a Warning event, no more probes
    kube.delete(Secret, "basic-creds", namespace=GRANTED)
    m = wait_monitor(kube, GRANTED, "basic", resolved_reason("SecretNotFound"), "TargetResolved=False/SecretNotFound")
    assert condition(m, "TargetResolved")["status"] == "False"
    assert f"Secret {GRANTED}/basic-creds does not exist" in condition(m, "TargetResolved")["message"]
    assert condition(m, "Probing")["status"] == "False"
    wait_for(lambda: bool(warnings_for(kube, GRANTED, "RouteMonitor", "basic", "SecretNotFound")), timeout=10,
             what="a SecretNotFound Warning event")
    stopped = len(target.seen)
    wait_for(lambda: len(target.seen) <= stopped + 1, timeout=3, what="probing to stop")
    # created again: resolved again
    kube.create(secret(GRANTED, "basic-creds", {"username": "probe", "password": second}))
    wait_monitor(kube, GRANTED, "basic", ready, "Ready again once the Secret is back", timeout=30)
    # no monitor references it any more: its watch stops
    kube.delete(RouteMonitor, "basic", namespace=GRANTED)
    wait_for(lambda: f"stopped watching secret {GRANTED}/basic-creds" in operator.log(400), timeout=10,
             what="the Secret's watch to stop")


def test_mutual_tls_with_private_ca_configmap_client_cert_secret_and_server_name(
        kube: Client, operator: Operator, started: list[AuthTarget], company_ca: PrivateCA) -> None:
    client_ca = PrivateCA()
    target = AuthTarget(tls=company_ca.server_context("checkout.internal", client_ca=client_ca))
    started.append(target)
    cert, key = client_ca.client_pair()
    SECRETS_USED.append(key.decode().splitlines()[1])
    kube.create(ConfigMap(metadata=ObjectMeta(name="company-ca", namespace=GRANTED),
                          data={"ca.crt": company_ca.pem.decode()}))
    kube.create(secret(GRANTED, "probe-client", {"tls.crt": cert.decode(), "tls.key": key.decode()},
                       "kubernetes.io/tls"))
    kube.create(monitor(GRANTED, "mtls", target.url() + "/", {"tls": {
        "serverName": "checkout.internal", "caRef": {"configMap": {"name": "company-ca"}},
        "clientCertRef": {"secret": {"name": "probe-client"}}}}))
    m = wait_monitor(kube, GRANTED, "mtls", lambda m: ready(m) and (m["status"].get("lastProbe") or {}).get(
        "result") == "success", "mutual TLS probe succeeding")
    assert target.seen[-1].sni == "checkout.internal"
    assert target.seen[-1].headers["Host"] == f"checkout.internal:{target.port}"
    assert m["status"]["url"] == target.url() + "/"


def test_invalid_client_certificate_is_reported(kube: Client, operator: Operator, company_ca: PrivateCA) -> None:
    _, key = PrivateCA().client_pair()
    cert, _ = PrivateCA().client_pair()
    SECRETS_USED.append(key.decode().splitlines()[1])
    kube.create(secret(GRANTED, "bad-client", {"tls.crt": cert.decode(), "tls.key": key.decode()},
                       "kubernetes.io/tls"))
    kube.create(monitor(GRANTED, "bad-mtls", "https://127.0.0.1:9/", {
        "tls": {"clientCertRef": {"secret": {"name": "bad-client"}}}}))
    m = wait_monitor(kube, GRANTED, "bad-mtls", resolved_reason("InvalidCertificate"), "InvalidCertificate")
    assert "does not match the certificate" in condition(m, "TargetResolved")["message"]


def test_bearer_token_through_the_opt_in_cluster_role(kube: Client, operator: Operator,
                                                      started: list[AuthTarget]) -> None:
    token = secret_value("bearer-Token-0123456789")
    target = AuthTarget(authorization=f"Bearer {token}")
    started.append(target)
    kube.create(secret(READER, "api-token", {"token": token}))
    kube.create(monitor(READER, "bearer", target.url() + "/", {"auth": {"bearer": {"secretRef": {"name": "api-token"}}}}))
    wait_monitor(kube, READER, "bearer", lambda m: (m["status"].get("lastProbe") or {}).get("result") == "success",
                 "bearer-authenticated probe succeeding")


def test_unreadable_secret_is_forbidden_with_the_way_to_grant_it(kube: Client, operator: Operator) -> None:
    kube.create(secret(DENIED, "basic-creds", {"username": "probe", "password": secret_value("denied-Password")}))
    kube.create(monitor(DENIED, "denied", "http://127.0.0.1:9/", BASIC))
    m = wait_monitor(kube, DENIED, "denied", resolved_reason("Forbidden"), "TargetResolved=False/Forbidden")
    assert "deploy/optional/secrets-reader.yaml" in condition(m, "TargetResolved")["message"]
    wait_for(lambda: bool(warnings_for(kube, DENIED, "RouteMonitor", "denied", "Forbidden")), timeout=10,
             what="a Forbidden Warning event")


def test_url_with_user_info_is_refused_pointing_to_auth(kube: Client, operator: Operator) -> None:
    password = secret_value("in-the-URL-Password")
    kube.create(monitor(GRANTED, "userinfo", f"http://probe:{password}@127.0.0.1:9/", {}))
    m = wait_monitor(kube, GRANTED, "userinfo", lambda m: condition(m, "Ready").get("reason") == "InvalidSpec",
                     "InvalidSpec")
    assert "spec.probe.auth" in condition(m, "Ready")["message"]


def test_no_secret_value_anywhere(kube: Client, operator: Operator, cluster: Cluster) -> None:
    assert len(SECRETS_USED) >= 8, "run with the tests above"
    kube.create(monitor(GRANTED, "sweep", "http://127.0.0.1:9/", BASIC))  # one more status and rule to read
    wait_monitor(kube, GRANTED, "sweep", lambda m: bool(m.get("status")), "status of the sweep monitor")
    wait_for(lambda: get(kube, PrometheusRule, names.prometheus_rule_name("sweep"), GRANTED) is not None, timeout=10, what="its rule")
    places: dict[str, str] = {"/metrics": operator.metrics_text(), "operator log": Path(operator.log_path).read_text()}
    for ns in (GRANTED, READER, DENIED):
        places[f"events in {ns}"] = json.dumps([e.to_dict() for e in kube.list(Event, namespace=ns)])
        places[f"RouteMonitor statuses in {ns}"] = json.dumps(  # (a spec holds what its author wrote)
            [m.to_dict().get("status") for m in kube.list(RouteMonitor, namespace=ns)])
        places[f"PrometheusRules in {ns}"] = json.dumps([r.to_dict() for r in kube.list(PrometheusRule, namespace=ns)])
    assert "route_monitor_target_info" in places["/metrics"] and "SecretNotFound" in places[f"events in {GRANTED}"]
    for where, text in places.items():
        for value in SECRETS_USED:
            assert value not in text, f"a secret value is in {where}"
