#!/usr/bin/env sh
# One-command demo: run the outbound agent against its far ends (a voicemail box, a phone tree,
# a patient who answers), then with each planted bug, which turns its eval red.
# Usage: examples/phone-outbound-livekit/run_demo.sh [extra pytest args]
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

echo "== 1/3  The agent as written: every eval passes"
"$py" -m pytest --agent-eval-live -p no:cacheprovider "$@"

echo
echo "== 2/3  REMINDER_BUG=1: it talks over the voicemail greeting (expected to fail)"
REMINDER_BUG=1 "$py" -m pytest --agent-eval-live -p no:cacheprovider evals/voicemail.yaml evals_heard "$@" || true

echo
echo "== 3/3  IVR_BUG=1: it presses the first key it hears (expected to fail)"
IVR_BUG=1 "$py" -m pytest --agent-eval-live -p no:cacheprovider evals/ivr.yaml "$@" || true
