"""The lab keeps everything on loopback, and would notice if something left."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from room_lab import NetnsBox, RoomLab, require_labs


def test_the_leak_recorder_sees_a_packet_leave() -> None:
    require_labs()
    box = NetnsBox()
    box.start()
    try:
        assert box.leaks() == []
        box.send_canary()
        leaks = box.leaks()
    finally:
        box.stop()
    assert [(p["proto"], p["dst"], p.get("dport")) for p in leaks] == [("udp", "192.0.2.1", 9)]


def test_a_room_run_stays_on_loopback(
    lab: RoomLab, booking_worker: str, example_copy: Path
) -> None:
    audio = example_copy / "evals" / "audio"
    out = lab.call(
        "converse",
        agent_name=booking_worker,
        turns=[{"user": "Hello there!", "audio": str(audio / "hello_44k.wav")}],
    )
    assert out["replies"][0].reply == "Hello! How can I help you?"
    # Every address in the namespace is a loopback one, and there is no IPv6 at all.
    for link in lab.box.addresses():
        for address in link.get("addr_info", []):
            assert address["family"] == "inet", (link["ifname"], address)
            assert ipaddress.ip_address(address["local"]).is_loopback, (link["ifname"], address)
    # The server offered loopback candidates only, and nothing tried to leave.
    assert lab.server is not None
    log = lab.server.text()
    assert "udp4 host 127.0.0.1:7882" in log
    assert lab.leaks() == []
