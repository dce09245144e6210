"""route-monitor's own alerts ("monitor the monitor", issue 12 section 2):

- the generated promtool fixtures pass: operator down pages once with the number of blind SLOs,
  not while one replica is still up, not when there are no SLOs; reconcile errors, schedule lag,
  skipped probes, monitors not Ready and throttled status writes fire on their series and stay
  quiet below their thresholds;
- ``deploy/base/operator-rules.yaml`` (PrometheusRule) and ``deploy/prometheus/route-monitor-operator.rules.yml``
  (plain rules) are exactly what ``route-monitor rules --operator`` prints; the PrometheusRule
  holds no shared SLI group (the operator writes those itself: one writer per series), the plain
  file all of them;
- every operator alert has a runbook section; the PrometheusRule is not labelled as an object the
  operator manages (it is the user's to apply, so the operator never writes over it).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from alert_rules import names, operator_alerts, shared

ROOT = Path(__file__).resolve().parents[3]
CLI = [sys.executable, "-m", "route_monitor.cli.main"]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, cwd=ROOT, timeout=60)


@pytest.mark.prometheus
def test_generated_promtool_fixtures_pass(tmp_path: Path) -> None:
    assert cli("rules", "--operator", "--tests", str(tmp_path)).returncode == 0
    result = subprocess.run(["promtool", "test", "rules", "route-monitor-operator.test.yml"], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    tests = yaml.safe_load((tmp_path / "route-monitor-operator.test.yml").read_text())["tests"]
    fired = {t["alertname"] for g in tests for t in g["alert_rule_test"] if t["exp_alerts"]}
    assert fired == set(operator_alerts.ALERTS), "every alert is shown firing at least once"


@pytest.mark.parametrize(("path", "args"), [
    pytest.param("deploy/base/operator-rules.yaml", ("--format", "prometheusrule", "--no-shared-slis"),
                 id="prometheusrule"),
    pytest.param("deploy/prometheus/route-monitor-operator.rules.yml", ("--format", "prometheus"), id="plain"),
])
def test_shipped_files_are_the_generated_ones(path: str, args: tuple[str, ...]) -> None:
    result = cli("rules", "--operator", *args)
    assert result.returncode == 0, result.stderr
    assert (ROOT / path).read_text() == result.stdout, f"regenerate: route-monitor rules --operator {' '.join(args)} -o {path}"


def shipped_groups(path: str) -> set[str]:
    text = (ROOT / path).read_text()
    docs = [d for d in yaml.safe_load_all(text) if d]
    return {g["name"] for d in docs for g in (d.get("spec") or d)["groups"]}


def test_only_the_plain_file_ships_the_shared_groups() -> None:
    """The operator writes the shared groups itself (route-monitor.slis); a copy in deploy/ would
    be a second writer of every shared series."""
    assert not shipped_groups("deploy/base/operator-rules.yaml") & set(shared.GROUPS)
    assert set(shared.GROUPS) <= shipped_groups("deploy/prometheus/route-monitor-operator.rules.yml")
    bundled = ROOT / "bundle/manifests/route-monitor-operator-alerts_monitoring.coreos.com_v1_prometheusrule.yaml"
    assert not {g["name"] for g in yaml.safe_load(bundled.read_text())["spec"]["groups"]} & set(shared.GROUPS)


@pytest.mark.prometheus
def test_plain_rules_pass_promtool_check() -> None:
    result = subprocess.run(["promtool", "check", "rules", str(ROOT / "deploy/prometheus/route-monitor-operator.rules.yml")],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_operator_alert_has_a_runbook_section_and_link() -> None:
    anchors = {h.strip().lower() for h in re.findall(r"^## (.+)$", (ROOT / "docs/runbooks.md").read_text(), re.M)}
    rules = [rule for group in operator_alerts.operator_rule_groups() for rule in group["rules"] if "alert" in rule]
    assert len(rules) >= 5, [r["alert"] for r in rules]
    for rule in rules:
        assert names.slug(rule["alert"]) in anchors
        assert rule["annotations"][names.ANNOTATION_RUNBOOK_URL].endswith("#" + names.slug(rule["alert"]))


def test_the_shipped_rule_is_not_mistaken_for_a_generated_one() -> None:
    rule = yaml.safe_load((ROOT / "deploy/base/operator-rules.yaml").read_text().split("---", 1)[1])
    assert names.LABEL_MANAGED_BY not in rule["metadata"]["labels"]


def test_operator_flags_reach_the_rules() -> None:
    out = cli("rules", "--operator", "--job", "rm-prod").stdout
    assert 'up{job="rm-prod"}' in out and 'job="route-monitor"' not in out
    assert cli("rules", "--operator", "examples/").returncode == 2
    assert cli("rules").returncode == 2
