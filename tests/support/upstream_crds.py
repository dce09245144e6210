"""Upstream CRDs vendored in ``tests/crds/upstream/`` (see its ORIGIN.md), adapted for the
1.20 test apiserver by dropping exactly what it refuses: ``x-kubernetes-validations``, null
``enum`` entries, and empty/null ``default`` on string fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]

UPSTREAM = ROOT / "tests" / "crds" / "upstream"
SERVICEMONITOR = UPSTREAM / "monitoring.coreos.com_servicemonitors.yaml"
PROMETHEUS = UPSTREAM / "monitoring.coreos.com_prometheuses.yaml"


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
        return out
    if isinstance(node, list):
        return [adapt(v) for v in node]
    return node


def load(path: Path) -> dict[str, Any]:
    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the Prometheus CRD is 0.8 MB
    [doc] = [d for d in yaml.load_all(path.read_text(), Loader=loader) if d]  # some files start with "---"
    crd: dict[str, Any] = adapt(doc)
    return crd
