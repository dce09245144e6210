#!/usr/bin/env bash
# The project's test command: install what the tests need (idempotent, fast when present),
# then run the whole suite. Extra arguments go to pytest (e.g. -k generator, -m "not cluster").
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
cd "$here"
bash scripts/bootstrap.sh --system
exec .venv/bin/python -m pytest "$@"
