"""Every generated alert's ``runbook_url`` points at a section of ``docs/runbooks.md`` that exists.

GitHub renders a ``## Heading`` with the anchor ``#heading`` in lower case; the generator links
``DEFAULT_RUNBOOK_BASE#<alert name in lower case>``.
"""

from __future__ import annotations

import re
from decimal import Decimal
from pathlib import Path

import pytest

from alert_rules import names, rule_groups
from alert_rules.model import LatencyObjective, MonitorSLO, Objective

RUNBOOKS = Path(__file__).resolve().parents[3] / "docs" / "runbooks.md"


def anchors() -> set[str]:
    return {h.strip().lower() for h in re.findall(r"^## (.+)$", RUNBOOKS.read_text(), re.M)}


def generated_runbook_urls() -> set[str]:
    slo = MonitorSLO("shop", "checkout", Objective(Decimal("99.9"), latency=LatencyObjective(500, Decimal("99"))))
    return {r["annotations"][names.ANNOTATION_RUNBOOK_URL]
            for g in rule_groups(slo) for r in g["rules"] if "alert" in r}


@pytest.mark.parametrize("alert", [names.ALERT_ERROR_BUDGET_BURN, names.ALERT_LATENCY_BUDGET_BURN,
                                   names.ALERT_PROBES_ABSENT, names.ALERT_CERTIFICATE_EXPIRY,
                                   names.ALERT_PARTIALLY_UNREACHABLE, names.ALERT_RULES_INCOMPLETE])
def test_every_alert_has_a_runbook_section(alert: str) -> None:
    assert names.slug(alert) in anchors()


def test_generated_runbook_urls_point_at_existing_sections() -> None:
    urls = generated_runbook_urls()
    assert len(urls) == 5, urls
    for url in urls:
        base, _, anchor = url.partition("#")
        assert base == names.DEFAULT_RUNBOOK_BASE and base.endswith("docs/runbooks.md")
        assert anchor in anchors(), url
