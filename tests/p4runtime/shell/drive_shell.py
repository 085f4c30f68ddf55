"""Drive the embedded target's P4Runtime server with p4runtime-shell's Python API.

Run with .venv-shell's python (p4runtime-shell 0.0.6 needs its own old protobuf):
    drive_shell.py ADDR P4INFO.txt DEVICE_CONFIG
Pushes the pipeline, writes entries of several kinds, reads them back, sends a
packet-out, waits for a packet-in, and prints one JSON object with what it saw.
"""

import json
import sys

import p4runtime_sh.shell as sh


def main() -> None:
    addr, p4info, config = sys.argv[1:4]
    sh.setup(device_id=1, grpc_addr=addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(p4info, config), verbose=False)
    seen = {}
    try:
        te = sh.TableEntry("RtIngress.exact_t")(action="RtIngress.fwd")
        te.match["hdr.eth.dst_addr"] = "0a:00:00:00:00:01"
        te.action["port"] = "3"
        te.insert()
        cpu = sh.TableEntry("RtIngress.exact_t")(action="RtIngress.to_cpu")
        cpu.match["hdr.eth.dst_addr"] = "0a:00:00:00:00:02"
        cpu.insert()
        acl = sh.TableEntry("RtIngress.acl_t")(action="RtIngress.set_out")
        acl.match["hdr.t.k16"] = "0x1200&&&0xff00"
        acl.match["hdr.t.k8"] = "5..9"
        acl.priority = 7
        acl.action["v"] = "0x42"
        acl.insert()
        lpm = sh.TableEntry("RtIngress.lpm_t")(action="RtIngress.lpm_hit")
        lpm.match["hdr.t.key32"] = "10.0.0.0/8"
        lpm.action["v"] = "8"
        lpm.insert()
        seen["exact"] = sorted([p.value.hex() for p in e.msg().action.action.params]
                               for e in sh.TableEntry("RtIngress.exact_t").read())
        seen["acl_priorities"] = [e.priority for e in sh.TableEntry("RtIngress.acl_t").read()]
        seen["lpm"] = [str(e.match["hdr.t.key32"]).split("\n")[0] for e in sh.TableEntry("RtIngress.lpm_t").read()]
        mcg = sh.MulticastGroupEntry(7).add(1, 1).add(2, 1)
        mcg.insert()
        seen["mcast"] = [len(g.replicas) for g in sh.MulticastGroupEntry(7).read()]
        mem = sh.ActionProfileMember("RtIngress.ap")(member_id=1, action="RtIngress.set_out")
        mem.action["v"] = "5"
        mem.insert()
        seen["members"] = [m.member_id for m in sh.ActionProfileMember("RtIngress.ap").read()]
        c = sh.CounterEntry("RtIngress.port_pkts")
        c.index = 4
        seen["counter"] = [e.packet_count for e in c.read()]
        # a duplicate insert comes back as an error, the shell does not hang
        try:
            te.insert()
            seen["duplicate"] = "accepted"
        except Exception as exc:
            seen["duplicate"] = type(exc).__name__ + ": " + str(exc)[:200]
        pin = sh.PacketIn()
        # a packet-out to port 2: the test sees it leave the device there
        out = sh.PacketOut(payload=bytes.fromhex("0a0000000003" + "0a00000000fe" + "0800") + b"x" * 20,
                           egress_port="2", _pad="0")
        out.send()
        # the test sends a frame to dst 0a:..:02 meanwhile, which goes to the CPU
        print(json.dumps({"ready": True}), flush=True)
        sys.stdin.readline()
        ins = list(pin.sniff(timeout=1.5))
        seen["packet_in"] = [(i.packet.payload.hex(), [m.value.hex() for m in i.packet.metadata]) for i in ins]
        del out
    finally:
        sh.teardown()
    print(json.dumps(seen), flush=True)


if __name__ == "__main__":
    main()
