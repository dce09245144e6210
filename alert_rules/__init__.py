"""Pure SLO rule generation: objective + monitor -> Prometheus recording and alerting rules.

Nothing in this package does I/O or knows Kubernetes, HTTP or a metrics client (kept by the
import-linter contract in ``.importlinter``). The pipeline, one module per stage:

``windows`` (period -> windows and burn factors, numbers only) -> ``sli`` and ``promql``
(PromQL from named templates) -> ``rules`` and ``alerts`` (rule groups as plain data) ->
``render`` (YAML, PrometheusRule objects). ``findings`` and ``explain`` describe what the
rules mean for a monitor; ``fixtures`` writes ``promtool test rules`` documents for them.
"""

from alert_rules.explain import explain
from alert_rules.findings import Finding, findings
from alert_rules.fixtures import promtool_tests
from alert_rules.render import prometheus_rule_file, prometheus_rule_object
from alert_rules.rules import rule_groups

__all__ = [
    "Finding",
    "explain",
    "findings",
    "prometheus_rule_file",
    "prometheus_rule_object",
    "promtool_tests",
    "rule_groups",
]
