"""A real Kubernetes control plane for tests: etcd + kube-apiserver + kube-controller-manager.

Started once per test session on free loopback ports (``/work/shared/TESTING.md``), with:

- the CRDs installed before the controller-manager starts (so its garbage collector knows them
  from the start): ``crds/routemonitor.yaml``, the upstream Gateway, HTTPRoute, GRPCRoute and TCPRoute CRDs vendored
  in ``tests/crds/upstream/`` (adapted for apiserver 1.20 by ``upstream_crds.adapt``), and two
  stand-ins (``tests/crds/``): the Route (upstream's ``spec.host`` admits no port, and the tests'
  Routes point at loopback servers on free ports) and the PrometheusRule (stricter than upstream's
  schema: it also runs the two checks of prometheus-operator's admission webhook);
  ``tests/unit/project/test_upstream_crds.py`` keeps both in agreement with the upstream CRDs;
- an admin kubeconfig (``system:masters``) for the tests themselves, and an operator kubeconfig
  for a token user bound *only* to the ClusterRole from ``deploy/``, so RBAC is tested for real;
- ``restart_apiserver()`` for watch-recovery tests, ``kill_etcd()``/``start_etcd()`` for etcd
  crashes (its data directory survives); every process is stopped by its pid.

Binaries: ``$RM_CACHE/kubernetes-1.20.2/`` (built by ``scripts/bootstrap.sh --system``), etcd
from Debian.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support import upstream_crds
from tests.support.net import free_port, port_open, wait_for
from tests.support.upstream_crds import ROOT
from tests.support.upstream_crds import UPSTREAM as UPSTREAM_CRDS

KUBE_VERSION = "1.20.2"
CACHE = Path(os.environ.get("RM_CACHE", Path.home() / ".cache" / "route-monitor"))
KUBE_BIN = CACHE / f"kubernetes-{KUBE_VERSION}"
STAND_INS = ROOT / "tests" / "crds"
CRD_FILES = (ROOT / "crds" / "routemonitor.yaml", STAND_INS / "route.yaml", STAND_INS / "prometheusrule.yaml",
             UPSTREAM_CRDS / "gateway.networking.k8s.io_gateways.yaml",
             UPSTREAM_CRDS / "gateway.networking.k8s.io_httproutes.yaml",
             UPSTREAM_CRDS / "gateway.networking.k8s.io_grpcroutes.yaml",
             UPSTREAM_CRDS / "gateway.networking.k8s.io_tcproutes.yaml")
BARE_CRD_FILES = (ROOT / "crds" / "routemonitor.yaml", STAND_INS / "prometheusrule.yaml")
"""A cluster without the Route and Gateway APIs (plain Kubernetes, no Gateway API installed)."""
CLUSTER_ROLE_FILE = ROOT / "deploy" / "base" / "clusterrole.yaml"
LEASE_ROLE_FILE = ROOT / "deploy" / "base" / "role.yaml"
ADMIN_TOKEN = "admin-token"
OPERATOR_TOKEN = "operator-token"
OPERATOR_USER = "route-monitor-operator"


def kubeconfig(server: str, token: str, user: str, *, credentials: dict[str, Any] | None = None) -> dict[str, Any]:
    """A kubeconfig for ``server`` whose user sends ``token``, or ``credentials`` (a kubeconfig
    user's fields: a client certificate, an exec plugin...) instead."""
    return {
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "test", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": user, "user": {"token": token} if credentials is None else credentials}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": user, "namespace": "default"}}],
    }


def _stop(proc: subprocess.Popen[bytes], timeout: float = 10, sig: int = signal.SIGTERM) -> None:
    if proc.poll() is not None:
        return
    os.kill(proc.pid, sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout)


@dataclass
class Cluster:
    workdir: Path
    server: str
    admin_kubeconfig: Path
    operator_kubeconfig: Path
    apiserver_args: list[str]
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    served: list[str] = field(default_factory=list)
    """CRD group/versions installed: a (re)started apiserver is ready when it serves them."""
    etcd_args: list[str] = field(default_factory=list)
    etcd_port: int = 0

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        log = open(self.workdir / f"{name}.log", "ab")  # noqa: SIM115 - owned by the process
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        log.close()
        self.procs[name] = proc
        return proc

    def log(self, name: str, tail: int = 40) -> str:
        lines = (self.workdir / f"{name}.log").read_text(errors="replace").splitlines()
        return "\n".join(lines[-tail:])

    def ready(self) -> bool:
        try:
            r = httpx.get(f"{self.server}/readyz", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                          verify=False, timeout=2)
        except httpx.HTTPError:
            return False
        return r.status_code == 200

    def start_apiserver(self) -> None:
        proc = self._spawn("kube-apiserver", self.apiserver_args)

        def up() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"kube-apiserver exited:\n{self.log('kube-apiserver')}")
            return self.ready()

        wait_for(up, timeout=90, interval=0.2, what="kube-apiserver /readyz")
        for group_version in self.served:  # after a restart, CRD APIs come back a moment after /readyz
            wait_for(lambda gv=group_version: _admin_request(self, "GET", f"/apis/{gv}").status_code == 200,
                     timeout=30, interval=0.1, what=f"/apis/{group_version} served")

    def stop_apiserver(self) -> None:
        """Kill the apiserver like a crash (a graceful stop waits for the controller-manager's
        watches to drain): every watch breaks at once."""
        _stop(self.procs.pop("kube-apiserver"), sig=signal.SIGKILL)

    def restart_apiserver(self, down_seconds: float = 0.0) -> None:
        """Stop the apiserver (watches break), optionally stay down a while, start it again."""
        self.stop_apiserver()
        time.sleep(down_seconds)
        self.start_apiserver()

    def start_etcd(self) -> None:
        proc = self._spawn("etcd", self.etcd_args)

        def up() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"etcd exited:\n{self.log('etcd')}")
            return port_open(self.etcd_port)

        wait_for(up, timeout=30, what="etcd")

    def kill_etcd(self) -> None:
        """SIGKILL etcd (its data directory stays): the apiserver stays up and fails what needs
        etcd until it is started again."""
        _stop(self.procs.pop("etcd"), sig=signal.SIGKILL)

    def compact_etcd(self) -> int:
        """Compact etcd's whole history up to now (its v3 JSON gateway): every older resourceVersion
        is gone once the apiserver's watch cache no longer holds it (a restart starts it afresh)."""
        url = f"http://127.0.0.1:{self.etcd_port}"
        rev = int(httpx.post(f"{url}/v3/kv/range", json={"key": "L3JlZ2lzdHJ5"}, timeout=10).json()["header"]["revision"])
        r = httpx.post(f"{url}/v3/kv/compaction", json={"revision": str(rev), "physical": True}, timeout=30)
        assert r.status_code == 200, r.text
        return rev

    def stop(self) -> None:
        for name in ("kube-controller-manager", "kube-apiserver", "etcd"):
            if name in self.procs:
                _stop(self.procs.pop(name))


def _write_keys(workdir: Path) -> tuple[Path, Path]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    priv, pub = workdir / "sa.key", workdir / "sa.pub"
    priv.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                       serialization.NoEncryption()))
    pub.write_bytes(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                  serialization.PublicFormat.SubjectPublicKeyInfo))
    return priv, pub


def _admin_request(cluster: Cluster, method: str, path: str, body: dict[str, Any] | None = None) -> httpx.Response:
    return httpx.request(method, f"{cluster.server}{path}", json=body, verify=False, timeout=10,
                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})


def load_crd(path: Path) -> dict[str, Any]:
    """A CRD file as installed: upstream ones adapted for apiserver 1.20 (``upstream_crds.adapt``)."""
    return upstream_crds.load(path) if path.parent == UPSTREAM_CRDS else dict(yaml.safe_load(path.read_text()))


def install_crd(cluster: Cluster, path: Path) -> None:
    """One CRD, waiting until it is Established."""
    crd = load_crd(path)
    r = _admin_request(cluster, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert r.status_code == 201, f"{path.name} rejected by kube-apiserver: {r.text}"

    def established(name: str = crd["metadata"]["name"]) -> bool:
        got = _admin_request(cluster, "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        conds = got.json().get("status", {}).get("conditions", [])
        return any(c["type"] == "Established" and c["status"] == "True" for c in conds)

    wait_for(established, timeout=30, what=f"CRD {crd['metadata']['name']} established")
    cluster.served.append(f"{crd['spec']['group']}/{crd['spec']['versions'][0]['name']}")


def _install(cluster: Cluster, crd_files: tuple[Path, ...]) -> None:
    """CRDs (waiting until each is Established), and the operator's ClusterRole bound to the
    operator's test user (instead of the ServiceAccount the Deployment uses)."""
    for path in crd_files:
        install_crd(cluster, path)
    role = yaml.safe_load(CLUSTER_ROLE_FILE.read_text())
    r = _admin_request(cluster, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role)
    assert r.status_code == 201, r.text
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "route-monitor-test-operator"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role["metadata"]["name"]},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": OPERATOR_USER}],
    }
    r = _admin_request(cluster, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", binding)
    assert r.status_code == 201, r.text
    # the replicas' Lease Role, in the operator's namespace, bound to the same test user
    lease_role = yaml.safe_load(LEASE_ROLE_FILE.read_text())
    ns = lease_role["metadata"]["namespace"]
    r = _admin_request(cluster, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                               "metadata": {"name": ns}})
    assert r.status_code == 201, r.text
    r = _admin_request(cluster, "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles", lease_role)
    assert r.status_code == 201, r.text
    lease_binding = {**binding, "kind": "RoleBinding", "metadata": {"name": "route-monitor-test-leases", "namespace": ns},
                     "roleRef": {**binding["roleRef"], "kind": "Role", "name": lease_role["metadata"]["name"]}}
    r = _admin_request(cluster, "POST", f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
                       lease_binding)
    assert r.status_code == 201, r.text


def start_cluster(workdir: Path, crd_files: tuple[Path, ...] = CRD_FILES) -> Cluster:
    missing = [b for b in ("kube-apiserver", "kube-controller-manager") if not (KUBE_BIN / b).exists()]
    if missing or not shutil.which("etcd"):
        pytest.fail(f"control-plane binaries missing ({', '.join(missing) or 'etcd'}): "
                    "run scripts/bootstrap.sh --system (or scripts/test.sh)", pytrace=False)
    priv, pub = _write_keys(workdir)
    tokens = workdir / "tokens.csv"
    tokens.write_text(f"{ADMIN_TOKEN},admin,admin,system:masters\n{OPERATOR_TOKEN},{OPERATOR_USER},operator-uid\n")
    etcd_port, etcd_peer, api_port = free_port(), free_port(), free_port()
    server = f"https://127.0.0.1:{api_port}"
    admin_kc, operator_kc = workdir / "admin.kubeconfig", workdir / "operator.kubeconfig"
    admin_kc.write_text(yaml.safe_dump(kubeconfig(server, ADMIN_TOKEN, "admin")))
    operator_kc.write_text(yaml.safe_dump(kubeconfig(server, OPERATOR_TOKEN, OPERATOR_USER)))
    apiserver_args = [
        str(KUBE_BIN / "kube-apiserver"), f"--etcd-servers=http://127.0.0.1:{etcd_port}",
        "--bind-address=127.0.0.1", f"--secure-port={api_port}", f"--cert-dir={workdir / 'certs'}",
        f"--token-auth-file={tokens}", "--authorization-mode=RBAC",
        "--service-account-issuer=https://kubernetes.default.svc",
        f"--service-account-signing-key-file={priv}", f"--service-account-key-file={pub}",
        "--service-cluster-ip-range=10.96.0.0/16", "--disable-admission-plugins=ServiceAccount",
        "--enable-priority-and-fairness=false",
    ]
    etcd_args = [
        "etcd", f"--data-dir={workdir / 'etcd'}", f"--listen-client-urls=http://127.0.0.1:{etcd_port}",
        f"--advertise-client-urls=http://127.0.0.1:{etcd_port}", f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
        f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
        f"--initial-cluster=default=http://127.0.0.1:{etcd_peer}",
    ]
    cluster = Cluster(workdir=workdir, server=server, admin_kubeconfig=admin_kc, operator_kubeconfig=operator_kc,
                      apiserver_args=apiserver_args, etcd_args=etcd_args, etcd_port=etcd_port)
    try:
        cluster.start_etcd()
        cluster.start_apiserver()
        _install(cluster, crd_files)
        cluster._spawn("kube-controller-manager", [
            str(KUBE_BIN / "kube-controller-manager"), f"--kubeconfig={admin_kc}",
            "--controllers=garbagecollector,namespace,clusterrole-aggregation", "--bind-address=127.0.0.1", "--secure-port=0",
            "--port=0", "--leader-elect=false",
        ])
        wait_for(lambda: "all resource monitors have synced" in cluster.log("kube-controller-manager", 200),
                 timeout=60, what="kube-controller-manager's garbage collector")
    except BaseException:
        cluster.stop()
        raise
    return cluster


@pytest.fixture(scope="session")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = start_cluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield c
    finally:
        c.stop()
