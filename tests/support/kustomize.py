"""The shipped ``deploy/`` layouts as ``kubectl kustomize`` renders them (what a user applies
with ``kubectl apply -k``), for the tests that read or install them."""

from __future__ import annotations

import subprocess
from typing import Any

import yaml

from tests.support.cluster import ROOT

DEPLOY = ROOT / "deploy"
LAYOUTS = {"default": DEPLOY, "base": DEPLOY / "base", "openshift": DEPLOY / "overlays" / "openshift",
           "namespaced": DEPLOY / "overlays" / "namespaced",
           "openshift-user-workload": DEPLOY / "overlays" / "openshift-user-workload",
           "kube-prometheus-stack": DEPLOY / "overlays" / "kube-prometheus-stack"}
"""Layout name -> its kustomization folder (``default`` is ``deploy/`` itself)."""


def render(layout: str) -> list[dict[str, Any]]:
    out = subprocess.run(["kubectl", "kustomize", str(LAYOUTS[layout])], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def of_kind(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]
