"""p4runtime-shell on one device of a multi-switch process: write an entry, read a counter.

Run with .venv-shell's python:
    drive_shell_device.py ADDR DEVICE_ID P4INFO.txt DEVICE_CONFIG DST_MAC PORT
Connects to DEVICE_ID at ADDR (its own address or one shared by several devices),
pushes the pipeline, sends ``exact_t`` frames for DST_MAC out of PORT, prints
{"ready": true}, waits for a line on stdin (the test sends frames meanwhile), then
prints the entries it reads back and the ``port_pkts`` count of port 1.
"""

import json
import sys

import p4runtime_sh.shell as sh


def main() -> None:
    addr, device_id, p4info, config, dst, port = sys.argv[1:7]
    sh.setup(device_id=int(device_id), grpc_addr=addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(p4info, config), verbose=False)
    seen = {}
    try:
        te = sh.TableEntry("RtIngress.exact_t")(action="RtIngress.fwd")
        te.match["hdr.eth.dst_addr"] = dst
        te.action["port"] = port
        te.insert()
        print(json.dumps({"ready": True}), flush=True)
        sys.stdin.readline()
        seen["exact"] = [[p.value.hex() for p in e.msg().action.action.params]
                         for e in sh.TableEntry("RtIngress.exact_t").read()]
        c = sh.CounterEntry("RtIngress.port_pkts")
        c.index = 1
        seen["counter"] = [e.packet_count for e in c.read()]
    finally:
        sh.teardown()
    print(json.dumps(seen), flush=True)


if __name__ == "__main__":
    main()
