#!/usr/bin/env sh
# One-command demo: run the inbound agent against callers who type their account number on
# the keypad, then with the planted bug, which turns its eval red.
# Usage: examples/phone-inbound-livekit/run_demo.sh [extra pytest args]
# Uses $PYTHON, else the repository's .venv, else python3.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
if [ -n "${PYTHON:-}" ]; then
    py="$PYTHON"
elif [ -x "$repo/.venv/bin/python" ]; then
    py="$repo/.venv/bin/python"
else
    py="python3"
fi
cd "$here"

echo "== 1/2  The agent as written: every eval passes"
"$py" -m pytest --agent-eval-live -p no:cacheprovider "$@"

echo
echo "== 2/2  ACCOUNT_BUG=1: it drops the last digit before the lookup (expected to fail)"
ACCOUNT_BUG=1 "$py" -m pytest --agent-eval-live -p no:cacheprovider evals/balance.yaml "$@" || true
