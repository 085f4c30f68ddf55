"""``p4target group``: four switches in one process, each its own switch on real veths.

A private namespace ``p4t-gr-*`` holds two veth pairs per switch; the group process
(``python -m p4target group FILE``) owns one end of each (ports 1 and 2 of its
switch), the test sends into port 1 and listens on port 2 on the other ends.
Switches s1 and s2 have P4Runtime addresses of their own; s3 and s4 share one
address, told apart by device ids 3 and 4. Every switch runs rt_all.p4, loaded at
start from one compiled program.

What is checked: an entry written to one switch steers that switch's frames only;
counters are per switch; a request for a device id nobody serves is NOT_FOUND; a bad
Write and a bad pipeline are the error of their switch only, the others keep
forwarding; finsy and p4runtime-shell program a switch on its own address and one
on the shared address; a failing pipeline run in one switch leaves the others
forwarding (the group built in this process, so the test can break one pipeline).
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
import yaml
from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.ports.netio import open_interface_socket, read_pcap
from tests.p4runtime.conftest import RT_ALL, tframe
from tests.p4runtime.p4rt_client import Names, RawClient, entity, ins
from tests.p4runtime.test_veth_run import ip, received, stop
from tests.target.cli.p4t_netlab import wait_for

REPO = Path(__file__).resolve().parents[2]
SHELL_PY = REPO / ".venv-shell" / "bin" / "python"
SHELL_SCRIPT = Path(__file__).parent / "shell" / "drive_shell_device.py"
SWITCHES = ("s1", "s2", "s3", "s4")
SHARED = ("s3", "s4")  # on the group's shared address
pytestmark = pytest.mark.root


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def veth_lab(ns: str, tag: str) -> dict[str, tuple[str, str, str, str]]:
    """Namespace ``ns`` with two veth pairs per switch: name -> (port 1, port 2, the
    test's end of port 1, the test's end of port 2)."""
    ip("netns", "add", ns)
    for knob in ("all", "default"):
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{knob}.disable_ipv6=1"],
                       check=True)
    ends = {}
    for i, name in enumerate(SWITCHES, 1):
        names = (f"p4t{tag}{i}a", f"p4t{tag}{i}b", f"p4t{tag}{i}x", f"p4t{tag}{i}y")
        for sw_end, test_end in ((names[0], names[2]), (names[1], names[3])):
            ip("-n", ns, "link", "add", sw_end, "type", "veth", "peer", "name", test_end)
            ip("-n", ns, "link", "set", sw_end, "up")
            ip("-n", ns, "link", "set", test_end, "up")
        ends[name] = names
    return ends


@dataclass
class Lab:
    ns: str
    ends: dict[str, tuple[str, str, str, str]]
    addr: dict[str, str]  # switch -> the address its clients use
    device: dict[str, int]
    proc: subprocess.Popen
    log: Path
    pcap: Path  # <pcap>/<switch>/<iface>_in.pcap, _out.pcap
    socks: dict[str, tuple[socket.socket, socket.socket]] = field(default_factory=dict)

    def client(self, sw: str) -> RawClient:
        c = RawClient(int(self.addr[sw].rsplit(":", 1)[1]), device_id=self.device[sw])
        c.arbitrate(1)
        return c

    def forwards(self, sw: str, dst: int, timeout: float = 2.0) -> bool:
        tx, rx = self.socks[sw]
        frame = tframe(dst=dst)
        tx.send(frame)
        return received(rx, frame[:14], timeout)


def wait_answering(addr: str, device_id: int, proc: subprocess.Popen, log: Path, timeout: float = 60.0) -> None:
    from finsy.proto.p4.v1 import p4runtime_pb2_grpc

    end = time.monotonic() + timeout
    while time.monotonic() < end:
        assert proc.poll() is None, f"the group exited: {log.read_text()}"
        with grpc.insecure_channel(addr) as ch:
            try:
                p4runtime_pb2_grpc.P4RuntimeStub(ch).GetForwardingPipelineConfig(
                    p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=device_id), timeout=0.5)
                return
            except grpc.RpcError:
                time.sleep(0.2)
    raise AssertionError(f"{addr} device {device_id} did not answer: {log.read_text()}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory) -> Iterator[Lab]:
    tmp = tmp_path_factory.mktemp("group")
    ns = f"p4t-gr-{uuid.uuid4().hex[:6]}"
    proc = None
    socks: list[socket.socket] = []
    try:
        ends = veth_lab(ns, uuid.uuid4().hex[:3])
        shared = f"127.0.0.1:{free_port()}"
        addr, device, switches = {}, {}, []
        for i, sw in enumerate(SWITCHES, 1):
            spec = {"name": sw, "program": str(RT_ALL), "device_id": i, "netns": ns, "cpu_port": 255,
                    "ports": {1: ends[sw][0], 2: ends[sw][1]}, "rx_ring_frames": 64, "tx_ring_frames": 32,
                    "pcap": str(tmp / "pcap" / sw)}
            if sw not in SHARED:
                spec["grpc_addr"] = f"127.0.0.1:{free_port()}"
            addr[sw] = spec.get("grpc_addr", shared)
            device[sw] = i
            switches.append(spec)
        group_file = tmp / "group.yaml"
        group_file.write_text(yaml.safe_dump({"grpc_addr": shared, "switches": switches}))
        log = tmp / "group.log"
        with open(log, "wb") as out:
            proc = subprocess.Popen([sys.executable, "-m", "p4target", "--log-level", "info", "group",
                                     str(group_file)], cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        for sw in SWITCHES:
            wait_answering(addr[sw], device[sw], proc, log)
        lab = Lab(ns, ends, addr, device, proc, log, tmp / "pcap")
        for sw in SWITCHES:
            tx = open_interface_socket(ends[sw][2], ns)
            rx = open_interface_socket(ends[sw][3], ns)
            socks += [tx, rx]
            lab.socks[sw] = (tx, rx)
        yield lab
    finally:
        for s in socks:
            s.close()
        stop(proc)
        ip("netns", "del", ns, check=False)


def port_count(c: RawClient, names: Names, index: int) -> int:
    e = entity(counter_entry=p4runtime_pb2.CounterEntry(counter_id=names.id_of("counters", "RtIngress.port_pkts"),
                                                         index=p4runtime_pb2.Index(index=index)))
    (got,) = c.read(e)
    return got.counter_entry.data.packet_count


def pcap_frames(lab: Lab, dst: int) -> dict[str, tuple[int, int]]:
    """Per switch: frames to ``dst`` in its port 1's _in.pcap and its port 2's _out.pcap."""
    def n(path: Path) -> int:
        return sum(frame[:6] == dst.to_bytes(6, "big") for _, frame in read_pcap(path)) if path.exists() else -1
    return {sw: (n(lab.pcap / sw / f"{lab.ends[sw][0]}_in.pcap"), n(lab.pcap / sw / f"{lab.ends[sw][1]}_out.pcap"))
            for sw in SWITCHES}


def test_entries_and_counters_are_per_switch(lab: Lab, rt_config) -> None:
    names = Names(rt_config[0])
    dst = 0x0A0000000011
    clients = {sw: lab.client(sw) for sw in SWITCHES}
    try:
        before = {sw: port_count(clients[sw], names, 1) for sw in SWITCHES}
        for sw in ("s1", "s3"):  # one on its own address, one on the shared one
            clients[sw].write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": dst}, "fwd", port=2)))
        assert lab.forwards("s1", dst) and lab.forwards("s3", dst)
        assert not lab.forwards("s2", dst, 0.5) and not lab.forwards("s4", dst, 0.5)
        for _ in range(2):  # s4 sees three frames in all, s2 one
            lab.forwards("s4", dst, 0.2)
        counts = {sw: port_count(clients[sw], names, 1) - before[sw] for sw in SWITCHES}
        assert counts == {"s1": 1, "s2": 1, "s3": 1, "s4": 3}
        # each switch's pcap files are its own ports' and hold its own frames: those
        # to dst came in on port 1 as counted above, and left by port 2 where an entry was
        want = {sw: (counts[sw], counts[sw] if sw in ("s1", "s3") else 0) for sw in SWITCHES}
        assert wait_for(lambda: pcap_frames(lab, dst) == want, 5), (pcap_frames(lab, dst), want)
        for sw in SWITCHES:
            own = {f"{lab.ends[sw][k]}_{d}.pcap" for k in (0, 1) for d in ("in", "out")}
            assert {f.name for f in (lab.pcap / sw).iterdir()} == own
        for sw in ("s1", "s3"):
            clients[sw].write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": dst}), "DELETE"))
    finally:
        for c in clients.values():
            c.close()
    text = lab.log.read_text()
    assert "s3 (device 3): ports" in text and "s1 (device 1): ports" in text


def test_unknown_device_on_the_shared_address_is_not_found(lab: Lab) -> None:
    from finsy.proto.p4.v1 import p4runtime_pb2_grpc

    with grpc.insecure_channel(lab.addr["s3"]) as ch:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
        with pytest.raises(grpc.RpcError) as err:
            stub.Write(p4runtime_pb2.WriteRequest(device_id=9), timeout=5)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND
        assert "device ids 3, 4" in err.value.details()
        with pytest.raises(grpc.RpcError) as err:
            stub.GetForwardingPipelineConfig(p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=1), timeout=5)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND  # device 1 has its own address


def test_a_bad_request_or_pipeline_is_its_switch_error_only(lab: Lab, rt_config) -> None:
    names = Names(rt_config[0])
    dst = 0x0A0000000022
    good = {sw: lab.client(sw) for sw in ("s1", "s3")}
    bad = {sw: lab.client(sw) for sw in ("s2", "s4")}
    try:
        for c in good.values():
            c.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": dst}, "fwd", port=2)))
        for sw, c in bad.items():
            broken = ins(names.entry("exact_t", {"hdr.eth.dst_addr": dst}, "fwd", port=2))
            broken.entity.table_entry.table_id = 0x0BADBAD
            assert c.write_codes(broken) == [grpc.StatusCode.INVALID_ARGUMENT.value[0]], sw
            with pytest.raises(grpc.RpcError) as err:
                c.set_pipeline(rt_config[0], b"{not a device config")
            assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT, sw
        assert lab.proc.poll() is None
        assert lab.forwards("s1", dst) and lab.forwards("s3", dst)
        # the switches that got the bad requests still have their pipeline and work
        for c in bad.values():
            c.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": dst}, "fwd", port=2)))
        assert lab.forwards("s2", dst) and lab.forwards("s4", dst)
        for c in (*good.values(), *bad.values()):
            c.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": dst}), "DELETE"))
    finally:
        for c in (*good.values(), *bad.values()):
            c.close()


def test_finsy_programs_a_switch_on_its_own_and_on_the_shared_address(lab: Lab, rt_config, tmp_path: Path) -> None:
    import finsy as fy

    from p4target.device_config import load_device_config
    from p4target.p4info import p4info_text

    p4info = tmp_path / "rt.p4info.txt"
    p4info.write_text(p4info_text(load_device_config(rt_config[1]).model))
    blob = tmp_path / "rt.json"
    blob.write_bytes(rt_config[1])
    dst = 0x0A0000000033

    async def program(sw: str) -> list[int]:
        opts = fy.SwitchOptions(p4info=p4info, p4blob=blob, device_id=lab.device[sw])
        async with fy.Switch(sw, lab.addr[sw], opts) as s:
            await s.write([+fy.P4TableEntry("exact_t", match=fy.P4TableMatch(dst_addr=dst),
                                            action=fy.P4TableAction("fwd", port=2))])
            return [e.match["dst_addr"] for e in [x async for x in s.read(fy.P4TableEntry("exact_t"))]]

    for sw in ("s2", "s4"):
        assert asyncio.run(program(sw)) == [dst], sw
        assert lab.forwards(sw, dst), f"{sw} did not forward after finsy's entry"
    assert not lab.forwards("s1", dst, 0.5) and not lab.forwards("s3", dst, 0.5)


@pytest.mark.skipif(not SHELL_PY.exists(), reason=".venv-shell is missing: run `make deps` to create it")
def test_p4runtime_shell_programs_a_switch_on_its_own_and_on_the_shared_address(lab: Lab, rt_config,
                                                                                 tmp_path: Path) -> None:
    from p4target.device_config import load_device_config
    from p4target.p4info import p4info_text

    p4info = tmp_path / "p4info.txt"
    p4info.write_text(p4info_text(load_device_config(rt_config[1]).model))
    cfg = tmp_path / "device_config.json"
    cfg.write_bytes(rt_config[1])
    dst = 0x0A0000000044
    for sw in ("s1", "s3"):
        proc = subprocess.Popen([str(SHELL_PY), str(SHELL_SCRIPT), lab.addr[sw], str(lab.device[sw]), str(p4info),
                                 str(cfg), "0a:00:00:00:00:44", "2"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert json.loads(proc.stdout.readline() or "{}").get("ready"), proc.stderr.read()
            assert lab.forwards(sw, dst), f"{sw} did not forward after the shell's entry"
            assert lab.forwards(sw, dst)
            stdout, stderr = proc.communicate("\n", timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
        seen = json.loads(stdout.strip().splitlines()[-1])
        assert seen["exact"] == [["02"]], stderr  # the shell's pipeline push left only its entry
        assert seen["counter"] == [2], stderr  # the frames since the push, on this switch only


def test_a_failing_pipeline_leaves_the_other_switches_forwarding(rt_config, tmp_path: Path) -> None:
    """In this process: switch a's pipeline raises on every batch; b forwards on."""
    from p4target.group.spec import load_group
    from p4target.group.process import SwitchGroup

    ns = f"p4t-gf-{uuid.uuid4().hex[:6]}"
    tag = uuid.uuid4().hex[:3]
    group = thread = None
    socks: list[socket.socket] = []
    try:
        ends = veth_lab(ns, tag)
        spec_file = tmp_path / "g.yaml"
        spec_file.write_text(yaml.safe_dump({"switches": [
            {"name": sw, "program": str(RT_ALL), "device_id": i, "netns": ns, "grpc_addr": "127.0.0.1:0",
             "ports": {1: ends[sw][0], 2: ends[sw][1]}, "rx_ring_frames": 64}
            for i, sw in enumerate(("s1", "s2"), 1)]}))
        group = SwitchGroup(load_group(spec_file))
        group.build()
        names = Names(rt_config[0])
        dst = 0x0A0000000055
        group.start_servers()
        for gs in group.switches:
            c = RawClient(gs.server.bound_port, device_id=gs.spec.device_id)
            try:
                c.arbitrate(1)
                c.write(ins(names.entry("exact_t", {"hdr.eth.dst_addr": dst}, "fwd", port=2)))
            finally:
                c.close()
        thread = group.start()
        pairs = {}
        for sw in ("s1", "s2"):
            tx, rx = open_interface_socket(ends[sw][2], ns), open_interface_socket(ends[sw][3], ns)
            socks += [tx, rx]
            pairs[sw] = (tx, rx)

        def forwards(sw: str, timeout: float = 2.0) -> bool:
            frame = tframe(dst=dst)
            pairs[sw][0].send(frame)
            return received(pairs[sw][1], frame[:14], timeout)

        assert forwards("s1") and forwards("s2")
        a = group.find("s1")

        def broken(*_args, **_kw):
            raise RuntimeError("pipeline failure injected by the test")

        errors = a.device.errors
        a.device.switch.inject_batch = a.device.switch.inject = broken  # whichever path the device takes
        assert not forwards("s1", 0.5)
        assert forwards("s2") and forwards("s2")
        assert a.device.errors + a.loop_errors > errors and thread.is_alive()
        assert group.find("s2").device.errors == 0
    finally:
        for s in socks:
            s.close()
        if group is not None:
            group.stop()
            if thread is not None:
                thread.join(10)
            group.close()
        ip("netns", "del", ns, check=False)
