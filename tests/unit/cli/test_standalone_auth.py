"""Contract 8 without a cluster: references name folders (``dir``), URLs never carry credentials.

Covers: ``check`` accepts a monitor whose ``dir`` references exist and reports a missing file
naming the manifest, the object and the field (exit 1), and a ``name`` reference as cluster-only;
a URL with user info refused by ``check`` pointing to ``spec.probe.auth``, the password never
printed; a port outside 1-65535 refused at validation; ``--service-url`` with user info refused;
``standalone`` probing a basic-auth target with the password from a file, and a rotation of
that file picked up without a restart, the password never on stderr or ``/metrics``.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest

from route_monitor.cli.commands import check
from route_monitor.cli.main import build_parser
from route_monitor.files.fileplan import parse_service_urls
from tests.support.authtargets import AuthTarget
from tests.support.net import wait_for
from tests.support.standalone import routemonitor
from tests.unit.cli.test_standalone import Proc

pytestmark = pytest.mark.timeout(60)
PASSWORD = "hunter2-Very-Secret"


def manifest(url: str, probe: str = "") -> str:
    return routemonitor("checkout", url, probe=f"interval: 1s, timeout: 500ms{probe}")


AUTH = ", auth: {basic: {secretRef: {dir: creds/checkout}}}"


def run_check(*paths: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = check.run(build_parser().parse_args(["check", *map(str, paths)]), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def write_creds(folder: Path, password: str) -> None:
    creds = folder / "creds" / "checkout"
    creds.mkdir(parents=True, exist_ok=True)
    (creds / "username").write_text("probe\n")
    (creds / "password").write_text(password + "\n")


def test_check_accepts_existing_folders_and_names_a_missing_file(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(manifest("https://checkout.example/health", AUTH))
    code, _, err = run_check(tmp_path / "m.yaml")
    assert code == 1
    assert f"{tmp_path / 'm.yaml'}:6: error: RouteMonitor/shop/checkout: spec.probe.auth.basic.secretRef.dir: " \
           f"SecretNotFound: {tmp_path / 'creds/checkout/username'}: no such file" in err
    write_creds(tmp_path, PASSWORD)
    code, _, err = run_check(tmp_path / "m.yaml")
    assert code == 0, err
    assert PASSWORD not in err


def test_check_refuses_cluster_references(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(manifest("https://checkout.example/", ", tls: {caRef: {configMap: {name: ca}}}"))
    code, _, err = run_check(tmp_path / "m.yaml")
    assert code == 1
    assert "spec.probe.tls.caRef.configMap.name: InvalidReference: ConfigMap ca: standalone reads references " \
           "from folders: set dir" in err


@pytest.mark.parametrize(("url", "says"), [
    pytest.param(f"https://probe:{PASSWORD}@checkout.example/", "set spec.probe.auth", id="user-and-password"),
    pytest.param(f"https://{PASSWORD}@checkout.example/", "set spec.probe.auth", id="token-as-user"),
    pytest.param("https://checkout.example:0/", "from 1 to 65535", id="port-0"),
    pytest.param("https://checkout.example:70000/", "from 1 to 65535", id="port-too-big"),
])
def test_check_refuses_credentials_in_urls_and_bad_ports(tmp_path: Path, url: str, says: str) -> None:
    (tmp_path / "m.yaml").write_text(manifest(url))
    code, out, err = run_check(tmp_path / "m.yaml")
    assert code == 1
    assert "spec.target.url" in err and says in err
    assert PASSWORD not in out + err


def test_service_url_with_credentials_is_refused() -> None:
    with pytest.raises(ValueError) as e:
        parse_service_urls([f"shop/payments=http://u:{PASSWORD}@127.0.0.1:8080"])
    assert "spec.probe.auth" in str(e.value) and PASSWORD not in str(e.value)


def basic(password: str) -> str:
    return "Basic " + base64.b64encode(f"probe:{password}".encode()).decode()


def test_standalone_reads_the_password_from_a_file_and_follows_its_rotation(
        tmp_path: Path, started: list[AuthTarget]) -> None:
    target = AuthTarget(authorization=basic(PASSWORD))
    started.append(target)
    folder = tmp_path / "manifests"
    folder.mkdir()
    write_creds(folder, PASSWORD)
    (folder / "m.yaml").write_text(manifest(target.url() + "/health", AUTH))
    proc = Proc(folder)
    try:
        def count(result: str) -> float:
            return proc.value("route_monitor_probes_total", namespace="shop", monitor="checkout", result=result) or 0

        wait_for(lambda: count("success") >= 1, timeout=20, what="an authenticated probe")
        rotated = PASSWORD + "-rotated"
        target.expected = basic(rotated)
        wait_for(lambda: (proc.value("route_monitor_probe_failures_total", namespace="shop", monitor="checkout",
                                     reason="http_status") or 0) >= 1, timeout=20, what="401s before the rotation")
        write_creds(folder, rotated)
        before = count("success")
        wait_for(lambda: count("success") > before, timeout=20, what="success after the password file changed")
        with_rotated = [s for s in target.seen if s.headers.get("Authorization") == basic(rotated)]
        assert with_rotated, "the rotated password was never sent"
        text = proc.samples().__repr__()
    finally:
        assert proc.stop() == 0
    for secret in (PASSWORD, base64.b64encode(f"probe:{PASSWORD}".encode()).decode()):
        assert secret not in proc.stderr and secret not in text
