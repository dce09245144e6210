"""Remote vantages: ``route-monitor standalone --location NAME`` on machines outside the cluster,
their series federated into the Prometheus that runs the monitor's rules (real processes: two
standalones, the remote site's Prometheus scraping them, a central Prometheus federating from it
with the rules ``route-monitor rules`` prints, as ``docs/vantages.md`` shows).

- every series of a standalone given ``--location`` carries it; one without carries none;
- the central Prometheus records one error ratio per location, the monitor's ratio under the
  quorum and its reachability, for the locations that reach it by federation.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml

from alert_rules import names
from tests.support.net import free_port, wait_for
from tests.support.operator import Target
from tests.support.prometheus import Prometheus, child
from tests.support.standalone import Running

pytestmark = pytest.mark.prometheus

MANIFEST = """\
apiVersion: routemonitor.io/v1alpha1
kind: RouteMonitor
metadata: {{name: checkout, namespace: shop}}
spec:
  target: {{url: "http://{host}/health"}}
  probe: {{interval: 1s, vantages: 2, quorum: 2}}
  slo: {{availability: "99.9"}}
"""


@pytest.fixture
def target() -> Iterator[Target]:
    t = Target()
    yield t
    t.close()


def monitors(tmp_path: Path, target: Target, site: str) -> Path:
    """The same manifest, as each site keeps its own copy (and each standalone its own log)."""
    f = tmp_path / site
    f.mkdir()
    (f / "checkout.yaml").write_text(MANIFEST.format(host=target.host))
    return f


@pytest.fixture
def folder(tmp_path: Path, target: Target) -> Path:
    return monitors(tmp_path, target, "plain")


@pytest.fixture
def vantages(tmp_path: Path, target: Target) -> Iterator[dict[str, Running]]:
    running = {where: Running(monitors(tmp_path, target, where), "--location", where) for where in ("office", "lab")}
    try:
        yield {where: r.start() for where, r in running.items()}
    finally:
        for r in running.values():
            r.stop()


@contextmanager
def prometheus(workdir: Path, config: dict[str, object], rules: str = "") -> Iterator[Prometheus]:
    """A Prometheus with ``config`` (its ``rule_files``: ``workdir/rules/*.yml``, holding ``rules``)."""
    (workdir / "rules").mkdir(parents=True)
    if rules:
        (workdir / "rules" / "monitors.yml").write_text(rules)
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(
        {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
         "rule_files": [str(workdir / "rules" / "*.yml")], **config}))
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    cmd = ["prometheus", f"--config.file={workdir / 'prometheus.yml'}", f"--storage.tsdb.path={workdir / 'data'}",
           f"--web.listen-address=127.0.0.1:{port}", "--log.level=warn"]
    with child(cmd, log=workdir / "prometheus.log", ready_url=f"{url}/-/ready"):
        yield Prometheus(url=url, rules_dir=workdir / "rules")


def test_a_standalone_with_a_location_labels_every_series(vantages: dict[str, Running], folder: Path) -> None:
    office = vantages["office"]
    wait_for(lambda: office.value(names.PROBES_TOTAL, namespace="shop", monitor="checkout", location="office",
                                  result="success") is not None, timeout=30, what="the office's probes")
    per_monitor = [labels for (_, labels) in office.samples() if ("monitor", "checkout") in labels]
    assert per_monitor and all(("location", "office") in labels for labels in per_monitor)
    plain = Running(folder).start()
    try:
        wait_for(lambda: plain.value(names.PROBES_TOTAL, namespace="shop", monitor="checkout", result="success")
                 is not None, timeout=30, what="a standalone without --location: series without the label")
    finally:
        plain.stop()


def test_federated_locations_are_judged_under_the_quorum(tmp_path: Path, folder: Path,
                                                         vantages: dict[str, Running]) -> None:
    rules = subprocess.run([sys.executable, "-m", "route_monitor.cli.main", "rules", str(folder)],
                           capture_output=True, text=True, timeout=60, check=True).stdout
    standalones = [r.base.removeprefix("http://") for r in vantages.values()]
    remote_scrape = {"scrape_configs": [{"job_name": "route-monitor", "static_configs": [{"targets": standalones}]}]}
    with prometheus(tmp_path / "remote", remote_scrape) as remote:
        federate = {"scrape_configs": [{
            "job_name": "federate-remote", "honor_labels": True, "metrics_path": "/federate",
            "params": {"match[]": ['{__name__=~"route_monitor_.*"}']},
            "static_configs": [{"targets": [remote.url.removeprefix("http://")]}]}]}
        with prometheus(tmp_path / "central", federate, rules) as central:
            per_location = names.location_error_ratio_record("5m")
            wait_for(lambda: {r["metric"].get("location") for r in central.query(per_location)} == {"office", "lab"},
                     timeout=90, what="one error ratio per federated location")
            wait_for(lambda: bool(central.query(names.error_ratio_record("5m"))), timeout=30,
                     what="the monitor's ratio under the quorum")
            [under_quorum] = central.query(names.error_ratio_record("5m"))
            assert "location" not in under_quorum["metric"] and float(under_quorum["value"][1]) == 0.0
            assert central.query(names.reachability_record("5m"))
