"""Probing what users really run (Contract 8), against real HTTPS servers made with trustme.

Covers: basic and bearer auth (and a wrong password is ``http_status`` 401; a basic password
may hold control characters, a bearer token may not: ``InvalidSecret`` without the value); plain
headers (a User-Agent of one's own, a tab inside a value); a private CA from ``tls.caRef`` (without it the certificate is
invalid); ``tls.serverName`` as SNI, verified name and Host; mutual TLS (accepted with the
right client certificate; refused without one or with one from another CA: ``tls_error``
saying the server refused the client certificate); credentials never sent to another origin
after a redirect; a redirect to a URL with user info followed without them and never shown;
one SSL context per distinct (CA, client certificate, verify), shared; no secret in ``repr``.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping

import pytest

from route_monitor.probe.prober import Prober
from route_monitor.probe.result import FailureReason as R
from route_monitor.probe.result import ProbeResult
from route_monitor.spec.monitor import ProbeSettings
from route_monitor.spec.request import KeyRef, parse_request
from route_monitor.targets import credentials as creds_mod
from route_monitor.targets.credentials import CredentialError, Credentials
from tests.support.authtargets import AuthTarget, PrivateCA

pytestmark = pytest.mark.timeout(30)
PASSWORD = "s3cr3t-Pa55word"
TOKEN = "tok-0123456789abcdef"


@pytest.fixture(scope="module")
def company_ca() -> PrivateCA:
    return PrivateCA()


@pytest.fixture(scope="module")
def client_ca() -> PrivateCA:
    return PrivateCA()


def target(started: list[AuthTarget], **kw: object) -> AuthTarget:
    t = AuthTarget(**kw)  # type: ignore[arg-type]
    started.append(t)
    return t


def build(probe: Mapping[str, object], values: Mapping[str, bytes]) -> tuple[ProbeSettings, Credentials | None]:
    """Settings from a ``spec.probe`` mapping, credentials read from ``values`` ("name/key" -> bytes)."""
    options = parse_request(probe)

    def read(ref: KeyRef) -> bytes:
        found = values.get(f"{ref.ref.name}/{ref.key}")
        if found is None:
            raise CredentialError("SecretNotFound", f"{ref.ref.describe()} has no key {ref.key}")
        return found

    insecure = bool((probe.get("tls") or {}).get("insecureSkipVerify"))  # type: ignore[attr-defined]
    return (ProbeSettings(timeout_ms=3000, interval_ms=5000, insecure_skip_verify=insecure, request=options),
            creds_mod.build(options, read))


async def probe(url: str, settings: ProbeSettings, credentials: Credentials | None,
                prober: Prober | None = None) -> ProbeResult:
    prober = prober or Prober()
    return await prober.probe(prober.request(("ns", "m"), url, settings, credentials))


BASIC = {"auth": {"basic": {"secretRef": {"name": "creds"}}}}
BASIC_VALUES = {"creds/username": b"probe", "creds/password": PASSWORD.encode() + b"\n"}


async def test_basic_auth_is_sent(started: list[AuthTarget]) -> None:
    expected = "Basic " + base64.b64encode(f"probe:{PASSWORD}".encode()).decode()
    t = target(started, authorization=expected)
    result = await probe(t.url(), *build(BASIC, BASIC_VALUES))
    assert result.success, result.detail
    assert t.seen[-1].headers["Authorization"] == expected


async def test_wrong_password_is_an_http_status_failure(started: list[AuthTarget]) -> None:
    t = target(started, authorization="Basic " + base64.b64encode(b"probe:other").decode())
    result = await probe(t.url(), *build(BASIC, BASIC_VALUES))
    assert (result.success, result.reason, result.status_code) == (False, R.HTTP_STATUS, 401)
    assert PASSWORD not in result.detail


async def test_bearer_token_is_sent(started: list[AuthTarget]) -> None:
    t = target(started, authorization=f"Bearer {TOKEN}")
    result = await probe(t.url(), *build({"auth": {"bearer": {"secretRef": {"name": "tok", "key": "t"}}}},
                                         {"tok/t": TOKEN.encode() + b"\n"}))
    assert result.success, result.detail


async def test_plain_headers_are_sent_and_may_replace_the_user_agent(started: list[AuthTarget]) -> None:
    t = target(started)
    result = await probe(t.url(), *build({"headers": {"X-Probe": "route-monitor", "User-Agent": "mine/1"}}, {}))
    assert result.success
    assert (t.seen[-1].headers["X-Probe"], t.seen[-1].headers["User-Agent"]) == ("route-monitor", "mine/1")


async def test_a_basic_password_may_hold_control_characters_it_is_sent_encoded(started: list[AuthTarget]) -> None:
    t = target(started, authorization="Basic " + base64.b64encode(b"probe:two\x01\ttabs").decode())
    result = await probe(t.url(), *build(BASIC, {"creds/username": b"probe", "creds/password": b"two\x01\ttabs"}))
    assert result.success, result.detail


async def test_a_tab_inside_a_header_value_is_sent(started: list[AuthTarget]) -> None:
    t = target(started)
    result = await probe(t.url(), *build({"headers": {"X-Probe": "a\tb"}}, {}))
    assert result.success, result.detail
    assert t.seen[-1].headers["X-Probe"] == "a\tb"


CA = {"tls": {"caRef": {"configMap": {"name": "ca", "key": "ca.crt"}}}}


async def test_private_ca_from_ca_ref_is_trusted(started: list[AuthTarget], company_ca: PrivateCA) -> None:
    t = target(started, tls=company_ca.server_context())
    assert (await probe(t.url(), *build(CA, {"ca/ca.crt": company_ca.pem}))).success
    without = await probe(t.url(), *build({}, {}))
    assert without.reason is R.CERTIFICATE_INVALID


async def test_server_name_is_sni_verified_name_and_host(started: list[AuthTarget], company_ca: PrivateCA) -> None:
    t = target(started, tls=company_ca.server_context("checkout.internal"))
    probe_spec = {"tls": {**CA["tls"], "serverName": "checkout.internal"}}
    result = await probe(t.url(), *build(probe_spec, {"ca/ca.crt": company_ca.pem}))
    assert result.success, result.detail
    assert t.seen[-1].sni == "checkout.internal"
    assert t.seen[-1].headers["Host"] == f"checkout.internal:{t.port}"
    # the same server probed by its address only: the certificate does not name it
    assert (await probe(t.url(), *build(CA, {"ca/ca.crt": company_ca.pem}))).reason is R.CERTIFICATE_INVALID


MTLS = {"tls": {**CA["tls"], "clientCertRef": {"secret": {"name": "probe-client"}}}}


def mtls_values(company_ca: PrivateCA, issuer: PrivateCA) -> dict[str, bytes]:
    cert, key = issuer.client_pair()
    return {"ca/ca.crt": company_ca.pem, "probe-client/tls.crt": cert, "probe-client/tls.key": key}


async def test_mutual_tls_with_the_right_client_certificate(started: list[AuthTarget], company_ca: PrivateCA,
                                                           client_ca: PrivateCA) -> None:
    t = target(started, tls=company_ca.server_context(client_ca=client_ca))
    result = await probe(t.url(), *build(MTLS, mtls_values(company_ca, client_ca)))
    assert result.success, result.detail


@pytest.mark.parametrize("client", ["none", "other-ca"])
async def test_refused_client_certificate_is_a_tls_error_saying_so(
        started: list[AuthTarget], company_ca: PrivateCA, client_ca: PrivateCA, client: str) -> None:
    t = target(started, tls=company_ca.server_context(client_ca=client_ca))
    if client == "none":
        settings, credentials = build(CA, {"ca/ca.crt": company_ca.pem})
    else:
        settings, credentials = build(MTLS, mtls_values(company_ca, PrivateCA()))
    result = await probe(t.url(), settings, credentials)
    assert (result.success, result.reason) == (False, R.TLS_ERROR), result.detail
    assert "the server refused the client certificate" in result.detail
    assert ("none is configured" in result.detail) is (client == "none")


async def test_credentials_go_to_the_first_origin_only(started: list[AuthTarget]) -> None:
    other = target(started)
    first = target(started, location=other.url() + "/landing")
    result = await probe(first.url(), *build({**BASIC, "headers": {"X-Probe": "yes"}}, BASIC_VALUES))
    assert result.success
    assert "Authorization" in first.seen[-1].headers
    assert "Authorization" not in other.seen[-1].headers
    assert other.seen[-1].headers["X-Probe"] == "yes"


async def test_redirect_to_url_with_credentials_is_followed_without_them(started: list[AuthTarget]) -> None:
    final = target(started)
    hop = target(started, location=f"http://admin:{PASSWORD}@127.0.0.1:{final.port}/in")
    assert (await probe(hop.url(), *build({}, {}))).success
    assert final.seen[-1].path == "/in" and "Authorization" not in final.seen[-1].headers
    loop = target(started, location=f"http://admin:{PASSWORD}@127.0.0.1:1/")
    loop.location = f"http://admin:{PASSWORD}@127.0.0.1:{loop.port}/again"
    result = await probe(loop.url(), *build({}, {}))
    assert result.reason is R.TOO_MANY_REDIRECTS
    assert PASSWORD not in result.detail and "***@127.0.0.1" in result.detail


async def test_ssl_contexts_are_shared_per_combination(company_ca: PrivateCA, client_ca: PrivateCA) -> None:
    prober = Prober()
    values = mtls_values(company_ca, client_ca)
    requests = [prober.request(("ns", f"m{i}"), "https://127.0.0.1:1/", *build(MTLS, values)) for i in range(50)]
    assert prober.contexts.builds == 1
    assert len({id(r.ssl_context) for r in requests}) == 1
    insecure = build({"tls": {**MTLS["tls"], "insecureSkipVerify": True}}, values)
    other_ca = build(CA, {"ca/ca.crt": PrivateCA().pem})
    more = [prober.request(("ns", "x"), "https://127.0.0.1:1/", *insecure),
            prober.request(("ns", "y"), "https://127.0.0.1:1/", *other_ca)]
    assert prober.contexts.builds == 3
    assert prober.request(("ns", "z"), "https://127.0.0.1:1/", *build({}, {})).ssl_context is None
    del requests, more


def test_no_secret_in_any_repr(company_ca: PrivateCA, client_ca: PrivateCA) -> None:
    values = {**BASIC_VALUES, **mtls_values(company_ca, client_ca)}
    settings, credentials = build({**BASIC, **MTLS}, values)
    request = Prober().request(("ns", "m"), "https://127.0.0.1:1/", settings, credentials)
    key_pem = values["probe-client/tls.key"].decode()
    text = " ".join(map(repr, (settings, credentials, request)))
    assert "Credentials(authorization, ca, client certificate)" in text
    encoded = base64.b64encode(f"probe:{PASSWORD}".encode()).decode()
    for secret in (PASSWORD, encoded, key_pem.splitlines()[1]):
        assert secret not in text


@pytest.mark.parametrize(("probe_spec", "values", "reason", "says"), [
    pytest.param(BASIC, {"creds/username": b"probe"}, "SecretNotFound", "has no key password", id="missing-key"),
    pytest.param(BASIC, {"creds/username": b"a:b", "creds/password": b"x"}, "InvalidSecret", "cannot contain ':'",
                 id="colon-in-user"),
    pytest.param(BASIC, {"creds/username": b"u", "creds/password": b"two\nlines"}, "InvalidSecret", "one non-empty line",
                 id="multi-line-password"),
    pytest.param({"auth": {"bearer": {"secretRef": {"name": "tok"}}}}, {"tok/token": b"two\x01\x1b[0m"},
                 "InvalidSecret", "without control characters", id="control-character-in-bearer-token"),
    pytest.param(CA, {"ca/ca.crt": b"not a certificate"}, "InvalidCertificate", "no PEM certificate", id="garbage-ca"),
    pytest.param(MTLS, "mismatched", "InvalidCertificate", "does not match", id="key-of-another-certificate"),
    pytest.param(MTLS, "encrypted", "InvalidCertificate", "encrypted private keys", id="encrypted-key"),
])
def test_unusable_references_are_reported_without_values(company_ca: PrivateCA, client_ca: PrivateCA,
                                                         probe_spec: Mapping[str, object], values: object,
                                                         reason: str, says: str) -> None:
    if values in ("mismatched", "encrypted"):
        v = mtls_values(company_ca, client_ca)
        if values == "mismatched":
            v["probe-client/tls.key"] = client_ca.client_pair("someone-else")[1]
        else:
            from cryptography.hazmat.primitives import serialization
            key = serialization.load_pem_private_key(v["probe-client/tls.key"], None)
            v["probe-client/tls.key"] = key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                serialization.BestAvailableEncryption(b"pass"))
        values = v
    with pytest.raises(CredentialError) as err:
        build(probe_spec, values)  # type: ignore[arg-type]
    assert err.value.reason == reason and says in err.value.message
    assert "two" not in err.value.message and "BEGIN" not in err.value.message
