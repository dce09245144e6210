"""``route-monitor report`` (Contract 10): per monitor and per namespace, over a past range; pure.

From instant queries at the range's end (``alert_rules.readback``): probes by result
(``increase`` of the raw counters over exactly the range, resets handled), the objective last
recorded in the range, and the route-monitor alerts that were firing in it. Per monitor:

- availability = 1 - failed / probes over the range;
- budget used = (failed / probes) / (1 - objective): 100% spends the range's whole budget;
- full-outage minutes = failed / probes x the range in minutes (the outage that would have
  failed as many probes);
- the alerts that fired (name, severity, windows).

A monitor probed from several locations (Contract 12) is judged as its alerts and budget judge
it: its failed probes are those under the quorum (its 5-minute tiles summed over the range), and
its *reachability* (every probe of every location, the exact counters) is printed beside it.
A monitor that had rules but no probes in the range says so. A namespace's total is over the
probes of all its monitors; its budget used weighs each monitor's probes by its own budget.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from itertools import groupby
from typing import Any

from alert_rules import names
from route_monitor.reports.reportrange import ReportRange
from route_monitor.slo.promapi import Sample

Key = tuple[str, str]
NO_DATA = "no probe results in this range"


@dataclass(frozen=True)
class Row:
    namespace: str
    monitor: str
    """Empty for a namespace's total."""
    minutes: float
    probes: float
    failed: float
    objective: Decimal | None = None
    """Percent; None when no objective was recorded in the range (or, on a total, objectives differ)."""
    allowed: float | None = None
    """Failed probes the objective(s) allowed over the range."""
    alerts: tuple[str, ...] = ()
    locations: int = 0
    """Several vantages: how many locations reported in the range (0: one vantage)."""
    reachability: float | None = None
    """Several vantages: good / all probes of every location, no quorum."""

    @property
    def error_ratio(self) -> float | None:
        return self.failed / self.probes if self.probes > 0 else None

    @property
    def availability(self) -> float | None:
        return None if self.error_ratio is None else 1 - self.error_ratio

    @property
    def budget_used(self) -> float | None:
        return self.failed / self.allowed if self.allowed and self.probes > 0 else None

    @property
    def outage_minutes(self) -> float | None:
        return None if self.error_ratio is None else self.error_ratio * self.minutes


def _key(s: Sample) -> Key:
    return (s.labels.get(names.LABEL_NAMESPACE, ""), s.labels.get(names.LABEL_MONITOR, ""))


def _alert(labels: Mapping[str, str]) -> str:
    windows = "/".join(w for w in (labels.get(names.LABEL_LONG), labels.get(names.LABEL_SHORT)) if w)
    return " ".join(p for p in (labels.get("alertname", ""), labels.get(names.LABEL_SEVERITY), windows) if p)


def _quorum(key: Key, total: float, failed: float, tiles: Mapping[Key, tuple[float, float]],
            where: Mapping[Key, float]) -> tuple[float, float, int, float | None]:
    """(probes, failed, locations, reachability): under the quorum for a monitor of several
    vantages with tiles in the range, else the counters as they are."""
    probes, bad = tiles.get(key, (0.0, 0.0))
    if key not in where or probes <= 0:
        return total, failed, 0, None
    return probes, min(bad, probes), int(where[key]), (1 - failed / total if total > 0 else None)


def rows(rng: ReportRange, *, probes: Sequence[Sample], objectives: Sequence[Sample],
         alerts: Sequence[Sample], quorum_failed: Sequence[Sample] = (), quorum_probes: Sequence[Sample] = (),
         locations: Sequence[Sample] = ()) -> list[Row]:
    """Monitor rows sorted by namespace and name, each namespace followed by its total."""
    minutes = rng.seconds / 60
    ok: dict[Key, float] = {}
    bad: dict[Key, float] = {}
    for s in probes:
        (bad if s.labels.get(names.LABEL_RESULT) == names.RESULT_FAILURE else ok)[_key(s)] = max(s.value, 0.0)
    objective = {_key(s): Decimal(str(round(s.value * 100, 6))).normalize() for s in objectives}
    q_bad = {_key(s): max(s.value, 0.0) for s in quorum_failed}
    tiles = {_key(s): (max(s.value, 0.0), q_bad.get(_key(s), 0.0)) for s in quorum_probes}
    where = {_key(s): s.value for s in locations}
    fired: dict[Key, set[str]] = {}
    for s in alerts:
        fired.setdefault(_key(s), set()).add(_alert(s.labels))
    out: list[Row] = []
    keys = sorted(set(ok) | set(bad) | set(objective) | set(fired))
    for namespace, group in groupby(keys, key=lambda k: k[0]):
        monitors = []
        for key in group:
            total, failed, k, reach = _quorum(key, ok.get(key, 0.0) + bad.get(key, 0.0), bad.get(key, 0.0),
                                              tiles, where)
            obj = objective.get(key)
            allowed = total * float((100 - obj) / 100) if obj is not None else None
            monitors.append(Row(namespace, key[1], minutes, total, failed, obj, allowed,
                                tuple(sorted(fired.get(key, ()))), k, reach))
        out += monitors
        objs = {m.objective for m in monitors if m.probes > 0}
        allowances = [m.allowed for m in monitors if m.probes > 0]
        out.append(Row(namespace, "", minutes, sum(m.probes for m in monitors), sum(m.failed for m in monitors),
                       objs.pop() if len(objs) == 1 else None,
                       sum(a for a in allowances if a is not None) if allowances and None not in allowances else None,
                       tuple(a for m in monitors for a in m.alerts)))
    return out


def _pct(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value * 100:.{digits}f}"


def _num(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"


COLUMNS = ("namespace", "monitor", "objective_percent", "availability_percent", "budget_used_percent",
           "full_outage_minutes", "probes", "failed", "alerts_fired", "note")


def _locations_note(r: Row) -> str:
    if not r.locations:
        return ""
    return f"{r.locations} locations, under the quorum; reachability {_pct(r.reachability, 4)}%"


def _cells(r: Row) -> list[str]:
    note = NO_DATA if r.probes <= 0 else _locations_note(r)
    return [r.namespace, r.monitor or "(total)", "" if r.objective is None else str(r.objective),
            _pct(r.availability, 4), _pct(r.budget_used, 2), _num(r.outage_minutes, 2), f"{r.probes:.0f}",
            f"{r.failed:.0f}", "; ".join(r.alerts) if r.monitor else str(len(r.alerts)), note]


def markdown(rng: ReportRange, table: Sequence[Row]) -> str:
    head = ["Namespace", "Monitor", "Objective %", "Availability %", "Budget used %", "Full-outage minutes",
            "Probes", "Failed", "Alerts fired", "Note"]
    lines = [f"# SLO report: {rng.describe()}", ""]
    if not table:
        return "\n".join([*lines, "No monitor had probe results or rules in this range.", ""])
    lines += ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in table:
        cells = [c.replace("|", "\\|") for c in _cells(r)]
        if not r.monitor:
            cells = [f"**{c}**" if c else c for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join([*lines, ""])


def to_csv(rng: ReportRange, table: Sequence[Row]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["range_start", "range_end", *COLUMNS])
    start, end = (t.isoformat(timespec="seconds") for t in (rng.start, rng.end))
    for r in table:
        w.writerow([start, end, *_cells(r)])
    return buf.getvalue()


def _json_row(r: Row) -> dict[str, Any]:
    def rnd(v: float | None) -> float | None:
        return None if v is None else round(v, 8)
    return {"objective": None if r.objective is None else str(r.objective),
            "availability": rnd(r.availability), "budgetUsed": rnd(r.budget_used),
            "fullOutageMinutes": rnd(r.outage_minutes), "probes": round(r.probes, 3), "failed": round(r.failed, 3),
            "alertsFired": list(r.alerts), "noData": r.probes <= 0,
            **({"locations": r.locations, "reachability": rnd(r.reachability)} if r.locations else {})}


def to_json(rng: ReportRange, table: Sequence[Row]) -> str:
    namespaces: list[dict[str, Any]] = []
    for namespace, group in groupby(table, key=lambda r: r.namespace):
        items = list(group)
        namespaces.append({"namespace": namespace, "total": _json_row(items[-1]),
                           "monitors": [{"monitor": r.monitor, **_json_row(r)} for r in items[:-1]]})
    doc = {"range": {"start": rng.start.isoformat(timespec="seconds"), "end": rng.end.isoformat(timespec="seconds"),
                     "timezone": rng.zone, "seconds": rng.seconds, "clipped": rng.clipped},
           "namespaces": namespaces}
    return json.dumps(doc, indent=2) + "\n"


RENDER = {"markdown": markdown, "csv": to_csv, "json": to_json}
