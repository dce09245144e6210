"""Golden files: the generated output for representative monitors, committed and reviewed.

Covers: ``route-monitor rules`` (both formats) and ``route-monitor check`` for the bundled
``examples/`` and for ``tests/golden/inputs/strict.yaml`` (a strict objective at a coarse
interval, 28d and 7d periods, page or ticket off, labels and annotations), plus one
``promtool test rules`` fixture. Regenerating changes nothing; after an intended change,
regenerate with ``UPDATE_GOLDEN=1 .venv/bin/pytest tests/unit/alert_rules/test_generator_golden.py`` and review
the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from alert_rules import promtool_tests
from alert_rules.render import to_yaml, with_header
from route_monitor.cli.commands.rules import load
from route_monitor.cli.main import main
from tests.support import promtool

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = Path(__file__).resolve().parents[2] / "golden"
INPUTS = {"examples": ROOT / "examples", "strict": GOLDEN / "inputs" / "strict.yaml"}
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    main(list(argv))
    out, _ = capsys.readouterr()
    return out


def compare(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"{path} is missing: run with UPDATE_GOLDEN=1"
    assert text == path.read_text(encoding="utf-8"), f"{name} changed: review, then UPDATE_GOLDEN=1"


@pytest.mark.parametrize("inputs", list(INPUTS))
@pytest.mark.parametrize(("kind", "argv"), [
    pytest.param("rules.yml", ("rules",), id="prometheus"),
    pytest.param("prometheusrule.yaml", ("rules", "--format", "prometheusrule"), id="prometheusrule"),
    pytest.param("check.txt", ("check",), id="check"),
])
def test_golden(capsys: pytest.CaptureFixture[str], inputs: str, kind: str, argv: tuple[str, ...]) -> None:
    compare(f"{inputs}.{kind}", run(capsys, *argv, str(INPUTS[inputs])))


def test_golden_promtool_fixture() -> None:
    [spec] = [m for m in load([str(INPUTS["examples"])]).monitors if m.name == "checkout-api"]
    doc = promtool_tests(spec.slo(), "examples.checkout-api.rules.yml")
    compare("examples.checkout-api.test.yml", with_header(to_yaml(doc)))


@pytest.mark.prometheus
@pytest.mark.parametrize("inputs", list(INPUTS))
def test_golden_rule_files_pass_promtool(inputs: str) -> None:
    result = promtool.check_rules(GOLDEN / f"{inputs}.rules.yml")
    assert result.ok, result.output
