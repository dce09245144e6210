"""``route-monitor operator`` as a real subprocess against the test control plane, plus what the
operator tests need around it: probe targets that count their hits, and API helpers.

The operator runs as the token user bound only to ``deploy/base/clusterrole.yaml`` (so every request
it makes is checked by RBAC), with ``/metrics``/``/readyz`` and ``/healthz`` on free ports.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import pytest
from lightkube import ApiError, Client, KubeConfig
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.coordination_v1 import Lease
from lightkube.resources.core_v1 import Event, Namespace
from lightkube.types import PatchType
from prometheus_client.parser import text_string_to_metric_families

from alert_rules import names
from tests.support.cluster import Cluster
from tests.support.net import free_port, wait_for
from tests.support.resources import Route, RouteMonitor

VENV_BIN = Path(sys.executable).parent


@dataclass
class Operator:
    cluster: Cluster
    log_path: Path
    args: tuple[str, ...] = ()
    metrics_port: int = field(default_factory=free_port)
    health_port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None
    kubeconfig: Path | None = None
    """Instead of the cluster's operator kubeconfig (e.g. one through a fault proxy)."""
    env: dict[str, str] = field(default_factory=dict)
    """Set in the process's environment, beside the test's own."""
    launch: Callable[[list[str]], list[str]] | None = None
    """Wraps the command line (e.g. ``dnsserver.private_resolver``: a resolver of the test's own)."""

    def start(self, timeout: float = 30) -> None:
        self.spawn()
        wait_for(self.ready, timeout=timeout, what=f"operator /readyz (log: {self.log_path})")

    def spawn(self) -> None:
        """Start the process without waiting for it to be ready."""
        env = {**os.environ, "KUBECONFIG": str(self.kubeconfig or self.cluster.operator_kubeconfig), **self.env}
        log = open(self.log_path, "ab")  # noqa: SIM115 - owned by the process
        command = [str(VENV_BIN / "route-monitor"), "operator", "--metrics-address", f":{self.metrics_port}",
                   "--health-port", str(self.health_port), *self.args]
        self.proc = subprocess.Popen(
            self.launch(command) if self.launch else command,
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        log.close()

    def ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise RuntimeError(f"operator exited with {self.proc.returncode}:\n{self.log(60)}")
        try:
            return httpx.get(f"http://127.0.0.1:{self.metrics_port}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    def stop(self, sig: int = signal.SIGTERM) -> int:
        assert self.proc is not None
        if self.proc.poll() is None:
            os.kill(self.proc.pid, sig)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.kill(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        return self.proc.returncode

    def log(self, tail: int = 40) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-tail:])

    def metrics_text(self) -> str:
        r = httpx.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5)
        r.raise_for_status()
        return r.text

    def sample(self, name: str, **labels: str) -> float | None:
        for family in text_string_to_metric_families(self.metrics_text()):
            for s in family.samples:
                if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                    return float(s.value)
        return None


@contextmanager
def running_operator(cluster: Cluster, workdir: Path, *args: str) -> Iterator[Operator]:
    op = Operator(cluster, workdir / f"operator-{time.monotonic_ns()}.log", args)
    op.start()
    try:
        yield op
    finally:
        op.stop()


# --- probe targets ------------------------------------------------------------------------------
class Target:
    """An HTTP server on ``address`` (a free port unless ``port``) that answers GET/HEAD with
    ``status`` and records (path, wall time) of each hit."""

    def __init__(self, port: int = 0, *, address: str = "127.0.0.1") -> None:
        self.status = 200
        self.hits: list[tuple[str, float]] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with owner._lock:
                    owner.hits.append((self.path, time.time()))
                body = b"ok\n" if owner.status < 400 else b"failing\n"
                self.send_response(owner.status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_HEAD = do_GET

            def log_message(self, *_: Any) -> None:
                pass

        self._server = ThreadingHTTPServer((address, port), Handler)
        self.address = address
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def host(self) -> str:
        """``ADDRESS:PORT``: what a test Route's host is."""
        return f"{self.address}:{self.port}"

    def count(self, path: str | None = None) -> int:
        with self._lock:
            return sum(1 for p, _ in self.hits if path is None or p == path)

    def paths_since(self, since: float) -> set[str]:
        with self._lock:
            return {path for path, at in self.hits if at >= since}

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def admin_client(cluster: Cluster) -> Client:
    return Client(config=KubeConfig.from_file(str(cluster.admin_kubeconfig)), field_manager="tests")


# --- API helpers -----------------------------------------------------------------------------
_namespaces = itertools.count(1)


def new_namespace(kube: Client, request: Any, prefix: str) -> str:
    """A fresh namespace for one test, named after it (``<prefix><n>-<test name>``, <= 63 chars)."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower().removeprefix("test_"))
    name = f"{prefix}{next(_namespaces)}-{slug}"[:63].strip("-")
    kube.create(Namespace(metadata=ObjectMeta(name=name)))
    return name


def annotations(slo: str = "99.9", interval: str = "1s", **extra: str) -> dict[str, str]:
    out = {names.ANN_SLO: slo, names.ANN_INTERVAL: interval}
    out.update({names.ANNOTATION_PREFIX + k.replace("_", "-"): v for k, v in extra.items()})
    return out


def route(ns: str, name: str, host: str, ann: dict[str, str] | None = None, **spec: Any) -> Any:
    return Route.from_dict({
        "apiVersion": "route.openshift.io/v1", "kind": "Route",
        "metadata": {"name": name, "namespace": ns, "annotations": ann or {}},
        "spec": {"host": host, "to": {"kind": "Service", "name": name}, **spec},
    })


def admit(kube: Client, ns: str, name: str, host: str, *, router: str = "default") -> None:
    """What an OpenShift router writes when it admits a Route (``status.ingress[]``)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    kube.patch(Route.Status, name, {"status": {"ingress": [
        {"host": host, "routerName": router, "wildcardPolicy": "None",
         "routerCanonicalHostname": f"router-{router}.apps.example.com",
         "conditions": [{"type": "Admitted", "status": "True", "lastTransitionTime": now}]}]}},
        namespace=ns, patch_type=PatchType.MERGE)


def get(kube: Client, res: Any, name: str, ns: str) -> dict[str, Any] | None:
    try:
        obj = kube.get(res, name, namespace=ns)
    except ApiError as e:
        if e.status.code == 404:
            return None
        raise
    return obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)


def condition(monitor: dict[str, Any] | None, type_: str) -> dict[str, Any]:
    for c in ((monitor or {}).get("status") or {}).get("conditions") or []:
        if c["type"] == type_:
            return dict(c)
    return {}


def wait_monitor(kube: Client, ns: str, name: str, predicate: Any, what: str, timeout: float = 20) -> dict[str, Any]:
    found: dict[str, Any] = {}

    def check() -> bool:
        m = get(kube, RouteMonitor, name, ns)
        found["m"] = m
        return m is not None and bool(predicate(m))

    try:
        wait_for(check, timeout=timeout, what=what)
    except TimeoutError as e:
        raise AssertionError(f"{e}; last seen: {found.get('m')}") from None
    return found["m"]


def warnings_for(kube: Client, ns: str, kind: str, name: str, reason: str) -> list[str]:
    return [e.message or "" for e in kube.list(Event, namespace=ns)
            if e.type == "Warning" and e.reason == reason and e.involvedObject.kind == kind
            and e.involvedObject.name == name]


@pytest.fixture(scope="module")
def kube(cluster: Cluster) -> Client:
    """An admin client of the session's cluster (modules that need more define their own)."""
    return admin_client(cluster)


@pytest.fixture(scope="module")
def operator(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Operator]:
    """One operator with the default flags for all of a module's tests (modules that need flags
    define their own)."""
    with running_operator(cluster, tmp_path_factory.mktemp("operator")) as op:
        yield op


@pytest.fixture
def ns(kube: Client, request: pytest.FixtureRequest) -> str:
    """A fresh namespace for the test (``t<n>-<test name>``)."""
    return new_namespace(kube, request, "t")


@pytest.fixture
def target() -> Iterator[Target]:
    """A real HTTP target on loopback, closed after the test."""
    t = Target()
    yield t
    t.close()


@pytest.fixture(scope="module", autouse=True)
def no_replica_left(request: pytest.FixtureRequest) -> None:
    """The modules of one worker share its control plane, and the replica tests share the Lease
    namespace ``route-monitor``: a Lease a killed or timed-out replica of an earlier module left
    stays live for its duration (15 s) and would own monitors in this module as a member nobody
    runs. Each module that uses the control plane starts without replicas' Leases."""
    if "cluster" not in request.fixturenames:
        return
    client = admin_client(request.getfixturevalue("cluster"))
    try:
        leases = list(client.list(Lease, namespace="route-monitor"))
    except ApiError as e:
        if e.status.code == 404:
            return
        raise
    for lease in leases:
        name = lease.metadata.name if lease.metadata else None
        if name and name.startswith(names.LEASE_PREFIX):
            with contextlib.suppress(ApiError):
                client.delete(Lease, name, namespace="route-monitor")
