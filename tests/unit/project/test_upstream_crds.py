"""The vendored upstream CRDs (``tests/crds/upstream/``) and how the test control plane uses them.

Covers: the install-time adaptation for kube-apiserver 1.20 drops exactly CEL rules, null enum
entries and empty/null string defaults, and nothing else (every other leaf of each upstream
schema is kept as it is); the Route and PrometheusRule stand-ins (installed instead of
upstream's: ``tests/crds/upstream/ORIGIN.md`` says why) agree with the upstream CRDs on the type
of every field route-monitor reads or writes and every field the tests write as a router would.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support.cluster import CRD_FILES, UPSTREAM_CRDS, load_crd
from tests.support.upstream_crds import adapt

ROOT = Path(__file__).resolve().parents[3]


def leaves(node: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(node, dict):
        for k, v in node.items():
            yield from leaves(v, (*path, k))
    elif isinstance(node, list) and not all(isinstance(v, (str, int, float, bool, type(None))) for v in node):
        for i, v in enumerate(node):
            yield from leaves(v, (*path, i))
    else:
        yield path, node


def _dropped(path: tuple[Any, ...], value: Any, adapted: dict[tuple[Any, ...], Any]) -> bool:
    if "x-kubernetes-validations" in path:
        return True
    if path[-1] == "default" and value in ("", None):
        return True
    return path[-1] == "enum" and [v for v in value if v is not None] == adapted.get(path, [])


@pytest.mark.parametrize("name", sorted(p.name for p in UPSTREAM_CRDS.glob("*.yaml")))
def test_adaptation_drops_exactly_the_three_constructs(name: str) -> None:
    [original] = [d for d in yaml.safe_load_all((UPSTREAM_CRDS / name).read_text()) if d]
    adapted = dict(leaves(adapt(original)))
    changed = [(p, v) for p, v in leaves(original) if adapted.get(p, object()) != v]
    assert all(_dropped(p, v, adapted) for p, v in changed), [p for p, v in changed if not _dropped(p, v, adapted)]
    assert len(adapted) <= len(dict(leaves(original)))


def test_installed_crds_are_the_vendored_ones() -> None:
    installed = {p.name for p in CRD_FILES if p.parent == UPSTREAM_CRDS}
    assert installed == {"gateway.networking.k8s.io_gateways.yaml", "gateway.networking.k8s.io_httproutes.yaml",
                         "gateway.networking.k8s.io_grpcroutes.yaml", "gateway.networking.k8s.io_tcproutes.yaml"}


def schema(crd: dict[str, Any]) -> dict[str, Any]:
    return dict(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


def at(node: dict[str, Any], path: str) -> dict[str, Any]:
    for part in path.split("."):
        node = node["items"] if part == "[]" else node["properties"][part]
    return node


ROUTE_FIELDS = [
    "spec.host", "spec.path", "spec.to.kind", "spec.to.name", "spec.tls.termination",
    "status.ingress.[].host", "status.ingress.[].routerName", "status.ingress.[].routerCanonicalHostname",
    "status.ingress.[].wildcardPolicy", "status.ingress.[].conditions.[].type",
    "status.ingress.[].conditions.[].status", "status.ingress.[].conditions.[].lastTransitionTime",
]


@pytest.mark.parametrize("field", ROUTE_FIELDS)
def test_route_stand_in_agrees_with_openshift_on(field: str) -> None:
    upstream = at(schema(load_crd(UPSTREAM_CRDS / "route.openshift.io_routes.yaml")), field)
    stand_in = at(schema(load_crd(ROOT / "tests" / "crds" / "route.yaml")), field)
    assert (stand_in.get("type"), stand_in.get("format")) == (upstream.get("type"), upstream.get("format"))


RULE_FIELDS = [
    "spec.groups", "spec.groups.[].name", "spec.groups.[].interval", "spec.groups.[].rules",
    "spec.groups.[].rules.[].record", "spec.groups.[].rules.[].alert", "spec.groups.[].rules.[].for",
    "spec.groups.[].rules.[].labels", "spec.groups.[].rules.[].annotations",
]


@pytest.mark.parametrize("field", RULE_FIELDS)
def test_prometheusrule_stand_in_agrees_with_prometheus_operator_on(field: str) -> None:
    upstream = at(schema(load_crd(UPSTREAM_CRDS / "monitoring.coreos.com_prometheusrules.yaml")), field)
    stand_in = at(schema(load_crd(ROOT / "tests" / "crds" / "prometheusrule.yaml")), field)
    assert stand_in.get("type") == upstream.get("type")
    if "pattern" in upstream:  # the stand-in may be stricter (webhook checks), never looser
        assert stand_in.get("pattern") == upstream["pattern"]


def test_adaptation_lists_as_required_exactly_the_list_map_keys_whose_empty_default_it_dropped() -> None:
    """1.20 asks that a key of an ``x-kubernetes-list-map-keys`` list be required or defaulted; the
    ClusterServiceVersion's ``imagePullSecrets[].name`` loses its empty default, so it becomes required."""
    added: list[tuple[tuple[Any, ...], Any]] = []
    for path in sorted(UPSTREAM_CRDS.glob("*.yaml")):
        [original] = [d for d in yaml.safe_load_all(path.read_text()) if d]
        before = dict(leaves(original))
        added += [(p, v) for p, v in leaves(adapt(original)) if p not in before and p[-1] == "required"]
    assert [(p[-5:], v) for p, v in added] == [
        (("spec", "properties", "imagePullSecrets", "items", "required"), ["name"])], added
