#!/usr/bin/env bash
# RSS of a fresh process after importing the operator (route_monitor.cli.commands.operator), for
# BASELINE (a commit) and the working tree, alternated ROUNDS times in one sitting.
#   bash benchmarks/client_import_ab.sh BASELINE [ROUNDS]
set -euo pipefail
base=${1:?usage: client_import_ab.sh BASELINE [ROUNDS]}
rounds=${2:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
py="$root/.venv/bin/python"
old=$(mktemp -d)
trap 'rm -rf "$old"' EXIT
git -C "$root" archive "$base" route_monitor alert_rules | tar -x -C "$old"
measure='
import sys
import route_monitor.cli.commands.operator
rss = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmRSS:")) / 1024
loaded = "lightkube" in sys.modules
print(f"{rss:6.1f} MiB  lightkube loaded: {loaded}  ({route_monitor.__file__})")'
for _ in $(seq "$rounds"); do
  (cd "$old" && printf '%-10s' "$base" && "$py" -c "import route_monitor; $measure")
  (cd "$root" && printf '%-10s' "tree" && "$py" -c "import route_monitor; $measure")
done
