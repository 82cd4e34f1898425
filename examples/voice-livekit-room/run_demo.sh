#!/usr/bin/env sh
# Room-mode demo: synthesize the fixtures, start the worker, run the evals through a LiveKit room.
# Needs a LiveKit server: LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET (LiveKit Cloud, or
# your own `livekit-server`). Usage: examples/voice-livekit-room/run_demo.sh [extra pytest args]
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
for name in LIVEKIT_URL LIVEKIT_API_KEY LIVEKIT_API_SECRET; do
    if eval "[ -z \"\${$name:-}\" ]"; then
        echo "$name is not set: point it at your LiveKit server or Cloud project (see README.md)" >&2
        exit 2
    fi
done
cd "$here"

echo "== 1/3  Synthesizing voice fixtures (offline TTS; up-to-date ones are kept)"
"$py" -m pytest_agent_eval.synthesize_audio evals

echo
echo "== 2/3  Starting the agent's worker (python agent.py start)"
log="$(mktemp)"
"$py" agent.py start >"$log" 2>&1 &
worker=$!
trap 'kill "$worker" 2>/dev/null || true; wait "$worker" 2>/dev/null || true; rm -f "$log"' EXIT INT TERM
tries=0
until grep -q "registered worker" "$log"; do
    if ! kill -0 "$worker" 2>/dev/null || [ "$tries" -ge 120 ]; then
        echo "the worker did not register:" >&2
        tail -20 "$log" >&2
        exit 1
    fi
    tries=$((tries + 1))
    sleep 0.5
done

echo
echo "== 3/3  Running the evals through LiveKit rooms"
"$py" -m pytest --agent-eval-live -p no:cacheprovider "$@"
