"""Property: any RouteMonitor spec or annotation set gives a monitor or one clear error (issue 15).

Generated from a good RouteMonitor by replacing, deleting or adding fields with hostile values
(any JSON/YAML type, huge numbers, deep nesting, long strings, odd URLs, hosts and ports), and
from annotation sets with any text values:

- the parser returns a :class:`MonitorSpec` or raises :class:`InvalidSpec` naming every invalid
  field of what the user wrote (``metadata...`` or ``spec...``), each in one line of bounded
  length, and all of them in one bounded line: never another exception;
- what the parser accepts, the prober can run (its request builds; a URL target's endpoint
  parses), so ``check`` saying yes means ``standalone`` and the operator run it;
- against the real apiserver (dry-run create with the CRD's schema): ``check``'s schema pass
  (the CRD's own ``openAPIV3Schema`` through ``jsonschema``) accepts exactly what the API
  server accepts, and what the API server refuses ``check`` refuses (it checks more:
  cross-field rules no 1.20 schema can state, fields the API server would drop).
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from alert_rules import fielderrors, names
from alert_rules.model import InvalidSpec
from route_monitor.probe.prober import Endpoint, ProbeRequest
from route_monitor.spec import checked, crdschema
from route_monitor.spec.monitor import MonitorSpec, parse_routemonitor
from route_monitor.targets.annotations import monitor_manifest
from tests.cluster.test_crd import GOOD, api, namespace
from tests.support.cluster import Cluster
from tests.support.fuzzing import examples

MAX_FIELD_ERROR = 850  # field (200) + reason (300) + echoed value (300)

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.integers(-(10**40), 10**40),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=30),
    st.sampled_from(["", "0", "-1", "99.9", "100", "30s", "0s", "1h30m", "9" * 5000 + "s", "abc", "a/b", "GET",
                     "http://:80/", "http://[::1/", "http://host:99999/", "http://host:0/", "http://host:-1/",
                     "http://host:abc/", "http://a b/", "https://user:secret@host/", "http://169.254.169.254/",
                     "http://example.com:65536/", "ftp://x/", "2020-02-31", "/", "/ok", "^(\\w+\\s?)*$", "["]),
)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=10), inner, max_size=4)),
                      max_leaves=12)
PATHS = [
    ("metadata", "name"), ("metadata", "namespace"), ("metadata", "annotations"), ("metadata",),
    ("spec",), ("spec", "target"), ("spec", "target", "url"), ("spec", "target", "route"),
    ("spec", "target", "service"), ("spec", "path"), ("spec", "probe"), ("spec", "probe", "interval"),
    ("spec", "probe", "timeout"), ("spec", "probe", "method"), ("spec", "probe", "expectedStatus"),
    ("spec", "probe", "bodyRegex"), ("spec", "probe", "tls"), ("spec", "probe", "headers"),
    ("spec", "probe", "warmup"), ("spec", "slo"), ("spec", "slo", "availability"), ("spec", "slo", "period"),
    ("spec", "slo", "latency"), ("spec", "alerting"), ("spec", "alerting", "labels"), ("spec", "maintenance"),
    ("spec", "paused"),
]


def base() -> dict[str, Any]:
    obj = copy.deepcopy(GOOD)
    obj["spec"]["target"] = {"url": "https://checkout.example.com/"}
    return obj


def put(obj: dict[str, Any], path: tuple[str, ...], value: Any, delete: bool) -> None:
    node: Any = obj
    for key in path[:-1]:
        if not isinstance(node, dict):
            return
        node = node.setdefault(key, {})
    if isinstance(node, dict):
        if delete:
            node.pop(path[-1], None)
        else:
            node[path[-1]] = value


@st.composite
def routemonitors(draw: st.DrawFn) -> dict[str, Any]:
    obj = base()
    for path in draw(st.lists(st.sampled_from(PATHS), min_size=1, max_size=4)):
        put(obj, path, draw(values), delete=draw(st.integers(0, 5)) == 0)
    return obj


def check_verdict(parse: Any) -> MonitorSpec | None:
    try:
        monitor = parse()
    except InvalidSpec as e:
        message = str(e)
        assert "\n" not in message and len(message) <= fielderrors.MAX_MESSAGE, message[:2000]
        assert 1 <= len(e.errors) <= fielderrors.MAX_ERRORS, message
        for error in e.errors:  # every field error of the object, each on one bounded line
            line = str(error)
            assert error.field.startswith(("metadata", "spec")), line
            assert "\n" not in line and len(line) <= MAX_FIELD_ERROR, line[:2000]
        return None
    assert isinstance(monitor, MonitorSpec)
    runs(monitor)
    return monitor


def runs(monitor: MonitorSpec) -> None:
    """What the parser accepted, the prober can run."""
    url = getattr(monitor.target, "url", "")
    if url:
        Endpoint.parse(url)
        ProbeRequest.build(monitor.key, url, monitor.probe)
    assert "/" not in monitor.name and "/" not in monitor.namespace


hosts = st.one_of(st.sampled_from(["x.example", "[::1]", "127.0.0.1", "", " ", "a b", "[::1", "169.254.169.254",
                                   "metadata.google.internal", "x.example:", "@", "u:p@x.example"]),
                  st.text(max_size=12))
ports = st.one_of(st.just(""), st.builds(lambda p: f":{p}", st.one_of(st.integers(-5, 70_000), st.text(max_size=5))))
urls = st.builds(lambda scheme, host, port, path: f"{scheme}://{host}{port}{path}",
                 st.sampled_from(["http", "https", "HTTP", "ftp"]), hosts, ports,
                 st.sampled_from(["", "/", "/a b", "/?q=1", "#f", "/%zz"]))
k8s_names = st.one_of(st.text(max_size=12), st.sampled_from(["a/b", "A", "a]", "-a", "a" * 300, "a.b", "ok"]),
                      st.integers(), st.none())


@settings(max_examples=examples(300))
@given(url=urls, name=k8s_names, namespace=k8s_names)
def test_any_url_and_names_parse_or_name_a_field(url: str, name: Any, namespace: Any) -> None:
    obj = base()
    obj["metadata"] = {"name": name, "namespace": namespace}
    obj["spec"]["target"] = {"url": url}
    check_verdict(lambda: parse_routemonitor(obj))


@settings(max_examples=examples(400))
@given(obj=routemonitors())
def test_any_routemonitor_parses_or_names_a_field(obj: dict[str, Any]) -> None:
    check_verdict(lambda: parse_routemonitor(obj))


ANNOTATIONS = [names.ANN_SLO, names.ANN_PATH, names.ANN_INTERVAL, names.ANN_LATENCY_THRESHOLD,
               names.ANN_LATENCY_SLO, names.ANN_PORT, names.ANN_MAINTENANCE, names.ANN_PAUSED]
annotation_text = st.one_of(st.text(max_size=40), scalars.map(lambda v: v if isinstance(v, str) else json.dumps(v)))


@settings(max_examples=examples(300))
@given(ann=st.dictionaries(st.sampled_from(ANNOTATIONS), annotation_text, max_size=6),
       kind=st.sampled_from(["route", "service"]))
def test_any_annotations_give_a_monitor_or_name_an_annotation(ann: dict[str, str], kind: str) -> None:
    obj = {"metadata": {"name": "shop", "namespace": "ns", "annotations": {names.ANN_SLO: "99.9", **ann}}}
    check_verdict(lambda: parse_routemonitor(monitor_manifest(obj, kind)))  # type: ignore[arg-type]


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.floats(allow_nan=False, allow_infinity=False),
              scalars.filter(lambda v: isinstance(v, str))),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8)


@st.composite
def json_routemonitors(draw: st.DrawFn) -> dict[str, Any]:
    obj = base()
    obj["metadata"]["name"] = "fuzz"
    for path in draw(st.lists(st.sampled_from([p for p in PATHS if p[0] == "spec" and len(p) > 1]),
                              min_size=1, max_size=3)):
        put(obj, path, draw(json_values), delete=draw(st.integers(0, 5)) == 0)
    return obj


@pytest.fixture(scope="module")
def fuzz_ns(cluster: Cluster) -> str:
    return namespace(cluster, "crd-fuzz")


@pytest.mark.cluster
@settings(max_examples=examples(150))
@given(obj=json_routemonitors())
def test_check_refuses_exactly_what_the_api_server_refuses(cluster: Cluster, fuzz_ns: str, obj: dict[str, Any]) -> None:
    """The CRD's schema as ``check`` applies it agrees with the API server on every generated
    manifest; and what the API server refuses, ``check`` refuses as a whole (schema, unknown
    fields, parser) with every field error in one bounded line."""
    obj = {**obj, "metadata": {**obj["metadata"], "namespace": fuzz_ns}}
    r = api(cluster, "POST", f"/apis/routemonitor.io/v1alpha1/namespaces/{fuzz_ns}/routemonitors?dryRun=All", obj)
    assert r.status_code in (201, 422, 400), r.text
    accepted = r.status_code == 201
    refused_by_schema = [str(e) for e in crdschema.schema_errors(obj)]
    event(f"apiserver {'accepts' if accepted else 'refuses'}")
    assert accepted == (not refused_by_schema), (r.json().get("message") if not accepted else "accepted",
                                                 refused_by_schema)
    verdict = check_verdict(lambda: checked.routemonitor(obj))
    if not accepted:
        assert verdict is None, f"the apiserver refused what check accepts: {r.json().get('message')}"
