"""URL targets are opt-in at the operator level (the README, Standalone: link-local and metadata addresses), and some addresses are
never probed whatever the settings: with ``--allow-url-targets`` a RouteMonitor with a ``url``
target on loopback is probed; a link-local (cloud metadata) URL is still refused, with a
``Forbidden`` condition. Also: a spec the schema accepts but the operator does not (timeout
longer than the interval) is reported as ``InvalidSpec`` in every condition, nothing probed;
with several such fields, the condition and the Warning event name every one of them.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

import pytest
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from alert_rules import names
from tests.support.cluster import Cluster
from tests.support.net import wait_for
from tests.support.operator import (
    Operator,
    Target,
    admin_client,
    condition,
    running_operator,
    wait_monitor,
    warnings_for,
)
from tests.support.resources import RouteMonitor

pytestmark = pytest.mark.cluster
NS = "url-targets"


@pytest.fixture(scope="module")
def kube(cluster: Cluster) -> Client:
    client = admin_client(cluster)
    client.create(Namespace(metadata=ObjectMeta(name=NS)))
    return client


@pytest.fixture(scope="module")
def operator(cluster: Cluster, kube: Client, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    with running_operator(cluster, tmp_path_factory.mktemp("operator"), "--allow-url-targets",
                          "--namespace", NS) as op:
        yield op


def monitor(name: str, spec: dict[str, Any]) -> Any:
    return RouteMonitor.from_dict({"apiVersion": names.API_VERSION, "kind": names.KIND,
                                   "metadata": {"name": name, "namespace": NS},
                                   "spec": {"slo": {"availability": "99.9"}, **spec}})


def test_url_target_is_probed_when_allowed(kube: Client, operator: Operator) -> None:
    target = Target()
    try:
        kube.create(monitor("plain-url", {"target": {"url": f"http://{target.host}/status"},
                                          "probe": {"interval": "1s"}}))
        m = wait_monitor(kube, NS, "plain-url", lambda m: condition(m, "Ready").get("status") == "True", "Ready")
        assert m["status"]["url"] == f"http://{target.host}/status"
        wait_for(lambda: target.count("/status") >= 1, timeout=10, what="the URL to be probed")
    finally:
        target.close()


@pytest.mark.parametrize("url", [
    pytest.param("http://169.254.169.254/latest/meta-data/", id="aws-metadata"),
    pytest.param("http://metadata.google.internal/computeMetadata/v1/", id="gcp-metadata-name"),
    pytest.param("http://[fe80::1]:8080/", id="ipv6-link-local"),
])
def test_metadata_and_link_local_urls_are_refused_even_when_allowed(kube: Client, operator: Operator,
                                                                    url: str) -> None:
    name = f"refused-{zlib.crc32(url.encode()) % 10_000}"
    kube.create(monitor(name, {"target": {"url": url}}))
    m = wait_monitor(kube, NS, name, lambda m: condition(m, "TargetResolved").get("status") == "False",
                     "TargetResolved=False")
    assert condition(m, "TargetResolved")["reason"] == "Forbidden"
    assert condition(m, "Probing")["status"] == "False"


def test_spec_the_operator_rejects_is_reported_in_conditions(kube: Client, operator: Operator) -> None:
    kube.create(monitor("too-slow", {"target": {"url": "http://127.0.0.1:9/"},
                                     "probe": {"interval": "10s", "timeout": "20s"}}))
    m = wait_monitor(kube, NS, "too-slow", lambda m: condition(m, "Ready").get("reason") == "InvalidSpec",
                     "Ready=False/InvalidSpec")
    assert {c["type"]: (c["status"], c["reason"]) for c in m["status"]["conditions"]} == {
        t: ("False", "InvalidSpec") for t in ("Ready", "TargetResolved", "Probing", "RulesApplied")}
    assert "spec.probe.timeout" in condition(m, "Ready")["message"]
    assert operator.sample(names.MONITORS, state="invalid") == 1


def test_every_invalid_field_is_named_in_the_condition_and_the_event(kube: Client, operator: Operator) -> None:
    """Fields the CRD schema accepts and the operator does not, all in one object."""
    kube.create(monitor("many-bad", {
        "target": {"url": "http://127.0.0.1:99999/"},
        "probe": {"interval": "500ms", "expectedStatus": ["599-200"], "bodyRegex": "("},
        "maintenance": [{"schedule": "0 2 * * SUN", "duration": "2h", "timeZone": "Mars/Olympus"}]}))
    m = wait_monitor(kube, NS, "many-bad", lambda m: condition(m, "Ready").get("reason") == "InvalidSpec",
                     "Ready=False/InvalidSpec")
    fields = ("spec.target.url", "spec.probe.interval", "spec.probe.expectedStatus[0]", "spec.probe.bodyRegex",
              "spec.maintenance[0].timeZone")
    message = condition(m, "Ready")["message"]
    assert message.startswith("5 field errors: ") and all(f in message for f in fields), message
    wait_for(lambda: warnings_for(kube, NS, "RouteMonitor", "many-bad", "InvalidSpec"), timeout=20,
             what="a Warning event on the RouteMonitor")
    [event] = warnings_for(kube, NS, "RouteMonitor", "many-bad", "InvalidSpec")
    assert all(f in event for f in fields) and len(event) <= 1024, event
