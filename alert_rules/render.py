"""Stage 4: rule groups -> YAML text and PrometheusRule objects (deterministic output).

Key order is the order the generator built (``sort_keys=False``), multi-line expressions are
literal blocks, and the same input always gives byte-identical output (golden files rely on
it). No I/O: callers write the text where they want it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml

from alert_rules import names
from alert_rules.model import MonitorSLO
from alert_rules.rules import rule_groups
from alert_rules.shared import shared_rule_groups

PROMETHEUS_RULE_API_VERSION = "monitoring.coreos.com/v1"
PROMETHEUS_RULE_KIND = "PrometheusRule"


_Base: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml's emitter is ~20x faster


class _Dumper(_Base):  # type: ignore[misc]
    """SafeDumper that writes multi-line strings as ``|`` blocks and never emits aliases."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: Any, value: str) -> yaml.ScalarNode:
    block = "\n" in value and not any(line != line.rstrip() for line in value.split("\n"))
    node: yaml.ScalarNode = dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if block else None)
    return node


_Dumper.add_representer(str, _str)


def to_yaml(data: Any) -> str:
    """Deterministic YAML for generated documents."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=4096,
                     allow_unicode=True)


def with_header(text: str) -> str:
    return f"{names.GENERATED_HEADER}\n{text}"


def prometheus_rule_file(slos: Sequence[MonitorSLO], *, shared: bool = True) -> str:
    """A plain Prometheus rule file holding every monitor's groups, ordered by namespace/name,
    after the shared groups every monitor's alerts read (``shared=False``: a file of a rule
    folder whose shared groups are in a file of their own)."""
    tiles = {slo.tile_ms for slo in slos}
    if shared and len(tiles) > 1:
        raise ValueError("one rule file holds monitors of one tile (the tile is installation-wide)")
    groups: list[dict[str, Any]] = shared_rule_groups(tiles.pop()) if shared and tiles else []
    for slo in sorted(slos, key=lambda s: (s.namespace, s.name)):
        groups += rule_groups(slo)
    return with_header(to_yaml({"groups": groups}))


def _labels(slo: MonitorSLO) -> dict[str, str]:
    labels = {names.LABEL_MANAGED_BY: names.MANAGED_BY}
    if len(slo.name) <= 63:  # a Kubernetes label value is at most 63 characters; names may be longer
        labels[names.LABEL_MONITOR_NAME] = slo.name
    return labels


def prometheus_rule_object(slo: MonitorSLO, *, extra_labels: tuple[tuple[str, str], ...] = ()) -> dict[str, Any]:
    """The ``monitoring.coreos.com/v1`` PrometheusRule for one monitor (the operator adds the
    ownerReference to its RouteMonitor). ``extra_labels`` go on the object (ours win a clash)."""
    return {
        "apiVersion": PROMETHEUS_RULE_API_VERSION,
        "kind": PROMETHEUS_RULE_KIND,
        "metadata": {
            "name": names.prometheus_rule_name(slo.name),
            "namespace": slo.namespace,
            "labels": {**dict(extra_labels), **_labels(slo)},
        },
        "spec": {"groups": rule_groups(slo)},
    }
