"""Plain INSERTs (a direct action, no counter or meter data) go straight to the
runtime's key form (translate.decode_key, TableRuntime.add_checked).

Why: that path maps P4Info field and parameter ids to positions in the program's key
and argument order itself, so a P4Info whose ids run in another order than the
program's declarations must still steer packets by the right fields and read back
the same entry; and the checks the runtime no longer repeats must still refuse what
they refused (a keyless table takes no entries).
"""

from __future__ import annotations

import grpc
import pytest
from finsy.proto.google.rpc import code_pb2
from finsy.proto.p4.v1 import p4runtime_pb2 as pb
from scapy.layers.l2 import Ether
from scapy.packet import Raw

from tests.p4runtime.p4rt_client import Names, RawClient, enc, entity, errors_of, ins
from tests.p4runtime.conftest import WRITE_COMPILED

# key fields and action parameters numbered against their order of declaration
PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
struct headers_t { eth_t eth; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(@id(2) bit<9> port, @id(1) bit<16> tag) { sm.egress_spec = port; hdr.eth.type = tag; }
    table two {
        key = { hdr.eth.dst: exact @id(2); hdr.eth.src: exact @id(1); }
        actions = { fwd; NoAction; }
        default_action = NoAction();
    }
    table keyless { actions = { fwd; NoAction; } default_action = NoAction(); }
    apply { sm.egress_spec = 0; two.apply(); keyless.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.eth); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""

DST, SRC = 0x0A0000000001, 0x0A00000000FE


def _mac(v: int) -> str:
    return ":".join(f"{b:02x}" for b in v.to_bytes(6, "big"))


@pytest.fixture
def setup(tmp_path):
    from p4target.device import Device
    from p4target.device_config import device_config_from_file, load_device_config
    from p4target.p4info import build_p4info
    from p4target.p4runtime.server import P4RuntimeServer

    prog = tmp_path / "ids.p4"
    prog.write_text(PROGRAM)
    config = device_config_from_file(prog)
    p4info = build_p4info(load_device_config(config).model)
    device = Device(device_id=1)
    out: list = []
    device.output_sink = lambda port, frame: out.append((port, frame))
    server = P4RuntimeServer(device, "127.0.0.1:0", compiled_write=WRITE_COMPILED)
    server.start()
    client = RawClient(server.bound_port, device_id=1)
    client.arbitrate(3)
    client.set_pipeline(p4info, config)
    yield client, Names(p4info), device, out
    client.close()
    server.stop()


def test_ids_out_of_declaration_order_steer_by_the_right_fields(setup) -> None:
    client, names, device, out = setup
    two = names.table("two")
    assert [(f.id, f.name) for f in two.match_fields] == [(2, "hdr.eth.dst"), (1, "hdr.eth.src")]
    assert [(p.id, p.name) for p in names.action("fwd").params] == [(2, "port"), (1, "tag")]
    e = pb.TableEntry(table_id=two.preamble.id, match=[
        pb.FieldMatch(field_id=1, exact=pb.FieldMatch.Exact(value=SRC.to_bytes(6, "big"))),
        pb.FieldMatch(field_id=2, exact=pb.FieldMatch.Exact(value=DST.to_bytes(6, "big")))])
    e.action.action.action_id = names.action_id("fwd")
    e.action.action.params.add(param_id=1, value=b"\x88\xb6")  # tag
    e.action.action.params.add(param_id=2, value=b"\x05")  # port
    client.write(ins(e))

    device.receive(1, bytes(Ether(dst=_mac(DST), src=_mac(SRC), type=0x0800) / Raw(b"x" * 20)))
    assert [(port, Ether(frame).type) for port, frame in out] == [(5, 0x88B6)]
    out.clear()
    device.receive(1, bytes(Ether(dst=_mac(SRC), src=_mac(DST), type=0x0800) / Raw(b"x" * 20)))  # swapped: a miss
    assert [(port, Ether(frame).type) for port, frame in out] == [(0, 0x0800)]

    got = [x.table_entry for x in client.read(entity(table_entry=pb.TableEntry(table_id=two.preamble.id)))]
    want = pb.TableEntry(table_id=two.preamble.id, match=[
        pb.FieldMatch(field_id=1, exact=pb.FieldMatch.Exact(value=SRC.to_bytes(6, "big"))),
        pb.FieldMatch(field_id=2, exact=pb.FieldMatch.Exact(value=DST.to_bytes(6, "big")))])
    want.action.action.action_id = names.action_id("fwd")
    want.action.action.params.add(param_id=1, value=b"\x88\xb6")
    want.action.action.params.add(param_id=2, value=b"\x05")
    assert got == [want]


def test_a_keyless_table_still_takes_no_entries(setup) -> None:
    client, names, _, _ = setup
    e = pb.TableEntry(table_id=names.table_id("keyless"))
    e.action.action.CopyFrom(names.act("fwd", port=1, tag=2))
    with pytest.raises(grpc.RpcError) as info:
        client.write(ins(e))
    [err] = errors_of(info.value)
    assert err.canonical_code == code_pb2.INVALID_ARGUMENT and "no key" in err.message
    assert client.read(entity(table_entry=pb.TableEntry(table_id=names.table_id("keyless")))) == []


def test_plain_modify_keeps_the_direct_counter_and_delete_removes(client, names, rig) -> None:
    from tests.p4runtime.conftest import tframe

    dst = 0x0A0000000009
    exact = lambda **kw: names.entry("exact_t", {"hdr.eth.dst_addr": dst}, **kw)  # noqa: E731
    counted = pb.TableEntry(table_id=names.table_id("exact_t"))
    counted.counter_data.SetInParent()
    client.write(ins(exact(action="fwd", port=3)))
    assert [p for p, _ in rig.send(1, tframe(dst=dst))] == [3]
    client.write(ins(exact(action="fwd", port=4), "MODIFY"))
    assert [p for p, _ in rig.send(1, tframe(dst=dst))] == [4]
    [got] = [e.table_entry for e in client.read(entity(table_entry=counted))]
    assert got.counter_data.packet_count == 2 and got.action.action.params[0].value == b"\x04"

    other = lambda **kw: names.entry("exact_t", {"hdr.eth.dst_addr": dst + 1}, **kw)  # noqa: E731
    assert client.write_codes(ins(other(action="fwd", port=1), "MODIFY"), ins(other(), "DELETE")) == [
        code_pb2.NOT_FOUND, code_pb2.NOT_FOUND]
    client.write(ins(exact(), "DELETE"))
    assert client.read(entity(table_entry=counted)) == []
    assert [p for p, _ in rig.send(1, tframe(dst=dst))] != [4]  # the default (NoAction) now


def test_large_batches_run_with_the_cyclic_collector_paused(rig, client, names, monkeypatch) -> None:
    """A batch of at least GC_PAUSE_MIN_UPDATES updates is applied with ``gc`` off and
    turns it back on afterwards, also when an update fails; a small batch leaves it on."""
    import gc

    from p4target.p4runtime import server as server_module

    seen: list[bool] = []
    real = rig.server._apply_update  # the write path this server chose

    def watched(sw, st, u):
        seen.append(gc.isenabled())
        if u.entity.table_entry.match[0].exact.value == enc(0x0B0000000000 + 5, 48):
            raise RuntimeError("a bug in one update")  # answered INTERNAL for that update only
        return real(sw, st, u)

    monkeypatch.setattr(rig.server, "_apply_update", watched)
    entry = lambda i: ins(names.entry("exact_t", {"hdr.eth.dst_addr": 0x0B0000000000 + i},  # noqa: E731
                                      action="fwd", port=1))
    big = server_module.GC_PAUSE_MIN_UPDATES
    codes = client.write_codes(*(entry(i) for i in range(big)))
    assert codes[5] == code_pb2.INTERNAL and codes.count(code_pb2.OK) == big - 1
    assert seen == [False] * big and gc.isenabled()
    seen.clear()
    client.write(*(entry(big + i) for i in range(3)))
    assert seen == [True] * 3
