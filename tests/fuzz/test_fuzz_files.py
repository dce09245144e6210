"""Property: ``check`` and ``rules`` survive any file (issue 15): raw bytes, and the examples'
YAML with generated edits (lines dropped, duplicated or cut, bytes flipped). Whatever the file
holds, the command returns 0 or 1 and every problem is one line naming the file; no exception
escapes (hypothesis reports any). And the fields of a Route, Service, Ingress or HTTPRoute that
target resolution reads, each given a wrong shape: an error naming that object and field.
"""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import event, given, settings
from hypothesis import strategies as st

from route_monitor.cli.main import main
from route_monitor.files import yamlread
from tests.support.cluster import ROOT
from tests.support.fuzzing import examples

EXAMPLE_TEXTS = [p.read_bytes() for p in sorted((ROOT / "examples").glob("*.yaml"))]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    lines = draw(st.sampled_from(EXAMPLE_TEXTS)).splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "dup", "cut", "flip", "indent", "insert"]))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "cut":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif op == "flip":
            line = bytearray(lines[i] or b" ")
            line[draw(st.integers(0, len(line) - 1))] = draw(st.integers(0, 255))
            lines[i] = bytes(line)
        elif op == "indent":
            lines[i] = b"  " + lines[i]
        else:
            lines.insert(i, draw(st.sampled_from([b"- 1\n", b"&a [*a]\n", b"!!python/object:os.system x\n",
                                                  b"metadata: 5\n", b"  name: a/b\n", b"items: [1]\n",
                                                  b"kind: List\n", b"---\n", b"\t\n"])))
    return b"".join(lines)


def run(command: str, content: bytes) -> tuple[int, str]:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "fuzz.yaml"
        path.write_bytes(content)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main([command, str(path)])
        assert code in (0, 1, 2), err.getvalue()[-2000:]  # 2: nothing to monitor
        event(f"exit {code}")
        for line in err.getvalue().splitlines():
            if ": error: " in line:
                assert line.startswith((str(path), f"route-monitor {command}: error: nothing to monitor in {path}")) \
                    and len(line) <= 1200, line[:2000]
        return code, err.getvalue()


@settings(max_examples=examples(150))
@given(content=st.one_of(st.binary(max_size=400), mutated()), command=st.sampled_from(["check", "rules"]),
       loader=st.sampled_from(sorted(yamlread.LOADERS)))
def test_any_file_gives_an_exit_code_and_one_line_problems(content: bytes, command: str, loader: str) -> None:
    """With either PyYAML loader (libyaml's and the pure-Python one word errors differently)."""
    default = yamlread.Loader
    yamlread.Loader = yamlread.LOADERS[loader]
    try:
        run(command, content)
    finally:
        yamlread.Loader = default


# Where target resolution reads a source object, and the shape each field must have.
SHAPES: dict[str, tuple[str, str, dict[str, str]]] = {
    "Route": ("route.openshift.io/v1", "{host: web.example.com, path: /, tls: {termination: edge}}",
              {"spec": "mapping", "spec.host": "string", "spec.path": "string", "spec.tls": "mapping",
               "status": "mapping", "status.ingress": "list"}),
    "Service": ("v1", "{ports: [{name: http, port: 8080}]}",
                {"spec": "mapping", "spec.ports": "list", "spec.ports[0]": "mapping", "spec.ports[0].name": "string",
                 "spec.ports[0].port": "port"}),
    "Ingress": ("networking.k8s.io/v1", "{rules: [{host: web.example.com, http: {paths: [{path: /, pathType: "
                "Prefix}]}}], tls: [{hosts: [web.example.com]}]}",
                {"spec.rules": "list", "spec.rules[0]": "mapping", "spec.rules[0].host": "string",
                 "spec.rules[0].http": "mapping", "spec.rules[0].http.paths": "list",
                 "spec.rules[0].http.paths[0].path": "string", "spec.tls": "list", "spec.tls[0].hosts": "list",
                 "spec.tls[0].hosts[0]": "string"}),
    "HTTPRoute": ("gateway.networking.k8s.io/v1", "{parentRefs: [{name: edge, sectionName: web}], hostnames: "
                  "[web.example.com], rules: [{matches: [{path: {type: PathPrefix, value: /}}]}]}",
                  {"spec.hostnames": "list", "spec.hostnames[0]": "string", "spec.parentRefs": "list",
                   "spec.parentRefs[0]": "mapping", "spec.parentRefs[0].sectionName": "string",
                   "spec.parentRefs[0].port": "port", "spec.rules": "list", "spec.rules[0].matches": "list",
                   "spec.rules[0].matches[0].path": "mapping", "spec.rules[0].matches[0].path.value": "string"}),
}
GATEWAY_FIELDS = {"spec": "mapping", "spec.listeners": "list", "spec.listeners[0]": "mapping",
                  "spec.listeners[0].name": "string", "spec.listeners[0].protocol": "string",
                  "spec.listeners[0].port": "port"}
_SCALARS = st.one_of(st.integers(-5, 70000), st.booleans(), st.floats(allow_nan=False), st.text(max_size=8))
WRONG = {
    "string": st.one_of(st.integers(), st.booleans(), st.lists(st.text(max_size=3), max_size=2),
                        st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=2)),
    "list": st.one_of(_SCALARS, st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=2)),
    "mapping": st.one_of(_SCALARS, st.lists(st.integers(), min_size=1, max_size=2)),
    "port": st.one_of(st.text(max_size=5), st.floats(allow_nan=False), st.booleans(), st.integers(max_value=0),
                      st.integers(min_value=65536), st.lists(st.integers(), max_size=2)),
}


def put(obj: Any, path: str, value: Any) -> None:
    """Set ``spec.rules[0].host`` (a field path as errors name it) in ``obj``."""
    steps = [int(s) if s.isdigit() else s for s in re.findall(r"[^.\[\]]+", path)]
    for step in steps[:-1]:
        obj = obj[step]
    obj[steps[-1]] = value


@st.composite
def wrong_sources(draw: st.DrawFn) -> tuple[str, str, bytes]:
    """A source object (annotated, or named by a RouteMonitor), or the Gateway an HTTPRoute reads,
    with one field of a wrong shape: (``Kind/ns/name`` of the object that has it, the field, the file)."""
    kind = draw(st.sampled_from([*sorted(SHAPES), "Gateway"]))
    gateway = {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
               "metadata": {"name": "edge", "namespace": "ns"},
               "spec": {"listeners": [{"name": "web", "protocol": "HTTP", "port": 80}]}}
    wrong, fields = gateway, GATEWAY_FIELDS
    if kind == "Gateway":  # an HTTPRoute of the right shape reads it
        kind, ref = "HTTPRoute", "Gateway/ns/edge"
    else:
        fields, ref = SHAPES[kind][2], f"{kind}/ns/web"
    api_version, spec, _ = SHAPES[kind]
    obj = {"apiVersion": api_version, "kind": kind, "metadata": {"name": "web", "namespace": "ns"},
           "spec": yaml.safe_load(spec), "status": {"ingress": []} if kind == "Route" else {}}
    field = draw(st.sampled_from(sorted(fields)))
    put(obj if ref.endswith("/web") else wrong, field, draw(WRONG[fields[field]]))
    text = yaml.safe_dump(obj)
    if draw(st.booleans()):
        obj["metadata"]["annotations"] = {"routemonitor.io/slo": "99.9"}
        text = yaml.safe_dump(obj)
    else:
        target = {"Route": "route", "Service": "service", "Ingress": "ingress", "HTTPRoute": "httpRoute"}[kind]
        text += ("---\napiVersion: routemonitor.io/v1alpha1\nkind: RouteMonitor\nmetadata: {name: m, namespace: ns}\n"
                 f"spec:\n  target: {{{target}: {{name: web}}}}\n  slo: {{availability: '99.9'}}\n")
    return ref, field, (text + "---\n" + yaml.safe_dump(gateway)).encode()


@settings(max_examples=examples(150))
@given(case=wrong_sources())
def test_a_source_field_of_a_wrong_shape_is_an_error_naming_that_field(case: tuple[str, str, bytes]) -> None:
    """Route, Service, Ingress and HTTPRoute fields that target resolution reads: host a list,
    ports not a list, a port that is a string...: ``check`` fails with a line naming the object
    and that field, never a traceback or an error on ``spec.target`` alone."""
    ref, field, content = case
    code, err = run("check", content)
    event(field)
    assert code == 1, err
    assert f": error: {ref}: {field}: " in err, err
