"""A Prometheus configured the way prometheus-operator configures one with ``enforcedNamespaceLabel``
(OpenShift's user-workload monitoring), from the real objects in the test control plane.

prometheus-operator turns each ServiceMonitor endpoint into a scrape job that discovers the
EndpointSlices of the Services its selector matches (Kubernetes service discovery) and relabels
the targets; with namespace enforcement it also:

- forces ``honor_labels: false`` (``overrideHonorLabels``), so a scraped series' own ``namespace``
  label becomes ``exported_namespace`` and the target's wins;
- sets the target label ``namespace`` to the ServiceMonitor's namespace, last;
- injects ``namespace="<the PrometheusRule's namespace>"`` into every selector of every rule.

Debian's Prometheus is built without Kubernetes service discovery, so :func:`scrape_jobs` does
the discovery here, through the real API (ServiceMonitor -> Services by label -> their
EndpointSlices by ``kubernetes.io/service-name`` -> ready addresses and the named port), and
writes each target with the labels prometheus-operator's relabelling gives it (``namespace``,
``service``, ``endpoint``, ``job``). :func:`enforce_namespace` rewrites rules as its enforcer does
(route-monitor's metric and record names; other bare names are not recognised).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tests.support.net import free_port
from tests.support.prometheus import PROMETHEUS_BIN, Prometheus, child

SELECTOR = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}")
NAMESPACE_MATCHER = re.compile(r'(?<![A-Za-z0-9_])\s*namespace\s*(=|!=|=~|!~)\s*"[^"]*"\s*,?')
BARE = re.compile(r"\b(route_monitor_[a-z_]+|[a-z_]+:route_monitor_[a-z_:0-9]+)\b(?!\{)")


def enforce_namespace(expr: str, namespace: str) -> str:
    """``expr`` with ``namespace="<namespace>"`` as the namespace matcher of every selector (a bare
    ``route_monitor_*`` name, or a recorded ``...:route_monitor_...`` one, gets braces)."""

    def one(m: re.Match[str]) -> str:
        rest = NAMESPACE_MATCHER.sub("", m.group(2)).strip().strip(",")
        return f'{m.group(1)}{{namespace="{namespace}"{"," + rest if rest else ""}}}'

    out, last = [], 0
    for m in SELECTOR.finditer(expr):
        out += [BARE.sub(lambda b: f'{b.group(1)}{{namespace="{namespace}"}}', expr[last:m.start()]), one(m)]
        last = m.end()
    out.append(BARE.sub(lambda b: f'{b.group(1)}{{namespace="{namespace}"}}', expr[last:]))
    return "".join(out)


def enforced_rule_groups(rule: dict[str, Any]) -> dict[str, Any]:
    ns = rule["metadata"]["namespace"]
    groups = []
    for g in rule["spec"]["groups"]:
        rules = [{**r, "expr": enforce_namespace(str(r["expr"]), ns)} for r in g["rules"]]
        groups.append({**g, "name": f"{ns}/{rule['metadata']['name']}/{g['name']}", "rules": rules})
    return {"groups": groups}


def _matches(labels: dict[str, str], selector: dict[str, Any]) -> bool:
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def scrape_jobs(service_monitors: Sequence[dict[str, Any]], services: Sequence[dict[str, Any]],
                slices: Sequence[dict[str, Any]], *, interval: str = "1s") -> list[dict[str, Any]]:
    """One job per ServiceMonitor endpoint, as rendered with namespace enforcement."""
    jobs: list[dict[str, Any]] = []
    for sm in service_monitors:
        ns, name = sm["metadata"]["namespace"], sm["metadata"]["name"]
        for i, ep in enumerate(sm["spec"]["endpoints"]):
            static: list[dict[str, Any]] = []
            for svc in services:
                meta = svc["metadata"]
                if meta["namespace"] != ns or not _matches(meta.get("labels") or {}, sm["spec"]["selector"]):
                    continue
                targets = []
                for s in slices:
                    smeta = s["metadata"]
                    if smeta["namespace"] != ns or (smeta.get("labels") or {}).get("kubernetes.io/service-name") \
                            != meta["name"]:
                        continue
                    ports = [p["port"] for p in s.get("ports") or [] if p.get("name") == ep["port"]]
                    for e in s.get("endpoints") or []:
                        if (e.get("conditions") or {}).get("ready", True) is not False:
                            targets += [f"{a}:{p}" for a in e["addresses"] for p in ports]
                if targets:
                    static.append({"targets": sorted(targets), "labels": {
                        "namespace": ns, "service": meta["name"], "endpoint": ep["port"], "job": meta["name"]}})
            jobs.append({"job_name": f"serviceMonitor/{ns}/{name}/{i}", "honor_labels": False,
                         "metrics_path": ep.get("path", "/metrics"), "params": ep.get("params") or {},
                         "scrape_interval": interval, "scrape_timeout": interval, "static_configs": static})
    return jobs


@contextmanager
def run_enforcing_prometheus(workdir: Path, jobs: list[dict[str, Any]],
                             rule_files: dict[str, dict[str, Any]]) -> Iterator[Prometheus]:
    workdir.mkdir(parents=True, exist_ok=True)
    rules_dir = workdir / "rules"
    rules_dir.mkdir(exist_ok=True)
    for name, groups in rule_files.items():
        (rules_dir / f"{name}.yml").write_text(yaml.safe_dump(groups, sort_keys=False))
    config = workdir / "prometheus.yml"
    config.write_text(yaml.safe_dump({"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                                      "rule_files": [str(rules_dir / "*.yml")], "scrape_configs": jobs}))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [PROMETHEUS_BIN, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'data'}",
           f"--web.listen-address=127.0.0.1:{port}", "--web.enable-lifecycle", "--log.level=warn"]
    with child(cmd, log=workdir / "prometheus.log", ready_url=f"{url}/-/ready") as proc:
        yield Prometheus(url=url, rules_dir=rules_dir, pid=proc.pid)
