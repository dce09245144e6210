"""What the replicas benchmark computes from the target's request log (``benchmarks.targets --log``)
and from the operators' ``/metrics``: pure functions, no clock, no processes.

- :class:`HitLog`: the request log read incrementally (path -> request times, unix seconds);
- :func:`missed_slots`: a monitor's probe slots with no probe (and with more than one), on the
  grid of its own last probe before a disruption;
- :func:`owner_moves`: how often each monitor changes owner over a sequence of member sets
  (the rendezvous hashing the operator uses);
- :func:`operator_samples`: the operator's own health series from a ``/metrics`` page, without
  parsing the thousands of per-monitor probe series (the benchmark process shares the CPUs);
- :func:`writes`: the operator's API writes by ``verb resource`` from ``route_monitor_kube_requests_total``;
  :func:`apiserver_requests`: the apiserver's own count, by verb, resource and code;
- :func:`member_changes`: when a replica saw the member set change, from its log.
"""

from __future__ import annotations

import datetime as dt
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from alert_rules import names
from benchmarks.measure import Samples, percentile
from route_monitor.operator.replicas.sharding import Key, owner_of

WRITE_VERBS = ("create", "update", "patch")
WRITTEN = (names.PLURAL, names.PLURAL + "/status", "prometheusrules", "events")
"""What a new monitor costs in writes: generated RouteMonitor, its status, its PrometheusRule, Events."""


class HitLog:
    """``<unix time> <path>`` lines, read from where the last :meth:`refresh` stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.hits: dict[str, list[float]] = {}
        self._offset = 0

    def refresh(self) -> HitLog:
        with open(self.path, "rb") as f:
            f.seek(self._offset)
            data = f.read()
        end = data.rfind(b"\n") + 1  # a line being written is read next time
        self._offset += end
        for line in data[:end].decode("latin-1").splitlines():
            at, _, path = line.partition(" ")
            self.hits.setdefault(path, []).append(float(at))
        return self

    def times(self, monitor: str) -> list[float]:
        return sorted(self.hits.get(f"/{monitor}", ()))

    def first_after(self, monitor: str, since: float) -> float | None:
        return next((t for t in self.times(monitor) if t > since), None)

    def last_before(self, monitor: str, until: float) -> float | None:
        return next((t for t in reversed(self.times(monitor)) if t < until), None)

    def count(self, start: float, end: float) -> int:
        return sum(1 for times in self.hits.values() for t in times if start <= t < end)


def missed_slots(times: Sequence[float], anchor: float, interval: float, end: float) -> tuple[int, int]:
    """(slots without a probe, slots with more than one) among the slots ``anchor + k * interval``
    (k >= 1) whose whole half-interval window ``[slot - interval/2, slot + interval/2)`` ends by
    ``end``. ``anchor`` is the monitor's last probe before the disruption: its grid (a monitor's
    phase is the same on every replica, up to a jitter below a second)."""
    slots = math.floor((end - anchor) / interval - 0.5)
    counts = [0] * max(slots, 0)
    for t in times:
        k = math.floor((t - anchor) / interval + 0.5)  # the slot whose window holds t
        if 1 <= k <= slots:
            counts[k - 1] += 1
    return sum(1 for c in counts if c == 0), sum(1 for c in counts if c > 1)


def max_gap(times: Sequence[float], start: float, end: float) -> float:
    """The longest time without a probe in ``[start, end]``."""
    edges = [start, *sorted(t for t in times if start <= t <= end), end]
    return max(b - a for a, b in itertools.pairwise(edges))


def owner_moves(keys: Iterable[Key], member_sets: Sequence[Iterable[str]]) -> dict[Key, int]:
    """Per monitor, how many times its owner changes from one member set to the next."""
    sets = [sorted(s) for s in member_sets]
    out: dict[Key, int] = {}
    for key in keys:
        owners = [owner_of(key, s) for s in sets]
        out[key] = sum(1 for a, b in itertools.pairwise(owners) if a != b)
    return out


OPERATOR_SERIES = frozenset({names.MONITORS, names.OWNED_MONITORS, names.MEMBERS, names.KUBE_REQUESTS_TOTAL})


def operator_samples(page: str) -> Samples:
    """The samples of :data:`OPERATOR_SERIES` on a ``/metrics`` page, keyed as :func:`measure.scrape` does."""
    kept = [line for line in page.splitlines()
            if line and not line.startswith("#") and line.split("{", 1)[0].split(" ", 1)[0] in OPERATOR_SERIES]
    out: Samples = {}
    for family in text_string_to_metric_families("\n".join(kept) + "\n"):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def writes(samples: Samples) -> dict[str, float]:
    """``verb resource`` -> count, of the writes a monitor costs, from one ``/metrics`` scrape."""
    out: dict[str, float] = {}
    for (name, labels), value in samples.items():
        lab = dict(labels)
        if name == names.KUBE_REQUESTS_TOTAL and lab.get("verb") in WRITE_VERBS and lab.get("resource") in WRITTEN:
            key = f"{lab['verb']} {lab['resource']}"
            out[key] = out.get(key, 0.0) + value
    return out


def lease_requests(samples: Samples) -> float:
    return sum(v for (name, labels), v in samples.items()
               if name == names.KUBE_REQUESTS_TOTAL and dict(labels).get("resource") == "leases")


def added(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float]:
    """``after - before`` per key, the keys that grew only."""
    return {k: after[k] - before.get(k, 0.0) for k in sorted(after) if after[k] - before.get(k, 0.0) > 0}


def spread(values: Sequence[float]) -> dict[str, float | int | None]:
    """p50 / p90 / p99 / max / n, rounded to 0.1 (seconds here)."""
    def r(v: float | None) -> float | None:
        return None if v is None else round(v, 1)

    return {"p50": r(percentile(values, 0.5)), "p90": r(percentile(values, 0.9)), "p99": r(percentile(values, 0.99)),
            "max": r(max(values, default=None)), "n": len(values)}


def histogram(values: Iterable[int]) -> dict[str, int]:
    """How many monitors had 0, 1, 2... (as strings, for JSON)."""
    out: dict[str, int] = {}
    for v in sorted(values):
        out[str(v)] = out.get(str(v), 0) + 1
    return out


def apiserver_requests(page: str, resources: Iterable[str]) -> dict[str, float]:
    """``VERB resource[/subresource] code`` -> count, from the apiserver's ``apiserver_request_total``."""
    wanted = set(resources)
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(
            "\n".join(line for line in page.splitlines() if line.startswith("apiserver_request_total{")) + "\n"):
        for s in family.samples:
            lab = s.labels
            if lab.get("resource") in wanted:
                sub = f"/{lab['subresource']}" if lab.get("subresource") else ""
                key = f"{lab.get('verb')} {lab['resource']}{sub} {lab.get('code')}"
                out[key] = out.get(key, 0.0) + s.value
    return out


MEMBERS_LINE = " live members: "


def member_changes(lines: Iterable[str]) -> list[tuple[float, frozenset[str]]]:
    """(unix time, live members) of each ``live members: a, b (were ...)`` line of an operator log
    (``%(asctime)s`` is local time, as ``datetime.timestamp`` reads a naive one)."""
    out = []
    for line in lines:
        if MEMBERS_LINE not in line:
            continue
        stamp = dt.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        members = line.split(MEMBERS_LINE, 1)[1].split(" (were", 1)[0]
        out.append((stamp, frozenset(m.strip() for m in members.split(","))))
    return out
