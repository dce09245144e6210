"""Detection and reset time of the generated alerts, against the burn-rate math and the reference operator.

    .venv/bin/python -m benchmarks.detection [--objective 99.9] [--interval 30s] [--eval 30s]

For each scenario (a probe outcome timeline at the probe interval, after days of healthy history),
the same synthetic data is fed to ``promtool test rules`` twice: as our probe counters
(``route_monitor_probes_total{result}``) under the rules ``alert_rules.prometheus_rule_file``
generates, and as a blackbox ``probe_success`` gauge under rules of the reference
route-monitor-operator's shape (four window pairs, ``1-(sum(sum_over_time)/sum(count_over_time)) >
F*(1-SLO)`` on both windows, "enough probes" guards, ``for`` 2m/15m/1h/3h). Every evaluation
step in the interesting span is asserted to have no alert; promtool's failure report then lists
exactly the steps at which something fired, which gives the firing timeline per severity.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import yaml

from alert_rules import durations
from alert_rules import names as n
from benchmarks import detection_math as math

NS, MON, URL = "shop", "checkout", "https://checkout.example.com/"
HISTORY_S = 3 * 86_400  # the 3d ticket window holds only healthy history when the outage starts


@dataclass(frozen=True)
class Scenario:
    name: str
    outage_s: int
    """How long the failures last (0: until the end of the observed span)."""
    failure_every: int = 1
    """1: every probe fails (hard outage); k: one probe in k fails."""
    observe_s: int = 3_600
    """How long after the outage starts to look for alerts."""


SCENARIOS = (
    Scenario("hard outage, 5 min", 300),
    Scenario("hard outage, 15 min", 900, observe_s=2 * 3_600),
    Scenario("hard outage, 60 min", 3_600, observe_s=3 * 3_600),
    Scenario("2% of probes fail (steady)", 0, failure_every=50, observe_s=6 * 3_600),
    Scenario("0.5% of probes fail (steady)", 0, failure_every=200, observe_s=17 * 3_600),
)


def outcomes(s: Scenario, step_s: int) -> list[bool]:
    """True = success, one per probe, history first."""
    history = [True] * (HISTORY_S // step_s)
    span = s.observe_s // step_s
    failing = s.outage_s // step_s if s.outage_s else span
    bad = [not (i < failing and (i + 1) % s.failure_every == 0) for i in range(span)]
    return history + bad


def our_series(ok: Sequence[bool]) -> list[dict[str, str]]:
    good = bad = 0
    goods, bads = [], []
    for o in ok:
        good, bad = good + o, bad + (not o)
        goods.append(str(good))
        bads.append(str(bad))
    sel = f'{n.LABEL_NAMESPACE}="{NS}", {n.LABEL_MONITOR}="{MON}", instance="prober:8080", job="route-monitor"'
    return [{"series": f'{n.PROBES_TOTAL}{{{sel}, {n.LABEL_RESULT}="{r}"}}', "values": " ".join(v)}
            for r, v in ((n.RESULT_SUCCESS, goods), (n.RESULT_FAILURE, bads))]


def reference_series(ok: Sequence[bool]) -> list[dict[str, str]]:
    return [{"series": f'probe_success{{RouteMonitorUrl="{URL}", instance="blackbox:9115"}}',
             "values": " ".join("1" if o else "0" for o in ok)}]


REFERENCE_PAIRS = (("critical", "1h", "5m", "14.4", "2m"), ("critical", "6h", "30m", "6", "15m"),
                   ("warning", "1d", "2h", "3", "1h"), ("warning", "3d", "6h", "1", "3h"))


def reference_rules(objective: Decimal, scrape_s: int) -> str:
    """The reference operator's rule shape (written from its description, for comparison)."""
    sel = f'RouteMonitorUrl="{URL}"'
    ratio = f"{objective / 100}"

    def burn(w: str, f: str) -> str:
        return (f"1 - (sum(sum_over_time(probe_success{{{sel}}}[{w}])) / sum(count_over_time(probe_success{{{sel}}}"
                f"[{w}]))) > ({f} * (1 - {ratio}))")

    def enough(w: str) -> str:
        return f"sum(count_over_time(probe_success{{{sel}}}[{w}])) > {int(durations.parse_seconds(w) / scrape_s * 0.5)}"

    rules = [{"alert": "ReferenceErrorBudgetBurn", "expr": f"{burn(s, f)} and {enough(s)}\nand\n{burn(lw, f)} and {enough(lw)}",
              "for": for_, "labels": {"severity": sev, "long": lw, "short": s}}
             for sev, lw, s, f, for_ in REFERENCE_PAIRS]
    return yaml.safe_dump({"groups": [{"name": "reference", "rules": rules}]}, sort_keys=False)


def our_rules(objective: Decimal, interval_ms: int) -> str:
    from alert_rules import prometheus_rule_file
    from alert_rules.model import MonitorSLO, Objective

    return str(prometheus_rule_file([MonitorSLO(namespace=NS, name=MON, objective=Objective(objective),
                                                interval_ms=interval_ms)]))


_FAIL = re.compile(r"alertname: (\S+), time: (\S+), \n\s+exp:\[\], \n\s+got:\[(.*?)\]\s*(?=alertname:|\Z)", re.S)


def firing_timeline(rules: str, series: list[dict[str, str]], alertname: str, *, step_s: int, eval_s: int,
                    start_s: int, end_s: int) -> dict[str, list[int]]:
    """Seconds (since the outage start) at which ``alertname`` fired, per severity."""
    times = range(start_s, end_s + 1, eval_s)
    test = {"rule_files": ["rules.yml"], "evaluation_interval": f"{eval_s}s",
            "tests": [{"interval": f"{step_s}s", "input_series": series,
                       "alert_rule_test": [{"eval_time": f"{t}s", "alertname": alertname, "exp_alerts": []}
                                           for t in times]}]}
    with tempfile.TemporaryDirectory() as d:
        Path(d, "rules.yml").write_text(rules)
        Path(d, "test.yml").write_text(yaml.safe_dump(test, sort_keys=False))
        out = subprocess.run(["promtool", "test", "rules", "test.yml"], cwd=d, capture_output=True, text=True)
    text = out.stdout + out.stderr
    if out.returncode not in (0, 1) or ("FAILED" not in text and out.returncode):
        raise RuntimeError(text[-3000:])
    fired: dict[str, list[int]] = {}
    for _name, at, got in _FAIL.findall(text):
        for sev in set(re.findall(r'severity="(\w+)"', got)):
            fired.setdefault(sev, []).append(round(durations.parse_seconds(at)) - HISTORY_S)
    return {k: sorted(v) for k, v in fired.items()}


def summarize(fired: list[int], outage_s: int, eval_s: int) -> tuple[int | None, int | None]:
    """(first firing, first quiet evaluation after the outage ended), seconds; None: never / not applicable."""
    if not fired:
        return None, None
    if not outage_s or fired[-1] < outage_s:
        return fired[0], 0 if outage_s else None
    return fired[0], fired[-1] + eval_s - outage_s


def fmt(value: int | None) -> str:
    return "never" if value is None else f"{value // 60}m{value % 60:02d}s" if value >= 60 else f"{value}s"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--objective", default="99.9")
    p.add_argument("--interval", default="30s", help="probe interval (and the reference's scrape interval)")
    p.add_argument("--eval", default="30s", help="rule evaluation interval")
    p.add_argument("--reference-only", action="store_true", help="skip our generated rules")
    args = p.parse_args(argv)
    objective = Decimal(args.objective)
    step, ev = (round(durations.parse_seconds(x)) for x in (args.interval, args.eval))
    rulesets = {"reference": (reference_rules(objective, step), reference_series, "ReferenceErrorBudgetBurn")}
    if not args.reference_only:
        rulesets["ours"] = (our_rules(objective, step * 1000), our_series, n.ALERT_ERROR_BUDGET_BURN)
    print(f"objective {objective}%, probe interval {step}s, rule evaluation every {ev}s. Times from the start of "
          "the outage (fire) or from its end (reset: first evaluation with nothing of that severity firing).\n")
    cols = [f"{who} {what}" for what in ("page", "page reset", "ticket") for who in ("math", *rulesets)]
    print("| scenario | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for s in SCENARIOS:
        ok = outcomes(s, step)
        span = {"step_s": step, "eval_s": ev, "start_s": HISTORY_S - 60, "end_s": HISTORY_S + s.observe_s}
        timelines = {who: firing_timeline(rules, series(ok), alert, **span)
                     for who, (rules, series, alert) in rulesets.items()}
        lasting = s.outage_s or s.observe_s
        cells: dict[str, str] = {}
        for sev, what in (("critical", "page"), ("warning", "ticket")):
            fire = math.first_fire(objective, sev, s.failure_every, lasting)
            cells[f"math {what}"] = fmt(fire)
            if sev == "critical":
                cells["math page reset"] = fmt(math.reset(objective, sev, s.failure_every, s.outage_s)) \
                    if s.outage_s and fire is not None else "n/a"
            for who, fired in timelines.items():
                first, reset = summarize(fired.get(sev, []), s.outage_s, ev)
                cells[f"{who} {what}"] = fmt(first)
                if sev == "critical":
                    cells[f"{who} page reset"] = fmt(reset) if reset is not None else "n/a"
        print(f"| {s.name} | " + " | ".join(cells[c] for c in cols) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
