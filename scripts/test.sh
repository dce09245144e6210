#!/usr/bin/env bash
# The project's test command: install what the tests need (idempotent, fast when present),
# then run the whole suite. Extra arguments go to pytest (e.g. -k generator, -m "not cluster").
#
# The suite runs in parallel (pytest-xdist): RM_SUITE_WORKERS processes (default 3; most tests
# wait on real servers, so more workers than cores pay off), whole modules per worker, longest
# first (tests/support/schedule.py). RM_SUITE_WORKERS=0 runs it serially in one process.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bash scripts/bootstrap.sh --system
workers=${RM_SUITE_WORKERS:-3}
parallel=()
if [ "$workers" != 0 ]; then parallel=(-n "$workers" --dist loadfile); fi
exec .venv/bin/python -m pytest "${parallel[@]}" "$@"
