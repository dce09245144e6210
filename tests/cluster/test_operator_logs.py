"""The operator's logs (issue 12): ``--log-format json`` gives one JSON object per line with
``time``, ``level``, ``logger``, ``message`` and, for lines about one monitor, ``namespace`` and
``monitor``; each monitor's transitions (Ready, probe outcome) are logged once, not per probe; no line per
API request (lightkube's HTTP client logs each one at INFO).
Real operator process against the real control plane.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Namespace

from tests.support.cluster import Cluster
from tests.support.net import wait_for
from tests.support.operator import Target, admin_client, annotations, condition, route, running_operator, wait_monitor

pytestmark = pytest.mark.cluster


def records(path: Path) -> list[dict[str, Any]]:
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    return [json.loads(line) for line in lines]  # every line is JSON, or this fails


def test_json_logs_with_monitor_fields_and_transitions_once(cluster: Cluster, tmp_path: Path,
                                                            target: Target) -> None:
    kube: Client = admin_client(cluster)
    ns = "logs-json"
    kube.create(Namespace(metadata=ObjectMeta(name=ns)))
    with running_operator(cluster, tmp_path, "--log-format", "json", "--log-level", "info") as op:
        kube.create(route(ns, "web", target.host, annotations()))
        wait_monitor(kube, ns, "web", lambda m: condition(m, "Ready").get("status") == "True", "Ready")
        target.status = 503
        wait_for(lambda: target.count() >= 6, timeout=15, what="several failing probes")
        time.sleep(1)
        log = records(op.log_path)
    assert all({"time", "level", "logger", "message"} <= r.keys() for r in log)
    mine = [r for r in log if r.get("namespace") == ns and r.get("monitor") == "web"]
    ready = [r for r in mine if "Ready=True" in r["message"]]
    failing = [r for r in mine if "probe: failure" in r["message"]]
    assert len(ready) == 1, mine
    assert len(failing) == 1, "a failure is logged once, not per probe"
    assert "http_status" in failing[0]["message"]
    assert not [r for r in log if r["logger"].startswith(("httpx", "httpcore"))], "no line per API request"
