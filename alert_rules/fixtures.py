"""``promtool test rules`` documents exercising what the generator emitted for one monitor.

Scenarios, each on synthetic counters at the monitor's own probe interval (one scrape per
probe, evaluated every minute): a hard outage pages within two minutes of the budget math
allowing it (exact labels and annotations of every alert firing at its end) and resolves after
recovery; one failed probe fires nothing, with history or on a fresh monitor; a steady slow
burn tickets and never pages (when the objective and interval can resolve one within 8 hours);
a prober restart and a move to another pod fire nothing and leave no gap; probes vanishing or
stalling fire ``RouteMonitorProbesAbsent``; an expiring certificate fires
``RouteMonitorCertificateExpiry``; with a latency SLO, slow probes page on latency only.
Check times are chosen on a simulation of the same windows with margins, so that each expected
outcome is unambiguous.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from alert_rules import durations, names, params, path_rules, promql, shared
from alert_rules.model import MonitorSLO
from alert_rules.rules import enabled_windows, group_names, is_fast, rule_groups
from alert_rules.scenarios import Sim, slow_burn_period
from alert_rules.sensitivity import trip
from alert_rules.sli import slis
from alert_rules.timeline import Step, Timeline, steps

EVAL_MS = 60_000
_BURN = f"{names.ALERT_ERROR_BUDGET_BURN}|{names.ALERT_LATENCY_BUDGET_BURN}"
_M = 60_000
_H = 3_600_000


def _unliteral(d: dict[str, str]) -> dict[str, str]:
    return {k: v.replace('{{ "{{" }}', "{{") for k, v in d.items()}


class _Fixture:
    def __init__(self, slo: MonitorSLO) -> None:
        self.slo = slo
        self.eval_ms = min(EVAL_MS, slo.tile_ms)  # a minute, or a shorter tile: one tile per subquery step
        self.ident = promql.monitor_matchers(slo.namespace, slo.name)
        lat = slo.objective.latency
        self.le = None if lat is None else names.le_label(lat.threshold_ms / 1000)
        self.rules = {(r["alert"], r["labels"].get(names.LABEL_LONG, "")): r
                      for g in rule_groups(slo) for r in g["rules"] if "alert" in r}

    def at(self, ms: int) -> str:
        """An evaluation time (rounded up to the evaluation grid) as a promtool duration."""
        return durations.format_ms(max(self.eval_ms, -(-ms // self.eval_ms) * self.eval_ms))

    def n(self, ms: int) -> int:
        return max(1, ms // self.slo.interval_ms)

    def timeline(self, parts: list[Step], **kw: Any) -> Timeline:
        return Timeline(self.slo.namespace, self.slo.name, tuple(parts), self.le,
                        params=params.values(self.slo.objective, self.slo.interval_ms), **kw)

    def group(self, name: str, tl: Timeline, expr: list[dict[str, Any]] | None = None,
              alerts: list[dict[str, Any]] | None = None, extra: list[dict[str, str]] | None = None) -> dict[str, Any]:
        g: dict[str, Any] = {"name": name, "interval": durations.format_ms(self.slo.interval_ms),
                             "input_series": tl.input_series() + (extra or [])}
        if alerts:
            g["alert_rule_test"] = alerts
        if expr:
            g["promql_expr_test"] = expr
        return g

    # --- checks -----------------------------------------------------------------------------
    def alert_labels(self, rule: dict[str, Any]) -> dict[str, str]:
        return {**dict(self.ident), **_unliteral(rule["labels"])}

    def firing(self, rule: dict[str, Any], at_ms: int) -> dict[str, Any]:
        labels = {"alertname": rule["alert"], "alertstate": "firing", **self.alert_labels(rule)}
        sel = promql.selector("ALERTS", tuple(sorted(labels.items())))
        return {"expr": sel, "eval_time": self.at(at_ms), "exp_samples": [{"labels": sel, "value": 1}]}

    def none(self, at_ms: int, span_ms: int, alertname: str = _BURN, **labels: str) -> dict[str, Any]:
        """No alert matching ``alertname`` (regex) and ``labels`` at any evaluation in the span."""
        sel = promql.alerts_selector(alertname, (*self.ident, ("alertstate", "firing"), *labels.items()))
        return {"expr": promql.count_over(sel, durations.format_ms(span_ms)), "eval_time": self.at(at_ms),
                "exp_samples": []}

    def exact(self, alertname: str, rules: list[dict[str, Any]], at_ms: int) -> dict[str, Any]:
        return {"alertname": alertname, "eval_time": self.at(at_ms),
                "exp_alerts": [{"exp_labels": self.alert_labels(r), "exp_annotations": _unliteral(r["annotations"])}
                               for r in rules]}

    # --- scenarios --------------------------------------------------------------------------
    def hard_outage(self) -> dict[str, Any]:
        hist, out, rec = 30 * _M, 90 * _M, 45 * _M
        tl = self.timeline(steps("ok", self.n(hist)) + steps("fail", self.n(out)) + steps("ok", self.n(rec)))
        start, end = self.n(hist) * self.slo.interval_ms, (self.n(hist) + self.n(out)) * self.slo.interval_ms
        expr = [self.none(start - self.eval_ms, start - self.eval_ms)]
        alerts = []
        sim = Sim(tl, self.slo.interval_ms, self.slo.tile_ms)
        for sli in slis(self.slo):
            expected, sure = [], True
            for w in enabled_windows(self.slo):
                t = trip(w, sli.budget, self.slo.interval_ms)
                if not t.possible:
                    continue
                verdict = sim.fires(sli.kind, w, t.threshold, end)
                sure = sure and verdict is not None
                if verdict:
                    expected.append(self.rules[(sli.alert, w.long)])
                if w.severity == "page" and is_fast(w) and sli.kind == "availability":
                    expr.append(self.firing(self.rules[(sli.alert, w.long)], start + t.outage_ms(self.slo.interval_ms)
                                            + 2 * _M))
            if sure:
                alerts.append(self.exact(sli.alert, expected, end))
        expr.append(self.none(end + 10 * _M, self.eval_ms, names.ALERT_ERROR_BUDGET_BURN, long="1h", short="5m"))
        expr.append(self.none(end + 40 * _M, self.eval_ms, severity=names.SEVERITY_CRITICAL))
        if not self.slo.alerting.page:
            expr.append(self.none(end, end, severity=names.SEVERITY_CRITICAL))
        if not self.slo.alerting.ticket:
            expr.append(self.none(end, end, severity=names.SEVERITY_WARNING))
        return self.group("hard outage pages, then resolves", tl, expr, alerts)

    def single_failure(self) -> list[dict[str, Any]]:
        hist = self.timeline(steps("ok", self.n(_H)) + steps("fail", 1) + steps("ok", self.n(75 * _M)))
        fresh = self.timeline(steps("ok", 2) + steps("fail", 1) + steps("ok", self.n(_H)))
        span = (self.n(_H) + 1 + self.n(75 * _M)) * self.slo.interval_ms
        return [self.group("single failed probe fires nothing", hist, [self.none(span, span)]),
                self.group("single failed probe on a new monitor fires nothing", fresh, [self.none(_H, _H)])]

    def slow_burn(self) -> dict[str, Any] | None:
        found = slow_burn_period(self.slo)
        if found is None:
            return None
        tl, window, at_ms = found
        rule = self.rules[(names.ALERT_ERROR_BUDGET_BURN, window.long)]
        span = len(tl.steps) * self.slo.interval_ms
        return self.group("steady slow burn tickets and never pages", tl,
                          [self.firing(rule, at_ms), self.none(span, span, severity=names.SEVERITY_CRITICAL)])

    def restart_and_move(self) -> dict[str, Any]:
        n = self.n
        # failures from long ago (counter at 7), a restart (7 -> 0: changes() sees it, resets()
        # takes it back), then one failure: a single failed probe, whatever the counters did
        parts = (steps("ok", n(30 * _M)) + steps("ok", 1, restart=True) + steps("fail", 1) + steps("ok", n(30 * _M))
                 + steps("ok", n(30 * _M), instance="prober-1:8080"))
        tl = self.timeline(parts, initial_failures=7)
        end = len(parts) * self.slo.interval_ms
        gapless = promql.count_over(promql.selector(names.error_ratio_record("5m"), self.ident), "1h")
        return self.group("prober restart and move to another pod fire nothing, leave no gap", tl, [
            self.none(end, end, alertname=".+"),
            {"expr": gapless, "eval_time": self.at(end), "exp_samples": [
                {"labels": promql.selector("", self.ident), "value": _H // self.eval_ms + 1}]},
        ])

    def absent(self) -> list[dict[str, Any]]:
        out = []
        for outcome, what in (("gone", "series vanish"), ("idle", "counters stop increasing")):
            tl = self.timeline(steps("ok", self.n(30 * _M)) + steps(outcome, self.n(30 * _M)))  # type: ignore[arg-type]
            stop = (self.n(30 * _M) - 1) * self.slo.interval_ms  # the last probe
            rule = self.rules[(names.ALERT_PROBES_ABSENT, "")]
            out.append(self.group(f"probes absent: {what}", tl,
                                  [self.none(stop + 5 * _M, 5 * _M, names.ALERT_PROBES_ABSENT)],
                                  [self.exact(names.ALERT_PROBES_ABSENT, [rule], stop + 11 * _M)]))
        return out

    def certificate(self) -> dict[str, Any]:
        n = self.n(30 * _M)
        gauge = {"series": promql.selector(names.TLS_CERT_EXPIRY, (("instance", "prober-0:8080"), *self.ident)),
                 "values": f"{30 * 86_400}+0x{n} {10 * 86_400}+0x{n}"}
        tl = self.timeline(steps("ok", 2 * n + 2))
        rule = self.rules[(names.ALERT_CERTIFICATE_EXPIRY, "")]
        return self.group("certificate expiring within 14 days", tl,
                          [self.none(20 * _M, 20 * _M, names.ALERT_CERTIFICATE_EXPIRY)],
                          [self.exact(names.ALERT_CERTIFICATE_EXPIRY, [rule],
                                      (n + 1) * self.slo.interval_ms + 20 * _M)],
                          [gauge])

    def maintenance(self) -> list[dict[str, Any]]:
        n, iv, anything = self.n, self.slo.interval_ms, ".+"
        out = [self.group("maintenance window over a healthy period fires nothing", self.timeline(
            steps("ok", n(30 * _M)) + steps("excluded", n(2 * _H)) + steps("ok", n(30 * _M))),
            [self.none(3 * _H, 3 * _H, anything)])]
        out.append(self.group("target up within warm-up never pages", self.timeline(
            steps("excluded", n(4 * _M)) + steps("ok", n(2 * _H)), excluded_reason=names.EXCLUDED_WARMUP),
            [self.none(2 * _H, 2 * _H, anything)]))
        page = [w for w in enabled_windows(self.slo) if w.severity == "page" and is_fast(w)]
        if not page or not trip(page[0], slis(self.slo)[0].budget, iv).possible:
            return out
        rule = self.rules[(names.ALERT_ERROR_BUDGET_BURN, page[0].long)]
        soon = max(3 * _M, 2 * iv + _M)  # only failures are counted after it: two of them page (the guard)
        end = (n(30 * _M) + n(2 * _H)) * iv
        outage = self.timeline(steps("ok", n(30 * _M)) + steps("excluded", n(2 * _H)) + steps("fail", n(_H)))
        out.append(self.group("hard outage inside a maintenance window pages only after it ends", outage,
                              [self.none(end, end, anything), self.firing(rule, end + soon)]))
        warm = n(10 * _M) * iv
        failing = self.timeline(steps("excluded", n(10 * _M)) + steps("fail", n(_H)),
                                excluded_reason=names.EXCLUDED_WARMUP)
        out.append(self.group("target failing from creation pages right after warm-up", failing,
                              [self.none(warm, warm, anything), self.firing(rule, warm + soon)]))
        return out

    def latency(self) -> list[dict[str, Any]]:
        lat = [s for s in slis(self.slo) if s.kind == "latency"]
        if not lat:
            return []
        tl = self.timeline(steps("ok", self.n(30 * _M)) + steps("slow", self.n(_H)))
        start, end = self.n(30 * _M) * self.slo.interval_ms, 90 * _M
        expr = [self.none(end, end, names.ALERT_ERROR_BUDGET_BURN)]
        page = [w for w in enabled_windows(self.slo) if w.severity == "page" and is_fast(w)]
        for w in page:
            t = trip(w, lat[0].budget, self.slo.interval_ms)
            if t.possible:
                expr.append(self.firing(self.rules[(names.ALERT_LATENCY_BUDGET_BURN, w.long)],
                                        start + t.outage_ms(self.slo.interval_ms) + 2 * _M))
        one = self.timeline(steps("ok", self.n(_H)) + steps("slow", 1) + steps("ok", self.n(_H)))
        return [self.group("slow probes page on latency, not availability", tl, expr),
                self.group("single slow probe fires nothing", one, [self.none(2 * _H, 2 * _H)])]


def eval_order(slos: Sequence[MonitorSLO], *, paths: bool = False) -> list[str]:
    """Every group, in the order a step of ``promtool test rules`` evaluates them: the monitors'
    alerts after the shared records they read, the shared long-window group after the latency tiles
    the monitors' fast groups record, and (``paths``) the shared-path group after the failing records
    it counts. promtool evaluates every group at every step, in an unspecified order unless told."""
    names_of = [group_names(slo) for slo in slos]
    return [shared.GROUP, *(n[0] for n in names_of), *([path_rules.GROUP] if paths else []), shared.LONG_GROUP,
            shared.PERIOD_GROUP, *(n[1] for n in names_of), *(n[2] for n in names_of if len(n) > 2)]


def promtool_tests(slo: MonitorSLO, rule_file: str) -> dict[str, Any]:
    """A ``promtool test rules`` document for ``slo``'s rules and the shared ones, loaded from
    ``rule_file`` (as :func:`alert_rules.prometheus_rule_file` writes them)."""
    f = _Fixture(slo)
    groups = [f.hard_outage(), *f.single_failure(), f.slow_burn(), f.restart_and_move(), *f.absent(),
              f.certificate(), *f.latency(), *f.maintenance()]
    return {"rule_files": [rule_file], "evaluation_interval": durations.format_ms(f.eval_ms),
            "group_eval_order": eval_order([slo]), "tests": [g for g in groups if g is not None]}
