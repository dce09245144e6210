"""The command line as one consistent tool, run as a user runs it (subprocesses, exact lines).

Covers: help on every flag and positional of every command; every flag from
``ROUTE_MONITOR_<FLAG>`` (command line wins, a bad value is a usage error naming the variable,
switches, repeatable and required flags); durations with units and bare seconds; the operator's
deprecated ``--metrics-port`` (works, warns once); one error line ``route-monitor <command>:
error: ...`` and the exit codes (0 fine, 1 findings, 2 usage or nothing to do); ``check -o
json`` and ``--strict``; ``-`` reads standard input; ``doctor -o json``.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from route_monitor.cli import envflags
from route_monitor.cli.commands import doctor
from route_monitor.cli.doctor import Finding
from route_monitor.cli.main import build_parser, parse, subparsers

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
GOOD = ("apiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {name: web, namespace: shop}\n"
        "spec:\n  target: {url: 'https://web.example'}\n  slo: {availability: '99.9'}\n")
ELSEWHERE = ("apiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {name: api, namespace: shop}\n"
             "spec:\n  target: {route: {name: api}}\n  slo: {availability: '99.9'}\n")
BAD = ("apiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {name: bad, namespace: shop}\n"
       "spec:\n  target: {url: 'https://bad.example'}\n  slo: {availability: '150'}\n")


def cli(*argv: str, env: dict[str, str] | None = None, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ROUTE_MONITOR_")}
    return subprocess.run([sys.executable, "-m", "route_monitor.cli.main", *argv], env={**clean, **(env or {})},
                          input=stdin, capture_output=True, text=True, timeout=60)


def last_line(text: str) -> str:
    return text.rstrip("\n").splitlines()[-1]


def test_every_flag_and_positional_of_every_command_has_help() -> None:
    missing = [f"{name} {a.option_strings or a.dest}" for name, sub in subparsers(build_parser()).items()
               for a in sub._actions if not a.help or a.help == argparse.SUPPRESS]
    assert missing == []


def test_each_flag_has_its_own_variable() -> None:
    for name, sub in subparsers(build_parser()).items():
        names = [v for v in map(envflags.variable, sub._actions) if v is not None]
        assert len(names) == len(set(names)), name
        assert "ROUTE_MONITOR_CA_FILES" not in names, "taken by the probes' extra CA files"


def test_a_flag_from_its_variable_and_the_command_line_wins() -> None:
    env = {"ROUTE_MONITOR_PROMETHEUS_TIMEOUT": "10s", "ROUTE_MONITOR_LOG_LEVEL": "debug",
           "ROUTE_MONITOR_ALLOW_URL_TARGETS": "true", "ROUTE_MONITOR_RULE_LABEL": "release=kps, team=shop",
           "ROUTE_MONITOR_METRICS_ADDRESS": "127.0.0.1:9090"}
    args = parse(["operator"], env)
    assert (args.prometheus_timeout, args.log_level, args.allow_url_targets) == (10.0, "debug", True)
    assert args.rule_label == [("release", "kps"), ("team", "shop")]
    assert args.metrics_address == ("127.0.0.1", 9090)
    given = parse(["operator", "--prometheus-timeout", "20", "--log-level", "error", "--rule-label", "a=b"], env)
    assert (given.prometheus_timeout, given.log_level, given.rule_label) == (20.0, "error", [("a", "b")])
    assert parse(["operator"], {"ROUTE_MONITOR_LOG_LEVEL": ""}).log_level == "info", "empty is unset"
    defaults = parse(["operator"], {})
    assert (defaults.prometheus_timeout, defaults.rule_label, defaults.allow_url_targets) == (30.0, [], False)
    assert defaults.metrics_address == ("0.0.0.0", 8080)


def test_a_required_flag_may_come_from_its_variable() -> None:
    args = parse(["report", "--month", "2026-10"], {"ROUTE_MONITOR_PROMETHEUS_URL": "http://prometheus:9090"})
    assert args.prometheus_url == "http://prometheus:9090"


@pytest.mark.parametrize(("argv", "env", "line"), [
    pytest.param(["demo"], {"ROUTE_MONITOR_DURATION": "5x"},
                 "route-monitor demo: error: ROUTE_MONITOR_DURATION: '5x' is not a duration: use a number and a "
                 "unit (ms, s, m, h, d, w), e.g. 500ms, 30s, 1m30s, 6h, 30d", id="bad-duration"),
    pytest.param(["operator"], {"ROUTE_MONITOR_LOG_FORMAT": "yaml"},
                 "route-monitor operator: error: ROUTE_MONITOR_LOG_FORMAT: 'yaml': expected one of text, json",
                 id="bad-choice"),
    pytest.param(["operator"], {"ROUTE_MONITOR_ALLOW_URL_TARGETS": "maybe"},
                 "route-monitor operator: error: ROUTE_MONITOR_ALLOW_URL_TARGETS: 'maybe': expected true or false",
                 id="bad-switch"),
    pytest.param(["standalone", "x.yaml"], {"ROUTE_MONITOR_METRICS_ADDRESS": "localhost"},
                 "route-monitor standalone: error: ROUTE_MONITOR_METRICS_ADDRESS: 'localhost': expected HOST:PORT, "
                 "e.g. 127.0.0.1:8080 or :8080", id="bad-address"),
    pytest.param(["demo", "--duration", "5x"], {},
                 "route-monitor demo: error: argument --duration: '5x' is not a duration: use a number and a unit "
                 "(ms, s, m, h, d, w), e.g. 500ms, 30s, 1m30s, 6h, 30d", id="bad-duration-flag"),
])
def test_a_bad_value_is_a_usage_error_naming_the_variable_or_flag(argv: list[str], env: dict[str, str],
                                                                  line: str) -> None:
    done = cli(*argv, env=env)
    assert (done.returncode, last_line(done.stderr), done.stdout) == (2, line, "")
    assert done.stderr.startswith(f"usage: route-monitor {argv[0]} ")


@pytest.mark.parametrize(("text", "seconds"), [("5s", 5.0), ("5", 5.0), ("1.5", 1.5), ("1m30s", 90.0),
                                               ("500ms", 0.5)])
def test_durations_take_units_and_bare_seconds(text: str, seconds: float) -> None:
    assert parse(["demo", "--duration", text], {}).duration == seconds
    assert parse(["report", "--prometheus-url", "http://p:9090", "--prometheus-timeout", text],
                 {}).prometheus_timeout == seconds


def test_the_deprecated_metrics_port_still_works_and_warns_once(tmp_path: Path) -> None:
    args = parse(["operator", "--metrics-port", "9000"], {})
    from route_monitor.cli.commands.operator import metrics_address
    assert metrics_address(args) == ("0.0.0.0", 9000)
    (tmp_path / "kubeconfig").write_text("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
    done = cli("operator", "--metrics-port", "0", env={"KUBECONFIG": str(tmp_path / "kubeconfig")})
    assert done.returncode == 2, done.stderr
    warnings = [line for line in done.stderr.splitlines() if ": warning: " in line]
    assert warnings == ["route-monitor operator: warning: --metrics-port is deprecated: use --metrics-address :0"]


def test_check_nothing_to_monitor_is_exit_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("# nothing here\n")
    done = cli("check", str(tmp_path))
    assert (done.returncode, done.stdout, done.stderr) == (
        2, "", f"route-monitor check: error: nothing to monitor in {tmp_path}: no RouteMonitor and no annotated "
               "Route, HTTPRoute, Ingress or Service found\n")


def test_check_json_has_monitors_errors_and_warnings_with_every_key(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(GOOD + "---\n" + ELSEWHERE + "---\n" + BAD)
    done = cli("check", "-o", "json", str(tmp_path))
    assert done.returncode == 1 and done.stderr == "", done.stderr
    doc = json.loads(done.stdout)
    assert set(doc) == {"monitors", "errors", "warnings", "summary"}
    assert [(m["namespace"], m["name"], m["file"], m["document"]) for m in doc["monitors"]] == [
        ("shop", "api", str(tmp_path / "m.yaml"), 1), ("shop", "web", str(tmp_path / "m.yaml"), 0)]
    assert doc["summary"] == {"monitors": 2, "errors": len(doc["errors"]), "warnings": 1}
    keys = {"file", "document", "line", "object", "field", "message", "suggestion"}
    assert doc["errors"] and all(set(f) == keys for f in doc["errors"] + doc["warnings"])
    [error] = [f for f in doc["errors"] if f["field"] == "spec.slo.availability"]
    assert (error["file"], error["object"]) == (str(tmp_path / "m.yaml"), "RouteMonitor/shop/bad")
    [warning] = doc["warnings"]
    assert (warning["object"], warning["field"]) == ("RouteMonitor/shop/api", "spec.target")


def test_check_strict_fails_on_a_warning(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(ELSEWHERE)
    lenient = cli("check", str(tmp_path))
    strict = cli("check", "--strict", str(tmp_path))
    assert (lenient.returncode, strict.returncode) == (0, 1)
    assert last_line(strict.stderr) == "1 monitor(s), 0 error(s), 1 warning(s)"


def test_dash_reads_manifests_from_standard_input() -> None:
    done = cli("check", "-", stdin=GOOD)
    assert (done.returncode, done.stderr) == (0, "1 monitor(s), 0 error(s), 0 warning(s)\n")
    assert "target: https://web.example" in done.stdout
    rules = cli("rules", "-", stdin=GOOD)
    assert rules.returncode == 0 and "route-monitor/shop/web" in rules.stdout, rules.stderr
    bad = cli("check", "-", stdin=BAD)
    assert bad.returncode == 1 and bad.stderr.startswith("/dev/stdin:6: error: RouteMonitor/shop/bad: "), bad.stderr


def test_standalone_refuses_dash_it_rereads_its_files() -> None:
    done = cli("standalone", "-")
    assert (done.returncode, done.stderr) == (
        2, "route-monitor standalone: error: standalone re-reads its files when they change: give a file or "
           "folder, not -\n")


@pytest.mark.parametrize(("argv", "code", "line"), [
    pytest.param(["rules"], 2, "route-monitor rules: error: give a PATH of manifests (or --operator for "
                 "route-monitor's own alerts)", id="rules-no-path"),
    pytest.param(["report", "--prometheus-url", "http://127.0.0.1:1", "--month", "2026-13"], 2,
                 "route-monitor report: error: --month: '2026-13' is not a month (YYYY-MM, e.g. 2026-10)", id="report-bad-month"),
    pytest.param(["standalone", "x.yaml", "--service-url", "nope"], 2,
                 "route-monitor standalone: error: --service-url 'nope': expected "
                 "NAMESPACE/NAME=http(s)://HOST[:PORT]",
                 id="standalone-bad-service-url"),
])
def test_one_error_line_and_exit_code_in_every_command(argv: list[str], code: int, line: str) -> None:
    done = cli(*argv)
    assert (done.returncode, last_line(done.stderr)) == (code, line)


def test_doctor_json_lists_findings_and_counts_problems() -> None:
    out = io.StringIO()
    code = doctor.report([Finding("ok", "fine"), Finding("problem", "broken")], out, "json")
    assert code == 1
    assert json.loads(out.getvalue()) == {"findings": [{"level": "ok", "message": "fine"},
                                                       {"level": "problem", "message": "broken"}], "problems": 1}
    assert parse(["doctor", "-o", "json"], {}).output == "json"


def test_doctor_reads_rule_labels_from_args_or_the_variable() -> None:
    assert doctor.rule_labels_of({"args": ["operator", "--rule-label=release=kps"]}) == {"release": "kps"}
    assert doctor.rule_labels_of({"env": [{"name": "ROUTE_MONITOR_RULE_LABEL", "value": "release=kps,a=b"}]}) == {
        "release": "kps", "a": "b"}


def test_report_help_states_the_format_default() -> None:
    assert "markdown (default)" in " ".join(cli("report", "--help").stdout.split())


def test_doctor_without_a_cluster_is_one_error_line(tmp_path: Path) -> None:
    done = cli("doctor", env={"KUBECONFIG": str(tmp_path / "missing"), "KUBERNETES_SERVICE_HOST": ""})
    assert done.returncode == 2 and done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("route-monitor doctor: error: cannot read the cluster: "), line
