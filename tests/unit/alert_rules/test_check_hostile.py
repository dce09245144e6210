"""``route-monitor check`` on hostile files (issue 15): each class of bad input gives one
bounded error line naming the file (and the object and field when there is one), exit 1, and
never a traceback; a good monitor beside a bad object or a bad document in the same file is
still checked, with either PyYAML loader (libyaml's refuses deep flow nesting, the pure-Python
one runs out of stack); and what ``check`` accepts, ``standalone`` starts (the same target
resolution runs in both).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from alert_rules import durations
from route_monitor.cli.main import main
from route_monitor.files import yamlread
from tests.support import standalone

GOOD = ("apiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {name: good, namespace: shop}\n"
        "spec:\n  target: {url: 'https://good.example'}\n  slo: {availability: '99.9'}\n")


def rm(metadata: str = "{name: bad, namespace: shop}", target: str = "{url: 'https://x.example'}",
       extra: str = "") -> str:
    return (f"apiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {metadata}\n"
            f"spec:\n  target: {target}\n  slo: {{availability: '99.9'}}\n{extra}")


def source(api_version: str, kind: str, name: str, spec: str, annotated: bool = True) -> bytes:
    """An object a monitor's target is read from (annotated, or named by a RouteMonitor)."""
    annotations = ", annotations: {routemonitor.io/slo: '99.9'}" if annotated else ""
    return (f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: {name}, namespace: ns{annotations}}}\n"
            f"spec: {spec}\n").encode()


def nested(depth: int) -> str:
    return rm(extra="  alerting: {labels: " + "[" * depth + "]" * depth + "}\n")


CASES = [
    pytest.param(b"\xff\xfe bad bytes", "not UTF-8 text", id="not-utf8"),
    pytest.param(b"a: !!timestamp 2020-02-31\n", "a value cannot be read", id="timestamp-feb-31"),
    pytest.param(b"a: 2020-99-99\n", "nothing to monitor", id="plain-bad-date"),  # a string, as kubectl reads it
    pytest.param(b"a: !!float abc\n", "a value cannot be read", id="float-abc"),
    pytest.param(b"a: " + b"9" * 5000 + b"\n", "a value cannot be read", id="5000-digit-int"),
    pytest.param(b"a: [\n", "not valid YAML", id="reader-error-one-line"),
    pytest.param(rm(metadata="just-a-string").encode(), "metadata: expected a mapping", id="metadata-scalar"),
    pytest.param(rm(metadata="{name: bad, namespace: 5}").encode(), "metadata.namespace: expected a string",
                 id="namespace-int"),
    pytest.param(rm(metadata="{name: bad, namespace: shop, annotations: 'routemonitor.io/slo: 99'}").encode(),
                 "metadata.annotations: expected a mapping", id="annotations-string"),
    pytest.param(b"kind: List\nitems: [1, two]\n", "items[0]: expected a Kubernetes object", id="list-scalars"),
    pytest.param(b"kind: List\nitems: nope\n", "items: expected a list", id="list-items-scalar"),
    pytest.param(nested(1500).encode(), "", id="nested-1500"),
    pytest.param(rm(extra="  probe: {interval: " + "9" * 5000 + "s}\n").encode(), "spec.probe.interval",
                 id="5000-digit-duration"),
    pytest.param(rm(extra="  probe: {interval: " + "0" * 5000 + "s}\n").encode(), "spec.probe.interval",
                 id="5000-zeros-duration"),
    pytest.param(rm(metadata="{name: a/b, namespace: shop}").encode(), "metadata.name: expected a Kubernetes name",
                 id="slash-in-name"),
    pytest.param(rm(metadata="{name: bad, namespace: 'a]'}").encode(), "metadata.namespace", id="bracket-namespace"),
    pytest.param(rm(target="{url: 'http://x.example:99999/'}").encode(), "port must be a number", id="port-99999"),
    pytest.param(rm(target="{url: 'http://x.example:0/'}").encode(), "port must be a number", id="port-0"),
    pytest.param(rm(target="{url: 'http://[::1/'}").encode(), "not a valid URL", id="broken-ipv6"),
    pytest.param(rm(target="{url: 'http://:80/'}").encode(), "has no host", id="no-host"),
    pytest.param(rm(target="{url: 'http://a b/'}").encode(), "contains a space", id="space-in-host"),
    pytest.param(rm(target="{url: 'http://169.254.169.254/latest'}").encode(), "Forbidden", id="metadata-address"),
    pytest.param(rm(extra="  probe: {bodyRegex: [a, b]}\n").encode(), "spec.probe.bodyRegex: must be a string",
                 id="bodyregex-list"),
    pytest.param(source("route.openshift.io/v1", "Route", "shop", "{host: [1, 2], to: {kind: Service, name: shop}}"),
                 "Route/ns/shop: spec.host: expected a string", id="route-host-list"),
    pytest.param(source("v1", "Service", "pay", "{ports: foo}"), "Service/ns/pay: spec.ports: expected a list",
                 id="service-ports-scalar"),
    pytest.param(source("v1", "Service", "pay", "{ports: [{name: http, port: '80'}]}"),
                 "Service/ns/pay: spec.ports[0].port: expected a port number", id="service-port-string"),
    pytest.param(source("networking.k8s.io/v1", "Ingress", "ing", "{rules: [{host: [a.example]}]}"),
                 "Ingress/ns/ing: spec.rules[0].host: expected a string", id="ingress-host-list"),
    pytest.param(source("gateway.networking.k8s.io/v1", "HTTPRoute", "pay", "{hostnames: pay.example.com, "
                        "parentRefs: [{name: edge}]}"), "HTTPRoute/ns/pay: spec.hostnames: expected a list",
                 id="httproute-hostnames-string"),
    pytest.param((rm(metadata="{name: bad, namespace: ns}", target="{route: {name: shop}}") + "---\n").encode() +
                 source("route.openshift.io/v1", "Route", "shop", "{host: {a: 1}}", annotated=False),
                 "Route/ns/shop: spec.host: expected a string", id="routemonitor-to-route-host-mapping"),
    pytest.param(b"", "nothing to monitor", id="empty-file"),
    pytest.param(b"# only a comment\n", "nothing to monitor", id="comments-only"),
    pytest.param(b"a: 1\n", "nothing to monitor", id="no-kind"),
]


@pytest.fixture(params=sorted(yamlread.LOADERS))
def loader(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each PyYAML loader in turn: libyaml's (when PyYAML has it) and the pure-Python one."""
    monkeypatch.setattr(yamlread, "Loader", yamlread.LOADERS[request.param])
    return str(request.param)


@pytest.mark.usefixtures("loader")
@pytest.mark.parametrize(("content", "expected"), CASES)
def test_check_reports_one_bounded_line(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes,
                                        expected: str) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(content)
    code = main(["check", str(bad)])
    _out, err = capsys.readouterr()
    assert code == (2 if expected == "nothing to monitor" else 1)  # 2: nothing to do
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if ": error: " in line]
    assert errors and all(len(line) <= 1200 for line in errors), err[:3000]
    assert all(str(bad) in line for line in errors), err
    assert expected in err, err
    assert not err.splitlines()[-1].startswith(("0 monitor(s), 0 error(s)", "1 monitor(s), 0 error(s)")), err


@pytest.mark.parametrize(("content", "expected"), [c for c in CASES if c.id in (
    "metadata-scalar", "namespace-int", "annotations-string", "slash-in-name", "port-99999", "broken-ipv6",
    "no-host", "metadata-address", "bodyregex-list", "nested-1500", "route-host-list", "service-ports-scalar",
    "service-port-string", "ingress-host-list", "httproute-hostnames-string", "routemonitor-to-route-host-mapping",
    "reader-error-one-line", "timestamp-feb-31", "float-abc", "5000-digit-int")])
@pytest.mark.usefixtures("loader")
def test_a_bad_object_does_not_hide_a_good_one_beside_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          content: bytes, expected: str) -> None:
    (tmp_path / "both.yaml").write_bytes(GOOD.encode() + b"---\n" + content)
    code = main(["check", str(tmp_path)])
    out, err = capsys.readouterr()
    assert code == 1
    assert "target: https://good.example" in out
    assert err.splitlines()[-1].startswith("1 monitor(s), "), err


@pytest.mark.parametrize(("content", "expected"), [c for c in CASES if c.id in (
    "route-host-list", "service-ports-scalar", "service-port-string", "ingress-host-list",
    "routemonitor-to-route-host-mapping", "metadata-address", "broken-ipv6", "nested-1500", "reader-error-one-line",
    "timestamp-feb-31")])
def test_standalone_starts_with_the_good_monitor_beside_what_check_refused(
        tmp_path: Path, content: bytes, expected: str) -> None:
    (tmp_path / "both.yaml").write_bytes(GOOD.encode() + b"---\n" + content)
    with standalone.started(tmp_path) as lines:
        assert any("monitoring shop/good" in line for line in lines) and expected in "".join(lines), "".join(lines)


def test_leading_zeros_of_a_duration_are_read_not_counted_as_digits() -> None:
    """Python refuses ``int()`` of 4,300+ digits: 5,000 leading zeros once crashed the parser."""
    assert durations.parse_ms("0" * 5000 + "30s") == 30_000
    with pytest.raises(durations.DurationError, match="is zero"):
        durations.parse_ms("0" * 5000 + "s")
