#!/usr/bin/env bash
# A LiveKit server and an agent worker on a network of their own, where nothing can leave the
# machine: the room-test recipe of this project's CI as one command (Linux, root).
#
#   sudo examples/voice-livekit-room/loopback_lab.sh [--server PATH] [--worker FILE] -- COMMAND [ARG...]
#
# In a new network namespace whose only addresses are loopback ones (lo, and a bridge with no
# ports carrying 127.0.0.2: WebRTC gathers no ICE candidate on loopback interfaces, but it does
# on that bridge; IPv6 off), it starts livekit-server on 127.0.0.1:7880 with a config that stays
# on loopback and a fresh key pair, starts `python FILE start` when --worker is given and waits
# until the worker has registered, then runs COMMAND with LIVEKIT_URL, LIVEKIT_API_KEY and
# LIVEKIT_API_SECRET set. It then stops the worker and the server and exits with COMMAND's
# status.
#
#   --server PATH  the livekit-server binary (default: $LIVEKIT_SERVER_BIN, else livekit-server
#                  on PATH; build it with `go install github.com/livekit/livekit-server/cmd/server@v1.11.0`)
#   --worker FILE  the agent's worker file, run with $PYTHON (default: python3)
#
# Logs (server.log, worker.log) and the config go to $LAB_DIR (default: a new temporary
# directory, printed when something fails).
set -euo pipefail

server="${LIVEKIT_SERVER_BIN:-}"
worker=""
args=("$@")
while [ "$#" -gt 0 ]; do
    case "$1" in
        --server) server="$2"; shift 2 ;;
        --worker) worker="$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "loopback_lab.sh: unknown option $1 (the command goes after --)" >&2; exit 2 ;;
    esac
done
if [ "$#" -eq 0 ]; then
    echo "usage: loopback_lab.sh [--server PATH] [--worker FILE] -- COMMAND [ARG...]" >&2
    exit 2
fi

if [ -z "${LOOPBACK_LAB_INSIDE:-}" ]; then
    # Outside: check what is needed, then run this script again in a new network namespace.
    if [ "$(id -u)" -ne 0 ]; then
        echo "loopback_lab.sh needs root, to create a network namespace (unshare --net)" >&2
        exit 2
    fi
    for tool in unshare setsid ip sysctl; do
        command -v "$tool" >/dev/null || { echo "loopback_lab.sh needs $tool" >&2; exit 2; }
    done
    [ -n "$server" ] || server="$(command -v livekit-server || true)"
    if [ -z "$server" ] || [ ! -x "$server" ]; then
        echo "loopback_lab.sh: no livekit-server; pass --server PATH or set LIVEKIT_SERVER_BIN" >&2
        exit 2
    fi
    exec unshare --net --fork -- env LOOPBACK_LAB_INSIDE=1 LIVEKIT_SERVER_BIN="$server" \
        bash "$0" "${args[@]}"
fi

# Inside the namespace: only loopback addresses, no IPv6.
ip link set lo up
sysctl -qw net.ipv6.conf.all.disable_ipv6=1
sysctl -qw net.ipv6.conf.default.disable_ipv6=1
ip link add lkbr0 type bridge mcast_snooping 0
ip link set lkbr0 multicast off
ip addr add 127.0.0.2/32 dev lkbr0
ip link set lkbr0 up

dir="${LAB_DIR:-$(mktemp -d)}"
mkdir -p "$dir"
key="lab"
secret="$(od -An -N24 -tx1 /dev/urandom | tr -d ' \n')"
cat >"$dir/livekit.yaml" <<EOF
port: 7880
bind_addresses: [127.0.0.1]
rtc:
  tcp_port: 7881
  udp_port: 7882
  use_external_ip: false
  node_ip: 127.0.0.1
  enable_loopback_candidate: true
  stun_servers: [127.0.0.1:3478]   # otherwise clients are handed public STUN servers
keys:
  $key: $secret
room:
  empty_timeout: 30
EOF

server_pid=""
worker_pid=""
end() {
    # SIGTERM, then SIGKILL after $2 seconds (livekit-server drains first and may not stop).
    kill -TERM "$1" 2>/dev/null || return 0
    for _ in $(seq $(($2 * 10))); do
        kill -0 "$1" 2>/dev/null || break
        sleep 0.1
    done
    # The worker runs in a process group of its own, with its job processes.
    kill -KILL -- "-$1" 2>/dev/null || kill -KILL "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
}
stop() {
    status=$?
    [ -z "$worker_pid" ] || end "$worker_pid" 20
    [ -z "$server_pid" ] || end "$server_pid" 5
    [ "$status" -eq 0 ] || echo "loopback_lab.sh: logs in $dir" >&2
}
trap stop EXIT

fail() {
    echo "loopback_lab.sh: $1" >&2
    tail -20 "$2" >&2
    exit 1
}

"$LIVEKIT_SERVER_BIN" --config "$dir/livekit.yaml" >"$dir/server.log" 2>&1 &
server_pid=$!
tries=0
# No event says the port is open: try it (up to 20 s).
until (exec 3<>/dev/tcp/127.0.0.1/7880) 2>/dev/null; do
    kill -0 "$server_pid" 2>/dev/null || fail "livekit-server exited:" "$dir/server.log"
    [ "$tries" -lt 400 ] || fail "livekit-server did not open port 7880 in 20 s:" "$dir/server.log"
    tries=$((tries + 1))
    sleep 0.05
done

export LIVEKIT_URL="ws://127.0.0.1:7880" LIVEKIT_API_KEY="$key" LIVEKIT_API_SECRET="$secret"
export ORT_DISABLE_TELEMETRY=1

if [ -n "$worker" ]; then
    setsid "${PYTHON:-python3}" "$worker" start >"$dir/worker.log" 2>&1 &
    worker_pid=$!
    tries=0
    # The worker prints "registered worker" once the server has it (up to 180 s: it loads its
    # models first).
    until grep -q "registered worker" "$dir/worker.log"; do
        kill -0 "$worker_pid" 2>/dev/null || fail "the worker exited:" "$dir/worker.log"
        [ "$tries" -lt 900 ] || fail "the worker did not register in 180 s:" "$dir/worker.log"
        tries=$((tries + 1))
        sleep 0.2
    done
fi

"$@"
