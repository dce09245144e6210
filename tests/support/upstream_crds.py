"""Upstream CRDs vendored in ``tests/crds/upstream/`` (see its ORIGIN.md), adapted for the
1.20 test apiserver by dropping exactly what it refuses: ``x-kubernetes-validations``, null
``enum`` entries, and empty/null ``default`` on string fields. A key of an
``x-kubernetes-list-map-keys`` list whose empty default is so dropped is listed as required
instead, which 1.20 asks of a list-map key without a default (the ClusterServiceVersion CRD's
``imagePullSecrets[].name``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]

UPSTREAM = ROOT / "tests" / "crds" / "upstream"
SERVICEMONITOR = UPSTREAM / "monitoring.coreos.com_servicemonitors.yaml"
PROMETHEUS = UPSTREAM / "monitoring.coreos.com_prometheuses.yaml"
CLUSTERSERVICEVERSION = UPSTREAM / "operators.coreos.com_clusterserviceversions.yaml"


def adapt(node: Any) -> Any:
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "x-kubernetes-validations":
                continue
            if key == "default" and value in ("", None) and node.get("type") == "string":
                continue
            if key == "enum" and isinstance(value, list):
                value = [v for v in value if v is not None]
                if not value:
                    continue
            out[key] = adapt(value)
        return _list_map_keys_required(node, out)
    if isinstance(node, list):
        return [adapt(v) for v in node]
    return node


def _list_map_keys_required(original: dict[Any, Any], out: dict[Any, Any]) -> dict[Any, Any]:
    items = original.get("items")
    if "x-kubernetes-list-map-keys" not in original or not isinstance(items, dict):
        return out
    props = items.get("properties") or {}
    lost = [k for k in original["x-kubernetes-list-map-keys"] if k not in (items.get("required") or [])
            and props.get(k, {}).get("type") == "string" and "default" in props.get(k, {})
            and props[k]["default"] in ("", None)]
    if lost:
        out["items"] = {**out["items"], "required": [*(items.get("required") or []), *lost]}
    return out


def load(path: Path) -> dict[str, Any]:
    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the Prometheus CRD is 0.8 MB
    [doc] = [d for d in yaml.load_all(path.read_text(), Loader=loader) if d]  # some files start with "---"
    crd: dict[str, Any] = adapt(doc)
    return crd
