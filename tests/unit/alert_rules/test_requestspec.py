"""Parsing Contract 8's ``spec.probe`` request settings, and URLs that must never be probed as written.

Covers: defaults (no headers, no auth, default keys of each reference); every reference the
monitor reads, in order; errors naming the field (two auths, a reference with both or neither
of name and dir, a bad key, a bad serverName, a CA from two places); ``Authorization`` and
``Host`` refused in headers, pointing to ``auth`` and ``serverName`` (the Authorization value is
never echoed); a header name or value the prober could not send (a control character other than
a tab) refused naming the header, also by ``route-monitor check``; user info in a URL target refused pointing to ``spec.probe.auth`` without the
password; ports outside 1-65535 refused in URL targets, Service ports and annotations; a
Route host carrying user info or a bad port does not resolve.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from alert_rules import names
from alert_rules.model import InvalidSpec
from route_monitor.spec.monitor import parse_routemonitor
from route_monitor.spec.request import BasicAuth, BearerAuth, ObjectRef, RequestOptions, parse_request
from route_monitor.targets.annotations import monitor_spec
from route_monitor.targets.resolve import TargetError, resolve_route

PASSWORD = "pa55-W0rd-secret"


def rm(target: dict[str, Any] | None = None, probe: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": "m", "namespace": "shop"},
            "spec": {"target": target or {"route": {"name": "checkout"}}, "slo": {"availability": "99.9"},
                     "probe": probe or {}}}


def test_defaults_and_references() -> None:
    assert parse_request({}) == RequestOptions()
    opts = parse_request({
        "headers": {"x-b": "2", "X-A": "1"},
        "auth": {"basic": {"secretRef": {"name": "creds"}}},
        "tls": {"serverName": "Checkout.Internal", "caRef": {"secret": {"name": "ca"}},
                "clientCertRef": {"secret": {"name": "client"}}},
    })
    assert opts.headers == (("X-A", "1"), ("x-b", "2"))
    assert opts.server_name == "checkout.internal"
    assert isinstance(opts.auth, BasicAuth)
    assert [(r.ref, r.key) for r in opts.references()] == [
        (ObjectRef("secret", "creds"), "username"), (ObjectRef("secret", "creds"), "password"),
        (ObjectRef("secret", "ca"), "ca.crt"), (ObjectRef("secret", "client"), "tls.crt"),
        (ObjectRef("secret", "client"), "tls.key")]
    bearer = parse_request({"auth": {"bearer": {"secretRef": {"dir": "tokens"}}}}).auth
    assert isinstance(bearer, BearerAuth) and (bearer.token.ref.dir, bearer.token.key) == ("tokens", "token")


@pytest.mark.parametrize(("probe", "field"), [
    pytest.param({"auth": {"basic": {"secretRef": {"name": "a"}}, "bearer": {"secretRef": {"name": "b"}}}},
                 "spec.probe.auth", id="two-auths"),
    pytest.param({"auth": {"basic": {"secretRef": {"name": "a", "dir": "b"}}}}, "spec.probe.auth.basic.secretRef",
                 id="name-and-dir"),
    pytest.param({"auth": {"bearer": {"secretRef": {}}}}, "spec.probe.auth.bearer.secretRef", id="neither"),
    pytest.param({"auth": {"bearer": {"secretRef": {"name": "Not_A_Name"}}}}, "spec.probe.auth.bearer.secretRef.name",
                 id="bad-name"),
    pytest.param({"auth": {"bearer": {"secretRef": {"name": "a", "key": "a/b"}}}},
                 "spec.probe.auth.bearer.secretRef.key", id="bad-key"),
    pytest.param({"tls": {"serverName": "not a name"}}, "spec.probe.tls.serverName", id="bad-server-name"),
    pytest.param({"tls": {"caRef": {"configMap": {"name": "a"}, "secret": {"name": "b"}}}}, "spec.probe.tls.caRef",
                 id="ca-from-two-places"),
    pytest.param({"tls": {"clientCertRef": {}}}, "spec.probe.tls.clientCertRef.secret", id="client-cert-without-secret"),
    pytest.param({"headers": {"X-Bad": "a\r\nInjected: 1"}}, "spec.probe.headers.X-Bad", id="header-injection"),
    pytest.param({"headers": {"Bad Name": "x"}}, "spec.probe.headers", id="bad-header-name"),
    pytest.param({"headers": {"Host": "x"}}, "spec.probe.headers.Host", id="host-header"),
    pytest.param({"headers": {"X-Ctl": "a\x01b"}}, "spec.probe.headers.X-Ctl", id="control-character-in-value"),
    pytest.param({"headers": {"X-Esc": "\x1b[31mred"}}, "spec.probe.headers.X-Esc", id="escape-in-value"),
    pytest.param({"headers": {"X-Vt": "a\x0bb"}}, "spec.probe.headers.X-Vt", id="vertical-tab-in-value"),
    pytest.param({"headers": {"X-Del": "a\x7f"}}, "spec.probe.headers.X-Del", id="DEL-in-value"),
    pytest.param({"headers": {"X-Name\n": "x"}}, "spec.probe.headers", id="newline-after-header-name"),
    pytest.param({"headers": {"X-Caf\u00e9": "x"}}, "spec.probe.headers", id="non-ascii-header-name"),
])
def test_errors_name_the_field(probe: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidSpec) as e:
        parse_routemonitor(rm(probe=probe))
    assert e.value.field == field


def test_a_header_the_prober_could_not_send_is_refused_naming_it_and_what_is_accepted() -> None:
    with pytest.raises(InvalidSpec) as e:
        parse_request({"headers": {"X-Ok": "fine", "X-Ctl": "a\x01b", "X-Del": "b\x7f"}})
    assert [err.field for err in e.value.errors] == ["spec.probe.headers.X-Ctl", "spec.probe.headers.X-Del"]
    assert "without control characters (a tab is allowed)" in str(e.value)


@pytest.mark.parametrize("value", ["a\tb", "caf\u00e9", "  padded  ", ""])
def test_values_http_allows_are_accepted(value: str) -> None:
    assert parse_request({"headers": {"X-V": value}}).headers == (("X-V", value),)


def test_check_refuses_a_control_character_in_a_header_value_naming_the_header(tmp_path: Path) -> None:
    manifest = tmp_path / "monitors.yaml"
    manifest.write_text(
        "apiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {name: shop, namespace: ns}\n"
        "spec:\n  target: {url: 'https://shop.example/health'}\n  slo: {availability: '99.9'}\n"
        '  probe:\n    headers: {X-Tenant: "a\\x01b", X-Tab: "a\\tb"}\n')
    proc = subprocess.run([str(Path(sys.executable).parent / "route-monitor"), "check", str(manifest)],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    errors = [line for line in proc.stderr.splitlines() if ": error: " in line]
    assert len(errors) == 1 and "spec.probe.headers.X-Tenant" in errors[0], proc.stderr
    assert "without control characters" in errors[0] and "Traceback" not in proc.stderr


def test_authorization_header_is_refused_pointing_to_auth_without_echoing_it() -> None:
    with pytest.raises(InvalidSpec) as e:
        parse_routemonitor(rm(probe={"headers": {"authorization": f"Bearer {PASSWORD}"}}))
    assert "spec.probe.auth" in str(e.value) and PASSWORD not in str(e.value)
    with pytest.raises(InvalidSpec) as host:
        parse_routemonitor(rm(probe={"headers": {"Host": "x"}}))
    assert "spec.probe.tls.serverName" in str(host.value)


@pytest.mark.parametrize("url", [f"https://probe:{PASSWORD}@checkout.example/", f"http://{PASSWORD}@127.0.0.1:80/",
                                 f"https://a@b:{PASSWORD}@checkout.example/x"])
def test_url_with_user_info_is_refused_without_the_password(url: str) -> None:
    with pytest.raises(InvalidSpec) as e:
        parse_routemonitor(rm(target={"url": url}))
    assert e.value.field == "spec.target.url"
    assert "spec.probe.auth" in str(e.value) and PASSWORD not in str(e.value)


@pytest.mark.parametrize(("target", "field"), [
    pytest.param({"url": "http://checkout.example:0/"}, "spec.target.url", id="url-port-0"),
    pytest.param({"url": "http://checkout.example:65536/"}, "spec.target.url", id="url-port-65536"),
    pytest.param({"service": {"name": "a", "port": 0}}, "spec.target.service.port", id="service-port-0"),
    pytest.param({"service": {"name": "a", "port": "70000"}}, "spec.target.service.port", id="service-port-70000"),
])
def test_ports_outside_1_65535_are_refused(target: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidSpec) as e:
        parse_routemonitor(rm(target=target))
    assert e.value.field == field and "65535" in e.value.reason


def test_port_annotation_out_of_range_names_the_annotation() -> None:
    service = {"kind": "Service", "metadata": {"name": "pay", "namespace": "shop",
                                              "annotations": {names.ANN_SLO: "99.9", names.ANN_PORT: "99999"}}}
    with pytest.raises(InvalidSpec) as e:
        monitor_spec(service, "service")
    assert e.value.field == f"metadata.annotations[{names.ANN_PORT}]"


@pytest.mark.parametrize(("host", "says"), [
    pytest.param(f"probe:{PASSWORD}@checkout.example", "spec.probe.auth", id="user-info-in-route-host"),
    pytest.param("checkout.example:99999", "65535", id="route-port-out-of-range"),
])
def test_route_hosts_that_would_carry_credentials_or_bad_ports_do_not_resolve(host: str, says: str) -> None:
    with pytest.raises(TargetError) as e:
        resolve_route({"metadata": {"name": "r"}, "spec": {"host": host}}, None)
    assert e.value.reason == "InvalidURL" and says in e.value.message and PASSWORD not in e.value.message
