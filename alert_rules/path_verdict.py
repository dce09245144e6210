"""Contract 11: whether a monitor's path is down, decided where its page is evaluated, so that a
shared outage is seen at most one evaluation late whatever order the rule groups run in.

Prometheus evaluates each rule group on its own (at an offset within its interval; ``promtool
test rules`` in random order). A verdict recorded in the ``route-monitor-paths`` group and read
by a monitor's group travels two hops: the path group may read a sibling's failing record one
evaluation late (the sibling's group runs after it), and the monitor's group may read the
verdict one more evaluation late (it runs before the path group). The per-monitor page's settle
(``path_rules.settle_ms``, its ``for:``) covers one evaluation of lag, and the page got through
about one shared outage in three. So:

- the shared group (``alert_rules.shared_failing``) records every monitor's failing series and,
  right after, one series per path on which each counts as failing
  (:data:`~alert_rules.names.FAILING_ON_PATH_RECORD`, absent while it is not: on a ``dns:`` path
  DNS errors only, elsewhere any failure but DNS errors);
- in the same group, the availability 1h/5m burning record counts those series of every monitor
  on each monitor's paths and compares the count with the path's threshold
  (:data:`~alert_rules.names.PATH_DOWN_THRESHOLD_RECORD`, ``max(K, ceil(F x monitors))``, from the
  path group: it changes only when monitors come or go), so the page it feeds (read one
  evaluation later at most) sees one consistent verdict; a latency page, in the monitor's own
  group, counts the same series, which reach it at most one evaluation late;
- the path group counts the same series, so ``SharedPathDown`` and the exclusion agree.

What it costs: one rule for every monitor (the per-path record), and the availability verdict
computed once per evaluation for every monitor (a count by path of the failing series: none
while nothing fails, one per failing (monitor, path) during an outage); a latency page selects
the same series for its own verdict. Selecting only the siblings on a monitor's own paths
would need its paths written into its rules, and paths follow the cluster as series precisely so
that a Route admitted by another shard never rewrites its rules.
"""

from __future__ import annotations

from decimal import Decimal

from alert_rules import names, promql


def _with(sel: str, matcher: str) -> str:
    """``metric{a="x"}`` plus one more matcher (``metric{a="x",path=~"dns:.*"}``)."""
    return f"{sel[:-1]},{matcher}}}" if not sel.endswith("{}") else f"{sel[:-1]}{matcher}}}"


def failing_on_paths(info_sel: str, failing_sel: str) -> str:
    """The (monitor, path) pairs on which the monitors of ``info_sel``/``failing_sel`` (the failing
    record, both reasons) count as failing: a DNS failure on ``dns:`` paths, any other on the others."""
    dns_path = f'{names.LABEL_PATH}=~"{names.DNS_PATH_PREFIX}.*"'
    other_path = f'{names.LABEL_PATH}!~"{names.DNS_PATH_PREFIX}.*"'
    anything = _with(failing_sel, f'{names.LABEL_REASON}=""')
    dns = _with(failing_sel, f'{names.LABEL_REASON}="{names.REASON_DNS_ERROR}"')
    not_dns = f"(\n{anything}\nunless on ({promql.BY_MONITOR})\n{dns}\n)"
    return (f"{promql.behind_failing(_with(info_sel, other_path), not_dns)}\nor\n"
            f"{promql.behind_failing(_with(info_sel, dns_path), dns)}")


def threshold(monitors_sel: str, min_monitors: int, min_ratio: Decimal) -> str:
    """``max(K, ceil(F x monitors))`` in integer steps (F as p/q: ``floor((p x m + q - 1) / q)``), so
    that ``failing >= threshold`` holds exactly when ``failing >= K`` and ``failing / m >= F``."""
    p, q = min_ratio.as_integer_ratio()
    scaled = monitors_sel if p == 1 else f"{p} * {monitors_sel}"
    share = scaled if q == 1 else f"floor(({scaled} + {q - 1}) / {q})"
    return f"clamp_min({share}, {min_monitors})"


def failing_count() -> str:
    """Failing monitors behind each path (only paths with at least one)."""
    return promql.count_by_path(names.FAILING_ON_PATH_RECORD)


def down(failing_sel: str, threshold_sel: str, monitors_sel: str) -> str:
    """1 where the failing monitors reach the path's threshold, 0 for every other path with monitors."""
    on = f"on ({names.LABEL_PATH})"
    return f"(\n{failing_sel}\n>= bool {on}\n{threshold_sel}\n)\nor {on}\n0 * {monitors_sel}"


def down_now() -> str:
    """The paths down at this very evaluation as the reader sees its siblings' failing series (for
    a monitor's own exclusion: ``promql.paths_down`` joins it with the monitor's paths)."""
    return f"(\n{failing_count()}\n>= on ({names.LABEL_PATH})\n{names.PATH_DOWN_THRESHOLD_RECORD}\n)"
