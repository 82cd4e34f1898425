"""Holds a network namespace whose only addresses are loopback, and records what tries to leave.

Run as root as ``unshare --net --fork -- python netns_box.py``; the room lab starts it. Inside the
new namespace it sets up:

- ``lo`` (127.0.0.1), up;
- ``lkbr0``: a bridge with no ports carrying 127.0.0.2/32, multicast off. libwebrtc (inside the
  Python rtc SDK) gathers no ICE candidate on loopback interfaces; on this one it does;
- ``lkleak``: a TUN device held by this process, carrying the default route. Whatever a process
  in the namespace sends to an address outside 127.0.0.0/8 is routed into it and recorded here
  (without it, such a packet would fail with "network unreachable" and leave no trace);
- no IPv6 at all (disabled on every interface), so nothing can go out that way.

Then it answers one-line commands on stdin, one line each on stdout:

``probe HOST PORT``  ``ok`` once a TCP connect succeeds, else ``fail <error>``
``leaks``            a JSON list of the packets recorded so far
``canary``           sends one UDP datagram to 192.0.2.1:9 (a documentation address), to show
                     that the recorder sees leaks; answers ``sent``

It exits when stdin closes (its parent, the test process, ended).
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import socket
import struct
import subprocess
import sys

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000

SETUP = [
    "ip link set lo up",
    "sysctl -qw net.ipv6.conf.all.disable_ipv6=1",
    "sysctl -qw net.ipv6.conf.default.disable_ipv6=1",
    "ip link add lkbr0 type bridge mcast_snooping 0",
    "ip link set lkbr0 multicast off",
    "ip addr add 127.0.0.2/32 dev lkbr0",
    "ip link set lkbr0 up",
]


def _run(command: str) -> None:
    subprocess.run(command.split(), check=True, capture_output=True, text=True)


def _open_tun(name: str) -> int:
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", name.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def _describe(packet: bytes) -> dict[str, object]:
    if len(packet) < 20 or packet[0] >> 4 != 4:
        return {"proto": "other", "bytes": len(packet)}
    header = (packet[0] & 0x0F) * 4
    proto = {1: "icmp", 6: "tcp", 17: "udp"}.get(packet[9], str(packet[9]))
    record: dict[str, object] = {
        "proto": proto,
        "src": socket.inet_ntoa(packet[12:16]),
        "dst": socket.inet_ntoa(packet[16:20]),
        "bytes": len(packet),
    }
    if proto in ("tcp", "udp") and len(packet) >= header + 4:
        record["dport"] = int.from_bytes(packet[header + 2 : header + 4], "big")
    if proto == "udp" and record.get("dport") == 53:
        record["dns_query"] = _dns_name(packet[header + 8 + 12 :])
    return record


def _dns_name(data: bytes) -> str:
    """The first question's name of a DNS query (to say who tried to resolve what)."""
    labels, i = [], 0
    while i < len(data) and data[i] and len(labels) < 64:
        length = data[i]
        labels.append(data[i + 1 : i + 1 + length].decode(errors="replace"))
        i += 1 + length
    return ".".join(labels)


def _probe(host: str, port: int) -> str:
    try:
        with socket.create_connection((host, port), timeout=1.0):
            return "ok"
    except OSError as exc:
        return f"fail {exc}"


def main() -> int:
    try:
        for command in SETUP:
            _run(command)
        tun = _open_tun("lkleak")
        _run("ip link set lkleak multicast off")
        _run("ip link set lkleak up")
        _run("ip route add default dev lkleak")
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or exc
        print(f"error setting up the namespace: {detail}".replace("\n", " "), flush=True)
        return 1
    leaks: list[dict[str, object]] = []
    print(f"ready {os.getpid()}", flush=True)
    stdin = sys.stdin.fileno()
    pending = b""
    while True:
        readable, _, _ = select.select([tun, stdin], [], [])
        if tun in readable:
            leaks.append(_describe(os.read(tun, 65536)))
        if stdin in readable:
            chunk = os.read(stdin, 4096)
            if not chunk:
                return 0
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                words = line.decode().split()
                if not words:
                    continue
                if words[0] == "probe" and len(words) == 3:
                    answer = _probe(words[1], int(words[2]))
                elif words[0] == "leaks":
                    # Drain what the kernel has queued first, so the answer is current.
                    while select.select([tun], [], [], 0)[0]:
                        leaks.append(_describe(os.read(tun, 65536)))
                    answer = json.dumps(leaks)
                elif words[0] == "canary":
                    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                        udp.sendto(b"canary", ("192.0.2.1", 9))
                    answer = "sent"
                else:
                    answer = f"error unknown command {line.decode()!r}"
                print(answer, flush=True)


if __name__ == "__main__":
    sys.exit(main())
