"""``route-monitor check`` on what users write wrong, run as a user runs it (a subprocess, in the
folder of the file), with each PyYAML loader (libyaml's and the pure-Python one): the exit code
and the exact lines on stderr.

- Nothing unknown passes silently: a misspelt field at any level of a RouteMonitor, a
  misspelt ``routemonitor.io/`` annotation, a kind or apiVersion route-monitor does not read
  is one error naming it, with the nearest known name.
- ``check`` accepts what the API server accepts: a number where the CRD says string, a scalar
  where it wants a list, a key written twice, an unquoted annotation value are errors.
- One bad document costs that document only: the good monitors beside it are checked, and the
  error names its line in the file (an unclosed quote, a tab, an unknown alias, deep nesting, a
  value no loader can build).
- One mistake, one error: an objective written as a ratio, a period shorter than the alert windows.
- ``rules`` refuses what ``check`` refuses, with the same lines.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from route_monitor.files import yamlread
from tests.support import standalone

RUN = ("import sys; from route_monitor.files import yamlread; yamlread.Loader = yamlread.LOADERS[sys.argv.pop(1)]; "
       "from route_monitor.cli.main import main; sys.exit(main(sys.argv[1:]))")
HEAD = "apiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {name: shop, namespace: web}\n"
GOOD = HEAD.replace("shop", "good") + "spec:\n  target: {url: 'https://good.example'}\n  slo: {availability: '99.9'}\n"
ROUTE = ("apiVersion: route.openshift.io/v1\nkind: Route\nmetadata:\n  name: web\n  namespace: shop\n"
         "  annotations:\n{annotations}spec: {{host: web.example.com, to: {{kind: Service, name: web}}}}\n")


def spec(body: str) -> str:
    """A RouteMonitor whose ``spec:`` is ``body`` (``spec:`` on line 4)."""
    return HEAD + "spec:\n" + body


def route(*annotations: str) -> str:
    """An annotated Route; its annotations start on line 7."""
    return ROUTE.format(annotations="".join(f"    {a}\n" for a in annotations))


@pytest.fixture(params=sorted(yamlread.LOADERS))
def loader(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run(loader: str, folder: Path, command: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", RUN, loader, command, *args], cwd=folder, capture_output=True,
                          text=True, timeout=60)


CASES = [
    # --- misspelt fields, at every level --------------------------------------------------------
    pytest.param(spec("  target: {url: 'https://shop.example'}\n  probe:\n    intervall: 30s\n"
                      "  slo: {availability: '99.9'}\n"),
                 ["m.yaml:7: error: RouteMonitor/web/shop: spec.probe.intervall: unknown field; did you mean "
                  "`interval`?"], id="probe-intervall"),
    pytest.param(spec("  target: {url: 'https://shop.example'}\n  alerts: {page: false}\n"
                      "  slo: {availability: '99.9'}\n"),
                 ["m.yaml:6: error: RouteMonitor/web/shop: spec.alerts: unknown field; did you mean `alerting`?"],
                 id="alerts-meant-alerting"),
    pytest.param(spec("  target: {url: 'https://shop.example'}\n  slo:\n    availabilty: '99.9'\n"),
                 ["m.yaml:7: error: RouteMonitor/web/shop: spec.slo.availabilty: unknown field; did you mean "
                  "`availability`?"], id="availabilty-one-error-not-also-required"),
    pytest.param("sepc: {}\n" + spec("  target: {url: 'https://shop.example'}\n  slo: {availability: '99.9'}\n"),
                 ["m.yaml:1: error: RouteMonitor/web/shop: sepc: unknown field; did you mean `spec`?"],
                 id="top-level"),
    pytest.param(HEAD.replace("namespace: web}", "namespace: web, anotations: {}}") +
                 "spec:\n  target: {url: 'https://shop.example'}\n  slo: {availability: '99.9'}\n",
                 ["m.yaml:3: error: RouteMonitor/web/shop: metadata.anotations: unknown field; did you mean "
                  "`annotations`?"], id="metadata"),
    pytest.param(spec("  target: {serivce: {name: web}}\n  slo: {availability: '99.9'}\n"),
                 ["m.yaml:5: error: RouteMonitor/web/shop: spec.target.serivce: unknown field; did you mean "
                  "`service`?"], id="target-serivce-one-error-not-also-no-target"),
    pytest.param(spec("  target: {url: 'https://shop.example'}\n  probe:\n    auth: {basic: {secretRef: {nmae: x}}}\n"
                      "    tls: {insecureSkipVerfy: true}\n  slo:\n    availability: '99.9'\n"
                      "    latency: {treshold: 1s, objective: '99'}\n  maintenance:\n"
                      "  - {schedule: '0 2 * * SUN', duration: 2h, timezone: UTC}\n"),
                 ["m.yaml:7: error: RouteMonitor/web/shop: spec.probe.auth.basic.secretRef.nmae: unknown field; "
                  "did you mean `name`?",
                  "m.yaml:8: error: RouteMonitor/web/shop: spec.probe.tls.insecureSkipVerfy: unknown field; did you "
                  "mean `insecureSkipVerify`?",
                  "m.yaml:11: error: RouteMonitor/web/shop: spec.slo.latency.treshold: unknown field; did you mean "
                  "`threshold`?",
                  "m.yaml:13: error: RouteMonitor/web/shop: spec.maintenance[0].timezone: unknown field; did you "
                  "mean `timeZone`?"], id="deep-typos-all-at-once"),
    pytest.param(spec("  target: {url: 'https://shop.example'}\n  slo: {availability: '99.9'}\n  colour: blue\n"),
                 ["m.yaml:7: error: RouteMonitor/web/shop: spec.colour: unknown field; known: alerting, maintenance, "
                  "path, paths, paused, probe, slo, target"], id="no-near-name-lists-the-known-ones"),
    pytest.param("apiVersion: v1\nkind: List\nitems:\n- " + GOOD.replace("\n", "\n  ").rstrip() + "\n- " +
                 spec("  target: {url: 'https://shop.example'}\n  slo: {availability: '99.9', perod: 30d}\n")
                 .replace("\n", "\n  ").rstrip() + "\n",
                 ["m.yaml:15: error: RouteMonitor/web/shop: spec.slo.perod: unknown field; did you mean `period`?"],
                 id="in-a-list"),
    # --- annotations, kinds, versions ------------------------------------------------------------
    pytest.param(route("routemonitor.io/slo: '99.9'", "routemonitor.io/intreval: 1m",
                       "routemonitor.io/latency-threshhold: 300ms", "routemonitor.io/latency-slo: '99'"),
                 ["m.yaml:8: error: Route/shop/web: metadata.annotations[routemonitor.io/intreval]: unknown "
                  "annotation; did you mean `routemonitor.io/interval`?",
                  "m.yaml:9: error: Route/shop/web: metadata.annotations[routemonitor.io/latency-threshhold]: "
                  "unknown annotation; did you mean `routemonitor.io/latency-threshold`?"],
                 id="misspelt-annotations"),
    pytest.param(route("routemonitor.io/slo: '99.9'").replace("kind: Route", "kind: Rout"),
                 ["m.yaml:2: error: Rout/shop/web: kind: Rout (route.openshift.io/v1) is not a kind route-monitor "
                  "monitors; did you mean `Route`? it reads RouteMonitor (routemonitor.io/v1alpha1), "
                  "Route (route.openshift.io/v1), HTTPRoute, GRPCRoute, TCPRoute (gateway.networking.k8s.io/v1), "
                  "Ingress (networking.k8s.io/v1), Service (v1)"],
                 id="kind-rout"),
    pytest.param(spec("  target: {url: 'https://shop.example'}\n  slo: {availability: '99.9'}\n")
                 .replace("kind: RouteMonitor", "kind: Routemonitor"),
                 ["m.yaml:2: error: Routemonitor/web/shop: kind: Routemonitor (routemonitor.io/v1alpha1) is not a "
                  "kind route-monitor monitors; did you mean `RouteMonitor`? it reads RouteMonitor "
                  "(routemonitor.io/v1alpha1), Route (route.openshift.io/v1), HTTPRoute, GRPCRoute, TCPRoute "
                  "(gateway.networking.k8s.io/v1), Ingress (networking.k8s.io/v1), Service (v1)"],
                 id="kind-routemonitor-lowercase-m"),
    pytest.param(spec("  target: {url: 'https://shop.example'}\n  slo: {availability: '99.9'}\n")
                 .replace("v1alpha1", "v1"),
                 ["m.yaml:1: error: RouteMonitor/web/shop: apiVersion: RouteMonitor is served as "
                  "routemonitor.io/v1alpha1 only, not as routemonitor.io/v1; did you mean `routemonitor.io/v1alpha1`?"],
                 id="apiversion-v1"),
    pytest.param(route("routemonitor.io/slo: 99.9"),
                 ['m.yaml:7: error: metadata.annotations[routemonitor.io/slo]: expected a string, got 99.9; quote '
                  'it: "99.9"'],
                 id="unquoted-annotation"),
    # --- what the API server refuses -------------------------------------------------------------
    pytest.param(spec("  target: {url: 'https://shop.example'}\n  slo:\n    availability: 99.9\n"),
                 ["m.yaml:7: error: RouteMonitor/web/shop: spec.slo.availability: expected a string (got 99.9)"],
                 id="availability-a-number"),
    pytest.param(spec("  target: {url: 'https://shop.example'}\n  probe:\n    expectedStatus: 200\n"
                      "  slo: {availability: '99.9'}\n"),
                 ["m.yaml:7: error: RouteMonitor/web/shop: spec.probe.expectedStatus: expected a list (got 200)"],
                 id="expected-status-not-a-list"),
    pytest.param(spec("  target: {url: 'https://shop.example'}\n  paused: 'no'\n  slo: {availability: '99.9'}\n"),
                 ["m.yaml:6: error: RouteMonitor/web/shop: spec.paused: expected true or false (got 'no')"],
                 id="paused-a-string"),
    pytest.param(spec("  target: {url: 'https://shop.example'}\n  slo: {availability: '99.9'}\n"
                      "  slo: {availability: '99.5'}\n"),
                 ["m.yaml:7: error: RouteMonitor/web/shop: spec.slo: duplicate key: already set on line 6 (the API "
                  "server refuses a key written twice)"],
                 id="duplicate-key"),
    # --- one mistake, one error ------------------------------------------------------------------
    pytest.param(route("routemonitor.io/slo: '0.999'"),
                 ["m.yaml:7: error: Route/shop/web: metadata.annotations[routemonitor.io/slo]: 0.999% is a ratio, "
                  "not a percent: the objective is written in percent; did you mean 99.9?"], id="slo-a-ratio"),
    pytest.param(spec("  target: {url: 'https://shop.example'}\n  slo: {availability: '99.9', period: 1m}\n"),
                 ["m.yaml:6: error: RouteMonitor/web/shop: spec.slo.period: the 1h/5m page, 6h/30m page, 1d/2h "
                  "ticket and 3d/6h ticket windows are longer than the 1m SLO period; use a period of at least 3d"],
                 id="period-1m"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_check_names_each_mistake_once_with_its_line(tmp_path: Path, loader: str, text: str,
                                                     expected: list[str]) -> None:
    (tmp_path / "m.yaml").write_text(text)
    done = run(loader, tmp_path, "check", "m.yaml")
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert lines[:-1] == expected, done.stderr
    assert "Traceback" not in done.stderr


BAD_DOCUMENTS = [
    pytest.param("  target: {url: \"https://shop.example}\n  slo: {availability: '99.9'}\n",
                 "m.yaml:12: error: not valid YAML: while scanning a quoted scalar found unexpected end of stream",
                 id="unclosed-quote"),
    pytest.param("  target: {url: \"https://shop.example}\n  slo: {availability: \"99.9\"}\n",
                 "m.yaml:13: error: not valid YAML: while parsing a flow mapping (opened on line 12) ",
                 id="unclosed-quote-in-a-flow-mapping"),
    pytest.param("  target:\n\turl: https://shop.example\n",
                 "m.yaml:13: error: not valid YAML: a tab character; YAML indents with spaces only", id="tab"),
    pytest.param("  target: {url: 'https://shop.example'}\n  path: \"/\x01\"\n",
                 "m.yaml:13: error: not valid YAML: ", id="control-character"),
    pytest.param("  target: *nowhere\n",
                 "m.yaml:12: error: not valid YAML: unknown alias *nowhere (no anchor &nowhere before it in this "
                 "document)", id="unknown-alias"),
    pytest.param("  target: {url: 'https://shop.example'}\n  slo: {availability: '99.9'}\n  alerting: {labels: "
                 + "[" * 1500 + "]" * 1500 + "}\n",
                 {"libyaml": "m.yaml:14: error: nested too deeply to read",  # where libyaml stops
                  "python": "m.yaml:8: error: nested too deeply to read"},  # out of stack: the document's line
                 id="nested-1500"),
    pytest.param("  target: {url: 'https://shop.example'}\n  slo: {availability: !!float ninety-nine}\n",
                 "m.yaml:13: error: RouteMonitor/web/shop: spec.slo.availability: a value cannot be read: "
                 "'ninety-nine' is not a valid !!float (could not convert string to float: 'ninety-nine')",
                 id="unbuildable-float"),
]


@pytest.mark.parametrize(("body", "expected"), BAD_DOCUMENTS)
def test_a_bad_document_costs_only_itself_and_names_its_line(tmp_path: Path, loader: str, body: str,
                                                             expected: str | dict[str, str]) -> None:
    """GOOD (lines 1-6), the bad document (``spec:`` on line 11), GOOD again under another name."""
    text = GOOD + "---\n" + spec(body) + "---\n" + GOOD.replace("good", "fine")
    (tmp_path / "m.yaml").write_text(text)
    done = run(loader, tmp_path, "check", "m.yaml")
    assert done.returncode == 1, done.stderr
    *errors, summary = done.stderr.splitlines()
    assert summary == "2 monitor(s), 1 error(s), 0 warning(s)", done.stderr
    prefix = expected if isinstance(expected, str) else expected[loader]
    assert len(errors) == 1 and errors[0].startswith(prefix), done.stderr
    assert "web/good:" in done.stdout and "web/fine:" in done.stdout


def test_a_value_no_loader_can_build_is_one_error_naming_the_annotation(tmp_path: Path, loader: str) -> None:
    """Once a crash: ``AttributeError`` in the reader on a timestamp of five-digit year."""
    (tmp_path / "m.yaml").write_text(route("routemonitor.io/slo: !!timestamp 99999-01-01"))
    done = run(loader, tmp_path, "check", "m.yaml")
    assert done.returncode == 1 and done.stderr.splitlines()[0] == (
        "m.yaml:7: error: Route/shop/web: metadata.annotations[routemonitor.io/slo]: a value cannot be read: "
        "'99999-01-01' is not a valid !!timestamp"), done.stderr


def test_a_plain_date_stays_text_as_kubectl_reads_it(tmp_path: Path, loader: str) -> None:
    (tmp_path / "m.yaml").write_text(spec("  target: {url: 'https://shop.example'}\n  slo: {availability: '99.9'}\n"
                                          "  maintenance:\n  - {start: 2026-12-01T02:00:00Z, end: 2026-12-01}\n"))
    done = run(loader, tmp_path, "check", "m.yaml")
    assert done.returncode == 1 and done.stderr.splitlines()[0].startswith(
        "m.yaml:8: error: RouteMonitor/web/shop: spec.maintenance[0].end: "), done.stderr


def test_rules_refuses_what_check_refuses_with_the_same_lines(tmp_path: Path, loader: str) -> None:
    """A Route whose second ``kind:`` made it a Service without ports once failed ``check`` and
    passed ``rules``, which then wrote rules for a monitor that would never exist."""
    (tmp_path / "m.yaml").write_text(route("routemonitor.io/slo: '99.9'") + "kind: Service\n")
    checked, rules = run(loader, tmp_path, "check", "m.yaml"), run(loader, tmp_path, "rules", "m.yaml")
    line = ("m.yaml:9: error: Route/shop/web: kind: duplicate key: already set on line 2 (the API server refuses "
            "a key written twice)")
    assert checked.returncode == rules.returncode == 1 and rules.stdout == ""
    assert checked.stderr.splitlines()[0] == line and rules.stderr.splitlines()[0] == line, rules.stderr


def test_standalone_says_the_same_and_still_probes_a_monitor_with_an_unknown_annotation(tmp_path: Path) -> None:
    """As the operator does (a Warning event, the monitor made from the known annotations):
    the error line ``check`` prints, and the monitor runs."""
    paused = GOOD.replace("namespace: web}", "namespace: web, annotations: {routemonitor.io/pasued: 'true'}}")
    (tmp_path / "m.yaml").write_text(paused)
    line = ("m.yaml:3: error: RouteMonitor/web/good: metadata.annotations[routemonitor.io/pasued]: unknown "
            "annotation; did you mean `routemonitor.io/paused`?")
    assert run(sorted(yamlread.LOADERS)[0], tmp_path, "check", "m.yaml").stderr.splitlines()[0] == line
    with standalone.started(tmp_path) as lines:
        assert any(f"{tmp_path}/{line}" in printed for printed in lines), "".join(lines)
        assert any("monitoring web/good" in printed for printed in lines), "".join(lines)
