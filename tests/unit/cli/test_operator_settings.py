"""``route-monitor operator`` flags reach the operator's settings (the parser is the boundary):

- ``--cluster-domain`` sets the DNS domain of Service targets;
- the member name is ``--member-name``, else ``$POD_NAME``; neither: one replica without a Lease;
- the Lease namespace is ``--lease-namespace``, else ``$POD_NAMESPACE``, else ``route-monitor``.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from route_monitor.cli.commands.operator import settings_from_args
from route_monitor.cli.main import build_parser
from route_monitor.kube import kubeconfig as kc
from route_monitor.kube import rest
from tests.support.cluster import kubeconfig


def settings(*argv: str, **env: str):  # type: ignore[no-untyped-def]
    return settings_from_args(build_parser().parse_args(["operator", *argv]), env)


def test_cluster_domain_flag_is_wired() -> None:
    assert settings().cluster_domain == "cluster.local"
    assert settings("--cluster-domain", "corp.internal").cluster_domain == "corp.internal"


@pytest.mark.parametrize(("argv", "env", "member", "lease_ns"), [
    pytest.param((), {}, None, "route-monitor", id="outside-a-cluster-one-replica"),
    pytest.param((), {"POD_NAME": "route-monitor-7c9f-x2", "POD_NAMESPACE": "monitoring"},
                 "route-monitor-7c9f-x2", "monitoring", id="downward-api"),
    pytest.param(("--member-name", "a", "--lease-namespace", "ops"), {"POD_NAME": "p", "POD_NAMESPACE": "n"},
                 "a", "ops", id="flags-win"),
])
def test_member_and_lease_namespace(argv: tuple[str, ...], env: dict[str, str], member: str | None,
                                    lease_ns: str) -> None:
    s = settings(*argv, **env)
    assert (s.member, s.lease_namespace) == (member, lease_ns)


def test_rule_flags_reach_the_generated_rules() -> None:
    s = settings("--runbook-base-url", "https://wiki.example/rm", "--dashboard-base-url", "https://grafana.example",
                 "--rule-label", "release=kube-prometheus-stack")
    assert s.rules.runbook_base == "https://wiki.example/rm"
    assert s.rules.dashboard_base == "https://grafana.example"
    assert s.rules.object_labels == (("release", "kube-prometheus-stack"),)


@pytest.mark.parametrize("argv", [
    pytest.param(("--rule-label", "release"), id="label-without-value"),
    pytest.param(("--rule-label", "bad key=x"), id="label-key-with-space"),
    pytest.param(("--runbook-base-url", "ftp://x"), id="not-http"),
    pytest.param(("--dashboard-base-url", "https://user:pw@grafana"), id="credentials-in-url"),
])
def test_bad_rule_flags_are_one_clear_error(argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["operator", *argv])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "expected" in err
    assert "pw" not in err, "a credential was echoed"


def _kubeconfig(tmp_path: Path, user: dict[str, object]) -> Path:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(kubeconfig("https://127.0.0.1:1", "", "u", credentials=user)))
    return path


def test_a_missing_exec_plugin_is_refused_at_start_with_one_line(tmp_path: Path) -> None:
    """Watches and writes go straight to the API server with the kubeconfig's token, token file,
    client certificate, user name and password or exec plugin; a plugin that is not installed
    cannot run the operator: exit 2 and one line with the kubeconfig's install hint."""
    config = _kubeconfig(tmp_path, {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "aws-iam",
                                             "interactiveMode": "Never", "installHint": "install the AWS CLI"}})
    done = subprocess.run([str(Path(sys.executable).parent / "route-monitor"), "operator", "--metrics-port", "0"],
                          env={**os.environ, "KUBECONFIG": str(config)}, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len([line for line in lines if "ERROR" in line]) == 1, lines
    assert "exec plugin 'aws-iam' of the kubeconfig was not found: install the AWS CLI" in lines[-1], lines


def test_a_user_name_and_password_are_sent_as_basic_auth(tmp_path: Path) -> None:
    config = kc.from_file(_kubeconfig(tmp_path, {"username": "ops", "password": "s3cret"}))
    assert rest.unsupported_user(config) is None
    direct = rest.for_config(config, lambda: None)  # type: ignore[arg-type, return-value]
    assert direct is not None
    assert direct._headers()["Authorization"] == "Basic " + base64.b64encode(b"ops:s3cret").decode()
