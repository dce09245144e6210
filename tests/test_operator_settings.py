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
