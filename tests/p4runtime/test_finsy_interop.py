"""finsy (the project controller's P4Runtime client) against our server, unchanged."""

from __future__ import annotations

import asyncio
from pathlib import Path

import finsy as fy

from p4target.device_config import load_device_config
from p4target.p4info import p4info_text
from tests.p4runtime.conftest import tframe


def test_finsy_pushes_writes_reads_and_gets_packet_ins(rig, rt_config, tmp_path: Path) -> None:
    p4info = tmp_path / "rt.p4info.txt"
    p4info.write_text(p4info_text(load_device_config(rt_config[1]).model))
    blob = tmp_path / "rt.bundle.json"
    blob.write_bytes(rt_config[1])
    seen: dict = {}

    async def main() -> None:
        opts = fy.SwitchOptions(p4info=p4info, p4blob=blob, device_id=1)
        async with fy.Switch("sw1", f"127.0.0.1:{rig.server.bound_port}", opts) as sw:
            await sw.write([
                +fy.P4TableEntry("exact_t", match=fy.P4TableMatch(dst_addr=0x0A0000000001),
                                 action=fy.P4TableAction("fwd", port=3)),
                +fy.P4TableEntry("exact_t", match=fy.P4TableMatch(dst_addr=0x0A0000000002),
                                 action=fy.P4TableAction("to_cpu")),
                +fy.P4TableEntry("acl_t", match=fy.P4TableMatch({"hdr.t.k16": (0x1200, 0xFF00)}), priority=5,
                                 action=fy.P4TableAction("set_out", v=4)),
            ])
            seen["exact"] = sorted(e.match["dst_addr"] for e in [x async for x in sw.read(fy.P4TableEntry("exact_t"))])
            seen["forward"] = [p for p, _ in rig.send(1, tframe(dst=0x0A0000000001))]
            try:
                await sw.write([+fy.P4TableEntry("exact_t", match=fy.P4TableMatch(dst_addr=0x0A0000000001),
                                                 action=fy.P4TableAction("fwd", port=3))])
            except fy.P4ClientError as exc:
                seen["error"] = [d.canonical_code for d in exc.details.values()]
            packets = sw.read_packets()
            rig.send(6, tframe(dst=0x0A0000000002))
            pkt = await asyncio.wait_for(anext(packets), 5)
            seen["packet_in"] = (pkt.payload, pkt.metadata)

    asyncio.run(main())
    assert seen["exact"] == [0x0A0000000001, 0x0A0000000002]
    assert seen["forward"] == [3]
    assert seen["error"] == [fy.GRPCStatusCode.ALREADY_EXISTS]
    payload, md = seen["packet_in"]
    assert payload == tframe(dst=0x0A0000000002) and md["ingress_port"] == 6
