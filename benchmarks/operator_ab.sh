#!/bin/bash
# Operator before/after in one sitting: `python -m benchmarks.operator_bench --routes 1000 --more 0`
# in a baseline checkout and in this one, alternating, so drifting load on a shared machine hits
# both alike.
#
#   bash benchmarks/operator_ab.sh BASELINE_CHECKOUT [ROUNDS] [OUT_DIR]
#
# BASELINE_CHECKOUT: e.g. `git worktree add /tmp/base <commit> && (cd /tmp/base && bash scripts/bootstrap.sh)`.
# Prints one line per run (CPU per new monitor without probes, RSS idle and at 1,000) and keeps
# each run's JSON in OUT_DIR (default: a temporary folder).
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
base="${1:?usage: operator_ab.sh BASELINE_CHECKOUT [ROUNDS] [OUT_DIR]}"
rounds="${2:-2}"
out="${3:-$(mktemp -d -t rm-operator-ab-XXXX)}"
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
  for side in baseline this; do
    dir="$here"; [ "$side" = baseline ] && dir="$(cd "$base" && pwd)"
    json="$out/$side-run$r.json"
    (cd "$dir" && .venv/bin/python -m benchmarks.operator_bench --routes 1000 --more 0 --steady 10 --out "$json" \
      > "$out/$side-run$r.log" 2>&1)
    "$here/.venv/bin/python" - "$json" "$side" "$r" <<'EOF'
import json, os, sys
d = json.load(open(sys.argv[1]))
cpu = d["cpu_seconds_first_phase"]
print(f"{sys.argv[2]:8s} round {sys.argv[3]} load {os.getloadavg()[0]:.2f}: "
      f"{d['operator_cpu_ms_per_new_monitor_without_probes']} ms CPU per new monitor, "
      f"operator {100 * cpu['operator'] / sum(cpu.values()):.0f}% of the control plane's CPU, "
      f"writes/monitor {d['apiserver_requests_per_monitor']}, RSS {d['rss_mib']}")
EOF
  done
done
echo "JSON and logs in $out"
