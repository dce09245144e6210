"""Debian's Prometheus and Alertmanager as child processes on free loopback ports.

- :func:`run_prometheus`: 1s scrape and evaluation, ``--web.enable-lifecycle`` (``reload()``),
  rule files from a folder, optional Alertmanager to send alerts to; the tests' and the
  benchmarks' one Prometheus starter (the benchmarks read its ``pid`` for CPU and memory).
- :func:`run_alertmanager`: the shipped ``deploy/alertmanager/alertmanager.yml``, adapted by
  :func:`adapt_alertmanager_config` to send PagerDuty events and tickets to a local
  :mod:`tests.support.sink` server, with short group timings; nothing else changed.

Both stop what they started by process id. Logs go to files in the work folder and are shown
in the error when a process does not become ready.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.support.net import free_port, wait_for
from tests.support.sink import PAGERDUTY_PATH, TICKET_PATH, RecordingServer, recording_server

ROOT = Path(__file__).resolve().parents[2]
ALERTMANAGER_DIR = ROOT / "deploy" / "alertmanager"
ALERTMANAGER_BIN = "prometheus-alertmanager"
PROMETHEUS_BIN = "prometheus"


@contextmanager
def child(cmd: Sequence[str], *, log: Path, ready_url: str, timeout: float = 30) -> Iterator[subprocess.Popen[bytes]]:
    """Run ``cmd`` until the context exits; ready when ``ready_url`` answers 200."""
    with open(log, "wb") as out:
        proc = subprocess.Popen(list(cmd), stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        def ready() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"{cmd[0]} exited with {proc.returncode}: {log.read_text()[-3000:]}")
            return httpx.get(ready_url, timeout=1).status_code == 200
        try:
            wait_for(ready, timeout=timeout, what=f"{cmd[0]} at {ready_url}")
        except TimeoutError as e:
            raise TimeoutError(f"{e}\n{log.read_text()[-3000:]}") from None
        yield proc
    finally:
        stop(proc)


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@dataclass(frozen=True)
class Prometheus:
    url: str
    rules_dir: Path
    pid: int = 0
    """The server's process id (0: not started by :func:`run_prometheus`)."""

    def query(self, expr: str, *, time: float | None = None) -> list[dict[str, Any]]:
        """Instant query; the result vector (raises on a PromQL error)."""
        params: dict[str, Any] = {"query": expr}
        if time is not None:
            params["time"] = time
        body = httpx.get(f"{self.url}/api/v1/query", params=params, timeout=10).json()
        if body["status"] != "success":
            raise ValueError(f"{expr}: {body.get('error')}")
        result: list[dict[str, Any]] = body["data"]["result"]
        return result

    def api(self, path: str, **params: Any) -> Any:
        body = httpx.get(f"{self.url}/api/v1/{path}", params=params, timeout=10).json()
        if body["status"] != "success":
            raise ValueError(f"{path}: {body.get('error')}")
        return body["data"]

    def reload(self) -> None:
        httpx.post(f"{self.url}/-/reload", timeout=10).raise_for_status()

    def rule_names(self) -> set[str]:
        return {r["name"] for g in self.api("rules")["groups"] for r in g["rules"]}

    def firing(self, alertname: str) -> list[dict[str, Any]]:
        return [a for a in self.api("alerts")["alerts"] if a["labels"]["alertname"] == alertname
                and a["state"] == "firing"]


def prometheus_config(*, rules_dir: Path, targets: Sequence[str], alertmanager: str | None,
                      interval: str = "1s", evaluation_interval: str | None = None) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "global": {"scrape_interval": interval, "evaluation_interval": evaluation_interval or interval,
                   "scrape_timeout": interval},
        "rule_files": [str(rules_dir / "*.yml"), str(rules_dir / "*.yaml")],
        "scrape_configs": [{"job_name": "route-monitor", "static_configs": [{"targets": list(targets)}]}],
    }
    if alertmanager:
        cfg["alerting"] = {"alertmanagers": [{"static_configs": [{"targets": [alertmanager]}]}]}
    return cfg


@contextmanager
def run_prometheus(workdir: Path, *, targets: Sequence[str] = (), rules_dir: Path | None = None,
                   alertmanager: str | None = None, interval: str = "1s", evaluation_interval: str | None = None,
                   flags: Sequence[str] = (), timeout: float = 30) -> Iterator[Prometheus]:
    """``interval``: scrape (and, unless ``evaluation_interval`` is given, evaluation) interval;
    ``flags``: more command-line flags (e.g. ``--query.lookback-delta=10s``); ``timeout``: how
    long it may take to become ready (loading thousands of rule files takes a while)."""
    workdir.mkdir(parents=True, exist_ok=True)
    rules_dir = rules_dir or workdir / "rules"
    rules_dir.mkdir(parents=True, exist_ok=True)
    config = workdir / "prometheus.yml"
    config.write_text(yaml.safe_dump(prometheus_config(rules_dir=rules_dir, targets=targets,
                                                       alertmanager=alertmanager, interval=interval,
                                                       evaluation_interval=evaluation_interval)))
    port = free_port()
    cmd = [PROMETHEUS_BIN, f"--config.file={config}", f"--storage.tsdb.path={workdir / 'data'}",
           f"--web.listen-address=127.0.0.1:{port}", "--web.enable-lifecycle", "--web.enable-admin-api",
           "--rules.alert.resend-delay=1s", "--log.level=warn", *flags]
    url = f"http://127.0.0.1:{port}"
    with child(cmd, log=workdir / "prometheus.log", ready_url=f"{url}/-/ready", timeout=timeout) as proc:
        yield Prometheus(url=url, rules_dir=rules_dir, pid=proc.pid)


def adapt_alertmanager_config(text: str, *, pagerduty_url: str, ticket_url: str, routing_key_file: Path,
                              templates_dir: Path = ALERTMANAGER_DIR / "templates",
                              group_wait: str | None = "1s", group_interval: str | None = "1s") -> str:
    """The shipped configuration with local endpoints and short group timings (None: as shipped), nothing else."""
    cfg = yaml.safe_load(text)
    cfg["templates"] = [str(templates_dir / "*.tmpl")]

    def timings(route: dict[str, Any]) -> None:
        for key, value in (("group_wait", group_wait), ("group_interval", group_interval)):
            if value is not None and (key in route or route is cfg["route"]):
                route[key] = value
        for sub in route.get("routes", []):
            timings(sub)

    timings(cfg["route"])
    for receiver in cfg["receivers"]:
        for pd in receiver.get("pagerduty_configs", []):
            pd["url"] = pagerduty_url
            pd["routing_key_file"] = str(routing_key_file)
        for hook in receiver.get("webhook_configs", []):
            hook["url"] = ticket_url
    return str(yaml.safe_dump(cfg, sort_keys=False))


@dataclass(frozen=True)
class Alertmanager:
    url: str
    config: Path

    @property
    def address(self) -> str:
        return self.url.removeprefix("http://")

    def post_alerts(self, alerts: list[dict[str, Any]]) -> None:
        httpx.post(f"{self.url}/api/v2/alerts", json=alerts, timeout=10).raise_for_status()

    def alerts(self, **filters: str) -> list[dict[str, Any]]:
        params: list[tuple[str, str | int | float | bool | None]] = [("filter", f'{k}="{v}"')
                                                                     for k, v in filters.items()]
        result: list[dict[str, Any]] = httpx.get(f"{self.url}/api/v2/alerts", params=params, timeout=10).json()
        return result


@contextmanager
def run_alertmanager(workdir: Path, *, config_text: str) -> Iterator[Alertmanager]:
    workdir.mkdir(parents=True, exist_ok=True)
    config = workdir / "alertmanager.yml"
    config.write_text(config_text)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = [ALERTMANAGER_BIN, f"--config.file={config}", f"--storage.path={workdir / 'data'}",
           f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address=", "--log.level=warn"]
    with child(cmd, log=workdir / "alertmanager.log", ready_url=f"{url}/-/ready"):
        yield Alertmanager(url=url, config=config)


ROUTING_KEY = "R0UTEM0N1T0RTESTKEY000000000000"


@dataclass(frozen=True)
class Paging:
    """Alertmanager running the shipped configuration, delivering to a local recording server."""

    alertmanager: Alertmanager
    sink: RecordingServer


@contextmanager
def run_paging(workdir: Path, *, shipped_timings: bool = False) -> Iterator[Paging]:
    """``shipped_timings``: keep the shipped group_wait/group_interval (30s/5m) instead of 1s."""
    workdir.mkdir(parents=True, exist_ok=True)
    key = workdir / "routing-key"
    key.write_text(ROUTING_KEY + "\n")
    with recording_server() as sink:
        text = adapt_alertmanager_config((ALERTMANAGER_DIR / "alertmanager.yml").read_text(),
                                         pagerduty_url=sink.url(PAGERDUTY_PATH), ticket_url=sink.url(TICKET_PATH),
                                         routing_key_file=key, group_wait=None if shipped_timings else "1s",
                                         group_interval=None if shipped_timings else "1s")
        with run_alertmanager(workdir, config_text=text) as am:
            yield Paging(alertmanager=am, sink=sink)
