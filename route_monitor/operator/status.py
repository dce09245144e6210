"""RouteMonitor status (Contract 2), computed from what the operator knows; pure.

Four conditions, each with a reason and a message: TargetResolved, Probing, RulesApplied and
Ready (all three). ``lastProbe`` is the last probe result *as last written*: the supervisor
writes status when a condition changes and when the probe result changes (success <-> failure,
or a different failure reason), at a bounded rate, never per probe. With ``--prometheus-url``
also ``slo`` and a fifth condition, BudgetExhausted (Contract 10, ``operator.slo_state``), which
Ready does not depend on.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from alert_rules import durations
from route_monitor.operator.plan import Unresolved
from route_monitor.probe.result import Exclusion, ProbeResult
from route_monitor.slo import state as slo_state
from route_monitor.targets.resolve import ResolvedTarget

CONDITION_TYPES = ("Ready", "TargetResolved", "Probing", "RulesApplied")
EXCLUDED = {Exclusion.MAINTENANCE: ("InMaintenance", "in a maintenance window: results do not count in the SLO"),
            Exclusion.PAUSED: ("Paused", "paused: results do not count in the SLO"),
            Exclusion.WARMUP: ("WarmingUp", "warming up: results do not count until the first success or "
                                            "the end of warm-up"),
            Exclusion.BLIND: ("ProberBlind", "the probing replica's own network is failing (its canary is "
                                             "unreachable too): this network failure does not count in the SLO")}
"""Contract 9: ``Probing`` stays True (probes go on) with these reasons while results are excluded
(Contract 11 adds ``ProberBlind``)."""
PROBE_MESSAGE_MAX = 512
"""Characters of ``lastProbe.message`` at most: the CRD's ``maxLength``
(``tests/cluster/test_crd.py`` keeps them equal)."""


@dataclass(frozen=True)
class Observed:
    """Everything the status of one monitor is made from."""

    generation: int
    invalid: str | None = None
    """Why the spec is invalid (the operator's own validation), or None."""
    target: ResolvedTarget | Unresolved | None = None
    interval_ms: int = 0
    rules_error: str | None = None
    rules_reason: str = "ApplyFailed"
    """Reason of ``RulesApplied=False`` when ``rules_error`` is set (``NameConflict``, ``ApplyFailed``)."""
    rules_name: str = ""
    finding_errors: tuple[str, ...] = ()
    """The generator's error findings (e.g. a page that can never fire): rules applied, alerting broken."""
    finding_warnings: tuple[str, ...] = ()
    last_result: ProbeResult | None = None
    excluded_now: Exclusion | None = None
    """Without a last result (a restart, a takeover): why results would not count now, as far as
    the spec, the clock and the status already written tell (:mod:`~route_monitor.operator.exclusion`)."""
    probed_by: str | None = None
    """The replica that probes the monitor (``status.probedBy``); None with one replica and no Leases."""
    next_maintenance: float | None = None
    """Start of the next maintenance window (epoch seconds), if any (``status.nextMaintenance``)."""
    slo: slo_state.SloStatus | None = None
    """The SLO read back from Prometheus (``--prometheus-url``): ``status.slo`` and ``BudgetExhausted``."""
    slo_enabled: bool = False
    protocol: str | None = None
    """What the probes speak and why (``status.protocol``: ``grpc, from the Service's port name
    grpc-api``, ``http (default)``), as ``check`` prints it."""
    """Reading SLOs is on: until a first read, the previous ``status.slo`` and condition are kept."""
    fewer_locations: str | None = None
    """Contract 12: fewer locations probe than ``spec.probe.vantages`` asks, in words (``Probing``)."""


def _cond(type_: str, ok: bool, reason: str, message: str) -> dict[str, Any]:
    return {"type": type_, "status": "True" if ok else "False", "reason": reason, "message": message}


def conditions(obs: Observed) -> list[dict[str, Any]]:
    if obs.invalid is not None:
        return [_cond(t, False, "InvalidSpec", obs.invalid) for t in CONDITION_TYPES]
    if isinstance(obs.target, ResolvedTarget):
        resolved = _cond("TargetResolved", True, "Resolved", f"{obs.target.kind} {obs.target.name}: {obs.target.url}")
        every = durations.format_ms(obs.interval_ms) if obs.interval_ms > 0 else "?"
        probing = _cond("Probing", True, "Probing", f"probing {obs.target.url} every {every}")
        excluded = obs.last_result.excluded if obs.last_result is not None else obs.excluded_now
        if excluded is not None:
            reason, why = EXCLUDED[excluded]
            probing = _cond("Probing", True, reason, f"{probing['message']}; {why}")
        if obs.fewer_locations is not None:
            reason = "FewerLocations" if probing["reason"] == "Probing" else probing["reason"]
            probing = _cond("Probing", True, reason, f"{probing['message']}; {obs.fewer_locations}")
    else:
        unresolved = obs.target or Unresolved("Unknown", "not resolved yet")
        resolved = _cond("TargetResolved", False, unresolved.reason, unresolved.message)
        probing = _cond("Probing", False, "TargetUnresolved", "not probing: the target has no URL")
    if obs.rules_error is None and obs.finding_errors:
        rules = _cond("RulesApplied", False, "ObjectiveNotAlertable", f"PrometheusRule {obs.rules_name} applied, "
                      "but " + "; ".join(obs.finding_errors))
    elif obs.rules_error is None:
        warned = f"; warnings: {'; '.join(obs.finding_warnings)}" if obs.finding_warnings else ""
        rules = _cond("RulesApplied", True, "Applied", f"PrometheusRule {obs.rules_name} applied{warned}")
    else:
        rules = _cond("RulesApplied", False, obs.rules_reason, obs.rules_error)
    failing = [c for c in (resolved, rules, probing) if c["status"] != "True"]
    ready = (_cond("Ready", False, failing[0]["reason"], failing[0]["message"]) if failing
             else _cond("Ready", True, "Ready", "probing and alerting rules applied"))
    return [ready, resolved, probing, rules]


def timestamp(epoch: float) -> str:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def last_probe(result: ProbeResult | None) -> dict[str, Any] | None:
    if result is None:
        return None
    out: dict[str, Any] = {"time": timestamp(result.timestamp), "result": "success" if result.success else "failure"}
    if result.reason is not None:
        out["reason"] = result.reason.value
    if result.detail:
        out["message"] = result.detail[:PROBE_MESSAGE_MAX]
    if result.excluded is not None:
        out["excluded"] = result.excluded.value
    return out


def result_outcome(result: ProbeResult | None) -> tuple[str, str, str] | None:
    """``outcome(last_probe(result))`` without building the status dict: called once per probe."""
    if result is None:
        return None
    return ("success" if result.success else "failure", result.reason.value if result.reason is not None else "",
            result.excluded.value if result.excluded is not None else "")


def outcome(probe: Mapping[str, Any] | None) -> tuple[str, str, str] | None:
    """What counts as a change of the probe result: (result, reason, excluded); not time or message."""
    if not probe:
        return None
    return (str(probe.get("result", "")), str(probe.get("reason", "")), str(probe.get("excluded", "")))


def build(obs: Observed, previous: Mapping[str, Any] | None, now: float,
          probe: Mapping[str, Any] | None) -> dict[str, Any]:
    """The whole status; ``lastTransitionTime`` is kept from ``previous`` while a condition's
    status is unchanged. ``probe`` is the lastProbe to write (the supervisor decides when)."""
    before = {c.get("type"): c for c in (previous or {}).get("conditions") or []}
    slo = slo_state.fields(obs.slo) if obs.slo is not None else None
    computed = conditions(obs) + ([slo_state.condition(obs.slo)] if obs.slo is not None else [])
    conds = []
    for c in computed:
        old = before.get(c["type"])
        same = old is not None and old.get("status") == c["status"] and old.get("lastTransitionTime")
        c["lastTransitionTime"] = old["lastTransitionTime"] if same and old else timestamp(now)
        c["observedGeneration"] = obs.generation
        conds.append(c)
    if obs.slo is None and obs.slo_enabled:  # not read yet (a restart): keep what is there
        slo = (previous or {}).get("slo")
        conds += [dict(c) for t, c in before.items() if t == slo_state.CONDITION]
    url = obs.target.url if isinstance(obs.target, ResolvedTarget) else None
    out: dict[str, Any] = {"observedGeneration": obs.generation, "url": url, "conditions": conds,
                           "lastProbe": probe, "slo": slo}
    if obs.probed_by is not None:
        out["probedBy"] = obs.probed_by
    if isinstance(obs.target, ResolvedTarget):
        out["paths"] = list(obs.target.paths)
        if obs.protocol is not None:
            out["protocol"] = obs.protocol
    if obs.next_maintenance is not None:
        out["nextMaintenance"] = timestamp(obs.next_maintenance)
    return out


def significant(status: Mapping[str, Any] | None) -> object:
    """The part of a status whose change must be written: everything but timestamps and the
    probe message."""
    if not status:
        return None
    conds = tuple((c.get("type"), c.get("status"), c.get("reason"), c.get("message"), c.get("observedGeneration"))
                  for c in status.get("conditions") or [])
    slo = {k: v for k, v in (status.get("slo") or {}).items() if k != "updated"} or None
    return (status.get("observedGeneration"), status.get("url"), conds, outcome(status.get("lastProbe")),
            status.get("probedBy"), status.get("nextMaintenance"), slo, tuple(status.get("paths") or ()),
            status.get("protocol"))


WRITTEN_ELSEWHERE = frozenset({"locations"})
"""Top-level status fields each owner of a monitor writes for itself
(:mod:`~route_monitor.operator.locationstatus`), never cleared by the first owner's patch."""


def merge_patch(previous: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any]:
    """``new`` as a JSON merge patch over ``previous``: a key that ``new`` no longer has is sent as
    null, else the API server would keep it (a success under the failure's ``lastProbe.reason``,
    a ``nextMaintenance`` after the windows were removed). Lists are replaced whole."""
    out = dict(new)
    for k, old in (previous or {}).items():
        if k in WRITTEN_ELSEWHERE:
            continue
        if k not in out:
            out[k] = None
        elif isinstance(old, Mapping) and isinstance(out[k], Mapping):
            out[k] = merge_patch(old, out[k])
    return out
