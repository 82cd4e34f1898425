#!/usr/bin/env sh
# One-command demo: synthesize the voice fixtures offline, then run the voice evals live.
# Usage: examples/voice-livekit-realtime/run_demo.sh [extra pytest args]
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

echo "== 1/2  Synthesizing voice fixtures (offline TTS; up-to-date ones are kept)"
"$py" -m pytest_agent_eval.synthesize_audio evals

echo
echo "== 2/2  Running the voice evals against a real LiveKit AgentSession on a scripted realtime model"
exec "$py" -m pytest --agent-eval-live -p no:cacheprovider "$@"
