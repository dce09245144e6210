"""PromQL as named template functions: every expression the generator emits is built here.

Nothing else in the package concatenates PromQL. Values that come from users (namespace and
monitor names, which land in label matchers) only ever pass through :func:`string_literal`.
"""

from __future__ import annotations

import re
from decimal import Decimal

from alert_rules import names

BY_MONITOR = ", ".join(names.IDENTITY_LABELS)


_PLAIN = re.compile(r'[^"\\\x00-\x1f\x7f]*')
"""Text that needs no escape (nearly every namespace and monitor name): quoted as it is."""


def string_literal(value: str) -> str:
    """A PromQL double-quoted string holding exactly ``value`` (Go ``strconv.Quote`` escapes)."""
    if _PLAIN.fullmatch(value):
        return f'"{value}"'
    out = []
    for ch in value:
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def selector(metric: str, matchers: tuple[tuple[str, str], ...]) -> str:
    """``metric{a="x",b="y"}`` with equality matchers in the given order (``metric`` without any)."""
    if not matchers and metric:
        return metric
    inner = ",".join(f"{k}={string_literal(v)}" for k, v in matchers)
    return f"{metric}{{{inner}}}"


def monitor_matchers(namespace: str, monitor: str, *extra: tuple[str, str]) -> tuple[tuple[str, str], ...]:
    return ((names.LABEL_NAMESPACE, namespace), (names.LABEL_MONITOR, monitor), *extra)


def number(value: Decimal | int | float) -> str:
    """A literal without float noise: ``Decimal('0.0144')`` -> ``0.0144`` (10 significant digits)."""
    d = value if isinstance(value, Decimal) else Decimal(str(value))
    d = d.normalize() if d == 0 else round(d, max(0, 10 - d.adjusted() - 1)).normalize()
    text = format(d, "f")
    return text


def by_monitor(expr: str) -> str:
    """Aggregate away scrape labels (``instance``, ``pod``, ``result``...): one series per monitor."""
    return f"sum by ({BY_MONITOR}) ({expr})"


def by_monitor_max(expr: str) -> str:
    """One series per monitor of a value every series of it carries alike (a gauge exported by each
    location probing it)."""
    return f"max by ({BY_MONITOR}) ({expr})"


def rate(sel: str, window: str) -> str:
    return f"rate({sel}[{window}])"


def increase(sel: str, window: str) -> str:
    return f"increase({sel}[{window}])"


def tile_increase(sel: str, tile: str) -> str:
    """Exact increase over the last ``tile``: the counter now minus ``tile`` ago, per series.

    Unlike ``increase()``, nothing is extrapolated, so consecutive tiles telescope: their sum
    is exactly the increase over the whole span (``increase`` would stretch each tile's samples
    to its edges and drop the jump between two tiles). A reset makes the difference negative:
    clamped to 0, that tile loses the restarted prober's few probes, in numerator and
    denominator alike. A series that appears or goes stale within the tile (a prober moving to
    another pod) has no pair and is left out of that tile."""
    return f"clamp_min({sel} - {sel} offset {tile}, 0)"


def counted_increases(sel: str, window: str) -> str:
    """How many scrapes within ``window`` saw the counter rise: an integer, never extrapolated.

    ``changes()`` also counts the drop of a counter reset (a prober restart); ``resets()``
    counts exactly those drops, so the difference counts increases only. A new series (the
    target moved to another prober pod) starts at 0 and adds nothing until it rises."""
    return f"changes({sel}[{window}]) - resets({sel}[{window}])"


def tiles_sum(record_sel: str, window: str, tile: str) -> str:
    """Sum of ``tile``-long tiles over ``window``, read at steps aligned to ``tile`` boundaries.

    The subquery picks one tile per aligned step whatever the rule group's evaluation cadence,
    so tiles neither overlap nor double-count (see ``alert_rules.rules`` for the design)."""
    return f"sum_over_time({record_sel}[{window}:{tile}])"


def sparse_tiles_sum(record_sel: str, window: str, tile: str) -> str:
    """Sum of ``tile``-long tiles recorded once per ``tile`` (at any offset within it) over ``window``.

    :func:`tiles_sum` finds a tile at each aligned step only when the tile is at most the query
    lookback (5 minutes by default) old there: true of 5-minute tiles, never of hourly ones
    recorded at a group's offset within the hour (a step on the hour would find the last one only
    for groups evaluated in the last 5 minutes of the hour). Here each step takes the last tile
    within the ``tile`` before it: exactly one per step in a real Prometheus (one evaluation per
    ``tile``), and the step's own in ``promtool test rules`` (every group at every step)."""
    return f"sum_over_time(last_over_time({record_sel}[{tile}])[{window}:{tile}])"


def ratio(numerator: str, denominator: str) -> str:
    return f"{numerator}\n/\n{denominator}"


def one_minus_ratio(numerator: str, denominator: str) -> str:
    return f"1 - (\n{numerator}\n/\n{denominator}\n)"


def all_of(*conditions: str) -> str:
    """Conditions on series with the same (namespace, monitor) labels; the value is the first's."""
    return "\nand\n".join(conditions)


def unless(expr: str, condition: str) -> str:
    """``expr`` for the monitors where ``condition`` has no series (matched on namespace, monitor)."""
    return f"(\n{expr}\n)\nunless on ({BY_MONITOR})\n(\n{condition}\n)"


def any_of(*exprs: str) -> str:
    return "\nor\n".join(exprs)


def max_over(sel: str, window: str) -> str:
    return f"max_over_time({sel}[{window}])"


def above(sel: str, threshold: Decimal) -> str:
    return f"{sel} > {number(threshold)}"


def at_least(sel: str, count: int) -> str:
    return f"{sel} >= {count}"


def expires_within(gauge_sel: str, seconds: int) -> str:
    """Seconds left until the earliest reported expiry, when below ``seconds`` (negative: expired)."""
    return f"min by ({BY_MONITOR}) ({gauge_sel}) - time() < {seconds}"


def constant(value: Decimal | int | float) -> str:
    return f"vector({number(value)})"


def alerts_selector(alertname_regex: str, matchers: tuple[tuple[str, str], ...]) -> str:
    """``ALERTS{alertname=~"...",...}``: the series Prometheus keeps for pending/firing alerts."""
    inner = ",".join([f"alertname=~{string_literal(alertname_regex)}",
                      *(f"{k}={string_literal(v)}" for k, v in matchers)])
    return f"ALERTS{{{inner}}}"


def count_over(sel: str, window: str) -> str:
    return f"count_over_time({sel}[{window}])"


# --- Contract 11: paths and shared-path outages --------------------------------------------------
BY_MONITOR_PATH = f"{BY_MONITOR}, {names.LABEL_PATH}"


def monitor_paths(info_sel: str) -> str:
    """One series per (monitor, path), whichever replica exported it (a takeover may show two)."""
    return f"max by ({BY_MONITOR_PATH}) ({info_sel})"


def paths_down(info_sel: str, down_sel: str, window: str | None = None) -> str:
    """The monitor's paths that are down now (``window`` None) or were within ``window``."""
    down = f"{down_sel} == 1" if window is None else f"max_over_time({down_sel}[{window}]) == 1"
    return f"{monitor_paths(info_sel)}\nand on ({names.LABEL_PATH})\n({down})"


def unless_path_down(expr: str, info_sel: str, down_sel: str, failing_sel: str, window: str,
                     down_now: str | None = None) -> str:
    """``expr``, except for a monitor behind a path that is down (``down_sel``, or the paths of
    ``down_now`` as well), or was within ``window`` while the monitor is no longer failing (its
    ratios still hold the shared outage's failures)."""
    now = paths_down(info_sel, down_sel)
    if down_now is not None:
        now = f"{now}\nor\n{monitor_paths(info_sel)}\nand on ({names.LABEL_PATH})\n{down_now}"
    recent = f"(\n{paths_down(info_sel, down_sel, window)}\nunless on ({BY_MONITOR})\n{failing_sel}\n)"
    return f"(\n{expr}\n)\nunless on ({BY_MONITOR})\n(\n{now}\nor\n{recent}\n)"


def unless_seen_down(expr: str, info_sel: str, down_now: str) -> str:
    """``expr``, except for a monitor behind one of the paths of ``down_now`` (a verdict taken in
    the reader's own group: ``alert_rules.path_verdict``)."""
    seen = f"{monitor_paths(info_sel)}\nand on ({names.LABEL_PATH})\n{down_now}"
    return f"(\n{expr}\n)\nunless on ({BY_MONITOR})\n(\n{seen}\n)"


def count_by_path(expr: str) -> str:
    return f"count by ({names.LABEL_PATH}) (\n{expr}\n)"


def behind_failing(info_sel: str, failing_sel: str) -> str:
    """(monitor, path) pairs whose monitor is failing."""
    return f"(\n{monitor_paths(info_sel)}\nand on ({BY_MONITOR})\n{failing_sel}\n)"


def shared_path_down(failing_sel: str, down_sel: str, hold: str, flap_window: str, flap_changes: int) -> str:
    """The path is down, or was within ``hold`` (a short flap stays one incident), or went down
    again within ``flap_window`` (a flapping path stays one incident until it is quiet that long).
    The value is the most monitors seen failing together within ``flap_window``."""
    return (f"max_over_time({failing_sel}[{flap_window}])\nand on ({names.LABEL_PATH})\n(\n"
            f"max_over_time({down_sel}[{hold}]) == 1\nor\nchanges({down_sel}[{flap_window}]) >= {flap_changes}\n)")
