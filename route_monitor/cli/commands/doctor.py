"""``route-monitor doctor [--operator-namespace NS]``: read the cluster and say, in plain words,
whether what route-monitor generates will actually be loaded and scraped.

Reads (with the caller's credentials, ``$KUBECONFIG`` or in-cluster): the APIs present, the
operator's Deployment (replicas, ``--rule-label`` flags), its ServiceMonitor, the namespaces
holding RouteMonitors and every ``Prometheus`` object; asks the API server (SubjectAccessReview)
whether the operator's ServiceAccount may do what it needs. Prints one line per finding
(``ok:``, ``warning:``, ``problem:``), or with ``-o json`` one JSON object; exits 1 when there
is a problem, 2 when the cluster cannot be read. Writes nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Iterable
from typing import Any, TextIO

from alert_rules import names
from route_monitor.cli import cliargs
from route_monitor.cli.doctor import Finding, Generated, check_all
from route_monitor.kube import rest as kuberest
from route_monitor.kube import transport
from route_monitor.kube.apierrors import ApiError, status_code
from route_monitor.kube.resources import (
    DEPLOYMENT,
    NAMESPACE,
    PROMETHEUS,
    PROMETHEUS_RULE,
    ROUTE,
    ROUTE_MONITOR,
    SERVICE_MONITOR,
    SUBJECT_ACCESS_REVIEW,
    Resource,
)
from route_monitor.kube.rest import Rest
from route_monitor.targets import sources

OPERATOR_NEEDS = (
    *((s.group, s.plural, "watch") for s in sources.SOURCES),
    *((api_version.rpartition("/")[0], plural, "watch") for api_version, _, plural in sources.DEPENDENCIES.values()),
    ("routemonitor.io", "routemonitors", "watch"), ("routemonitor.io", "routemonitors", "create"),
    ("routemonitor.io", "routemonitors", "update"), ("routemonitor.io", "routemonitors/status", "patch"),
    ("monitoring.coreos.com", "prometheusrules", "create"), ("monitoring.coreos.com", "prometheusrules", "update"),
    ("", "events", "create"),
)
"""A sample of what the operator must be allowed cluster-wide (deploy/base/clusterrole.yaml grants it)."""


def add_arguments(do: argparse.ArgumentParser) -> None:
    do.add_argument("--operator-namespace", default="route-monitor", metavar="NS",
                    help="where route-monitor runs (default route-monitor)")
    cliargs.output_flag(do)


async def _items(client: Rest, res: Resource, namespace: str | None = None) -> list[dict[str, Any]] | None:
    """Objects as dicts (``namespace=None``: all namespaces, or a cluster-scoped kind); None when
    the API is not served (404)."""
    try:
        items, _ = await client.list(res.collection(namespace), {})
        return items
    except Exception as e:
        if status_code(e) == 404:
            return None
        raise


async def _apis(client: Rest) -> tuple[list[Finding], bool]:
    out: list[Finding] = []
    if await _items(client, ROUTE_MONITOR) is None:
        out.append(Finding("problem", "the RouteMonitor CRD is not installed (kubectl apply -k deploy/)"))
    if await _items(client, ROUTE) is None:
        out.append(Finding("ok", "no OpenShift Route API here: Services, URLs and RouteMonitors still work"))
    have_prom = await _items(client, PROMETHEUS_RULE) is not None
    if not have_prom:
        out.append(Finding("problem", "prometheus-operator's CRDs (monitoring.coreos.com/v1) are not installed: "
                           "no PrometheusRule can be applied; RouteMonitors report RulesApplied=False"))
    return out, have_prom


async def _operator(client: Rest, ns: str) -> tuple[list[Finding], dict[str, str], str | None]:
    labels = {names.LABEL_MANAGED_BY: names.MANAGED_BY}
    try:
        dep = await client.get(DEPLOYMENT.item(ns, "route-monitor"), {})
    except ApiError as e:
        if e.status != 404:
            raise
        missing = Finding("problem", f"no Deployment route-monitor in namespace {ns} (--operator-namespace?)")
        return [missing], labels, None
    spec, status = dep.get("spec") or {}, dep.get("status") or {}
    ready, wanted = int(status.get("readyReplicas") or 0), int(spec.get("replicas") or 1)
    out = [Finding("ok" if ready >= wanted else "problem" if ready == 0 else "warning",
                   f"operator Deployment {ns}/route-monitor: {ready}/{wanted} replicas ready")]
    containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or [{}]
    labels.update(rule_labels_of(containers[0]))
    account = ((spec.get("template") or {}).get("spec") or {}).get("serviceAccountName") or "default"
    return out, labels, f"system:serviceaccount:{ns}:{account}"


def rule_labels_of(container: dict[str, Any]) -> dict[str, str]:
    """The operator container's ``--rule-label`` flags, else its ``ROUTE_MONITOR_RULE_LABEL``
    (comma-separated; the command line wins, as in the operator)."""
    args = list(container.get("args") or [])
    values = []
    for i, arg in enumerate(args):
        value = arg.split("=", 1)[1] if arg.startswith("--rule-label=") else (
            args[i + 1] if arg == "--rule-label" and i + 1 < len(args) else None)
        if value:
            values.append(value)
    if not values:
        env = {e.get("name"): e.get("value") for e in container.get("env") or [] if isinstance(e, dict)}
        values = [v.strip() for v in str(env.get("ROUTE_MONITOR_RULE_LABEL") or "").split(",")]
    return dict(v.split("=", 1) for v in values if "=" in v)


async def _rbac(client: Rest, user: str) -> list[Finding]:
    missing = []
    for group, resource, verb in OPERATOR_NEEDS:
        res, _, sub = resource.partition("/")
        namespace = user.split(":")[2]
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"]
        review = {"apiVersion": SUBJECT_ACCESS_REVIEW.api_version, "kind": SUBJECT_ACCESS_REVIEW.kind,
                  "spec": {"user": user, "groups": groups, "resourceAttributes": {
                      "group": group, "resource": res, "subresource": sub, "verb": verb}}}
        try:
            answer = await client.create(SUBJECT_ACCESS_REVIEW.collection(), review)
        except ApiError as e:
            if e.status == 403:
                return [Finding("warning", "cannot check the operator's RBAC: you may not create "
                                "SubjectAccessReviews")]
            raise
        if not (answer.get("status") or {}).get("allowed"):
            missing.append(f"{verb} {resource}")
    if missing:
        return [Finding("problem", f"the operator ({user}) may not: {', '.join(missing)} (apply "
                        "deploy/clusterrole.yaml and its binding)")]
    return [Finding("ok", f"the operator ({user}) has the permissions it needs")]


async def diagnose(client: Rest, operator_namespace: str) -> list[Finding]:
    findings, have_prom = await _apis(client)
    found, rule_labels, user = await _operator(client, operator_namespace)
    findings += found
    if user is not None:
        findings += await _rbac(client, user)
    if not have_prom:
        return findings
    monitors = await _items(client, ROUTE_MONITOR) or []
    namespaces = tuple(sorted({str(m["metadata"]["namespace"]) for m in monitors}))
    try:
        ns_labels = {str(n["metadata"]["name"]): dict(n["metadata"].get("labels") or {})
                     for n in await _items(client, NAMESPACE) or []}
    except ApiError:
        ns_labels = {}
    sms = await _items(client, SERVICE_MONITOR, namespace=operator_namespace) or []
    ours = [s for s in sms if (s["metadata"].get("labels") or {}).get("app.kubernetes.io/name") == "route-monitor"]
    made = Generated(rule_labels=rule_labels, rule_namespaces=namespaces,
                     service_monitor=ours[0] if ours else None)
    return findings + check_all(await _items(client, PROMETHEUS) or [], made, ns_labels)


async def _diagnose_env(operator_namespace: str) -> list[Finding]:
    """:func:`diagnose` with the caller's credentials (in-cluster, ``$KUBECONFIG``, ``~/.kube/config``)."""
    config, pools = transport.load()
    client = kuberest.for_config(config, pools.session, pools=pools)
    if client is None:
        raise transport.UnusableConfig(kuberest.unsupported_user(config) or "no usable credentials")
    try:
        return await diagnose(client, operator_namespace)
    finally:
        await pools.aclose()


def report(findings: Iterable[Finding], out: TextIO, fmt: str = "text") -> int:
    """Exit 1 when there is a problem. ``json``: ``{"findings": [{"level", "message"}...], "problems": N}``."""
    found = list(findings)
    problems = sum(f.level == "problem" for f in found)
    if fmt == "json":
        out.write(json.dumps({"findings": [{"level": f.level, "message": f.message} for f in found],
                              "problems": problems}, indent=2) + "\n")
    else:
        for f in found:
            print(f, file=out)
        print(f"{problems} problem(s)", file=out)
    return cliargs.FINDINGS if problems else cliargs.OK


def run(args: argparse.Namespace, *, out: TextIO | None = None) -> int:
    out = out or sys.stdout
    try:
        findings = asyncio.run(_diagnose_env(args.operator_namespace))
    except Exception as e:  # unreachable cluster, no credentials: one line, not a traceback
        cliargs.error("doctor", f"cannot read the cluster: {e}")
        return cliargs.USAGE
    return report(findings, out, getattr(args, "output", "text"))
