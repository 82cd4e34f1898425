#!/usr/bin/env bash
# Builds LiveKit's SIP service (github.com/livekit/sip, cmd/livekit-sip) from source with Go,
# into ~/.cache/pytest-agent-eval/livekit-sip-<version>/livekit-sip; reused when present.
# Its cgo codecs link against Debian's packages: libopus-dev, libopusfile-dev, libsoxr-dev and
# pkg-config (apt-get install them first); redis-server is needed to run it, not to build it.
#
# Not `go install ...@version`: that asks the Go module proxy for the module's version list
# (a deprecation check), which the proxy here refuses. `go mod download` fetches the pinned
# version's source (checked against go.sum's database), and `go build` builds it with its own
# go.mod and go.sum.
set -euo pipefail
SIP_VERSION="${LIVEKIT_SIP_VERSION:-v1.8.0}"
OUT_DIR="${HOME:-/root}/.cache/pytest-agent-eval/livekit-sip-$SIP_VERSION"
BIN="$OUT_DIR/livekit-sip"
if [ -x "$BIN" ]; then
    echo "$BIN"
    exit 0
fi
for lib in opus opusfile soxr; do
    if ! pkg-config --exists "$lib"; then
        echo "building livekit-sip needs the $lib headers: apt-get install -y libopus-dev libopusfile-dev libsoxr-dev pkg-config" >&2
        exit 1
    fi
done
SRC_DIR="$(go mod download -json "github.com/livekit/sip@$SIP_VERSION" |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
mkdir -p "$OUT_DIR"
(cd "$SRC_DIR" && CGO_ENABLED=1 go build -trimpath -o "$BIN.tmp" ./cmd/livekit-sip)
mv "$BIN.tmp" "$BIN"
echo "$BIN"
