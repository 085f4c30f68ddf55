"""The Device: routing frames through a real program to ports, the CPU and back;
pipeline replacement; and, on veths, watch ports following a link at once."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.layers.inet6 import IPv6, UDP
from scapy.layers.l2 import Ether

from p4target.device import Device
from p4target.errors import P4Error
from p4target.ports.netio import NetIO

from p4t_netlab import NetLab, recv_frames, wait_for

HERE = Path(__file__).parent
SPRAY = HERE / "p4" / "spray.p4"
L3 = HERE.parent / "stf" / "p4" / "l3_acl.p4"


def ipv6_frame(flow_label: int = 0, hlim: int = 64) -> bytes:
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
                 / IPv6(src="fd00::1", dst="fd00::2", fl=flow_label, hlim=hlim)
                 / UDP(sport=1, dport=2) / b"payload!")


def punt_frame() -> bytes:
    return bytes(Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02", type=0x88B5) / b"hello")


@pytest.fixture(scope="module")
def spray_compiled():
    from p4target.compiler import compile_file

    return compile_file(SPRAY)


def program_spray(sw, in_port: int = 1, out_ports=(2, 3), cpu_port: int | None = None) -> None:
    from p4target.runtime.entries import Exact, Group

    table = sw.model.table("SIngress.spray")
    key = table.match_keys[0].name
    prof = table.implementation
    members = []
    for i, port in enumerate(out_ports, start=1):
        sw.act_prof_add_member(prof, i, "SIngress.fwd", {"port": port})
        members.append((i, 1, port))
    sw.act_prof_add_group(prof, 1, members=members)
    sw.table_add("SIngress.spray", {key: Exact(in_port)}, Group(1))
    if cpu_port is not None:
        punt = sw.model.table("SIngress.punt")
        sw.table_add("SIngress.punt", {punt.match_keys[0].name: Exact(0x88B5)},
                     "SIngress.to_cpu", {"port": cpu_port})


def test_frames_go_to_the_sink_and_cpu_output_to_packet_in(spray_compiled):
    dev = Device(device_id=3, cpu_port=64)
    dev.load(spray_compiled)
    program_spray(dev.switch, cpu_port=64)
    out: list[tuple[int, bytes]] = []
    pins: list[bytes] = []
    dev.output_sink = lambda port, frame: out.append((port, frame))
    dev.add_packet_in_listener(pins.append)
    for fl in range(16):
        dev.receive(1, ipv6_frame(fl))
    assert len(out) == 16 and {p for p, _ in out} == {2, 3}
    assert all(IPv6(f[14:]).hlim == 63 for _, f in out)
    dev.receive(1, punt_frame())
    assert pins == [punt_frame()] and len(out) == 16
    # packet-out: processed as arriving on the CPU port (no spray entry for it: dropped)
    dev.packet_out(ipv6_frame(1))
    assert len(out) == 16
    dev.remove_packet_in_listener(pins.append)
    dev.receive(1, punt_frame())
    assert len(pins) == 1


def test_no_pipeline_drops_and_counts():
    dev = Device()
    out = []
    dev.output_sink = lambda p, f: out.append(p)
    dev.receive(1, ipv6_frame())
    assert out == [] and dev.dropped_no_pipeline == 1


def test_port_status_survives_a_new_pipeline(spray_compiled):
    dev = Device()
    dev.set_port_status(2, False)
    dev.load(spray_compiled)
    program_spray(dev.switch)
    out = []
    dev.output_sink = lambda p, f: out.append(p)
    for fl in range(16):
        dev.receive(1, ipv6_frame(fl))
    assert out == [3] * 16  # the member watching port 2 is skipped
    dev.set_port_status(2, True)
    out.clear()
    for fl in range(16):
        dev.receive(1, ipv6_frame(fl))
    assert set(out) == {2, 3}


def test_failed_load_keeps_the_running_pipeline(spray_compiled, tmp_path):
    dev = Device()
    dev.load(spray_compiled)
    before = dev.switch
    bad = tmp_path / "bad.p4"
    bad.write_text("control c() { apply { x = ; } }\n")
    with pytest.raises(P4Error):
        dev.load(bad)
    assert dev.switch is before


@pytest.mark.root
def test_watch_port_follows_carrier_on_veths(spray_compiled):
    """A link dies under a selector group: the next frames avoid its port, with no
    control-plane action, as soon as rtnetlink reports the carrier loss. The slow
    link poll is set to an hour, so only rtnetlink can have told the device."""
    with NetLab("dev") as lab:
        for x in "abc":
            lab.veth(f"p4t{x}0", f"p4t{x}1")
        dev = Device(device_id=9)
        dev.load(spray_compiled)
        program_spray(dev.switch)
        nio = NetIO(dev, {1: "p4ta1", 2: "p4tb1", 3: "p4tc1"}, netns=lab.ns, poll_interval=3600)
        nio.start()
        try:
            a, b, c = lab.socket("p4ta0"), lab.socket("p4tb0"), lab.socket("p4tc0")
            frames = [ipv6_frame(fl) for fl in range(32)]
            for f in frames:
                a.send(f)
            got_b = recv_frames(b, timeout=1.0)
            got_c = recv_frames(c, timeout=0.3)
            assert got_b and got_c and len(got_b) + len(got_c) == 32
            lab.link("p4tb0", "down")
            assert wait_for(lambda: not dev.switch.port_is_up(2), timeout=20.0)  # a hang guard
            for f in frames:
                a.send(f)
            assert len(recv_frames(c, timeout=1.0, want=32)) == 32
            lab.link("p4tb0", "up")
            assert wait_for(lambda: dev.switch.port_is_up(2), timeout=5.0)
        finally:
            nio.stop()
            nio.join(5)


def test_load_leaves_the_program_out_of_later_collections_and_frees_the_old_one():
    """After a load the new switch sits in the frozen generation (a later full
    collection does not walk the compile's objects again), and a replaced switch is
    freed, cycles and all."""
    import gc
    import weakref

    dev = Device(device_id=7)
    dev.load(L3)
    old = weakref.ref(dev.switch)
    sw = dev.switch
    assert gc.is_tracked(sw)
    assert not any(o is sw for o in gc.get_objects())  # the generations gc walks, not the frozen one
    assert gc.get_freeze_count() > 0
    del sw
    dev.load(L3)
    assert old() is None
    assert not any(o is dev.switch for o in gc.get_objects())


def test_a_loaded_program_takes_its_first_frame_on_the_fast_path():
    """Device.load binds the fast path at once (a bare Switch binds it at the first
    frame, which then takes the general path): no first-packet code generation in a
    live network."""
    from p4target import Switch

    bare = Switch.load(L3)
    bare.inject(1, ipv6_frame())
    assert bare.fast_packets == 0  # the lazy binding this test tells apart
    dev = Device(device_id=3)
    dev.load(L3)
    dev.switch.inject(1, ipv6_frame())
    assert dev.switch.fast_packets == 1
