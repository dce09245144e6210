"""``route-monitor operator`` flags reach the operator's settings (the parser is the boundary):

- ``--cluster-domain`` sets the DNS domain of Service targets;
- the member name is ``--member-name``, else ``$POD_NAME``; neither: one replica without a Lease;
- the Lease namespace is ``--lease-namespace``, else ``$POD_NAMESPACE``, else ``route-monitor``.
"""

from __future__ import annotations

import pytest

from route_monitor.cli import build_parser
from route_monitor.commands.operator import settings_from_args


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


def test_a_watch_kopf_gave_up_on_restarts_the_operator_in_process_but_a_bug_does_not() -> None:
    """kopf ends the operator when one watch fails for good (a CRD's API answering 404 for a few
    seconds after an apiserver restart was seen in the chaos tests): the operator starts again in
    the same process; any other exception still ends it."""
    from kopf._cogs.clients.errors import APINotFoundError

    from route_monitor.commands.operator import watch_failure

    assert watch_failure(APINotFoundError("404 page not found", status=404, headers={}))
    assert not watch_failure(KeyError("a bug of ours"))


def test_a_stop_while_waiting_to_start_again_is_a_clean_stop() -> None:
    import os
    import signal
    import threading

    from route_monitor.commands.operator import stopped_while_waiting

    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGTERM)).start()
    assert stopped_while_waiting(10) is True
    assert stopped_while_waiting(0.05) is False
