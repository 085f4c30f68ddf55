"""Packet I/O: PacketOut -> frame with the packet_out header, frame -> PacketIn.

The program declares ``@controller_header("packet_out")`` and ``("packet_in")``
headers; their fields are the PacketOut/PacketIn metadata (ids from 1 in field
order). A PacketOut becomes the packet_out header (fields packed big-endian, MSB
first, as the P4 parser extracts them) followed by the payload, injected on the CPU
port. A frame the program sends to the CPU port starts with the packet_in header,
which is cut off and returned as metadata.
"""

from __future__ import annotations

from finsy.proto.p4.v1 import p4runtime_pb2

from p4target.p4runtime import bytestrings
from p4target.p4runtime.errors import invalid
from p4target.p4runtime.schema import MetadataInfo


def header_bytes(info: MetadataInfo) -> int:
    bits = sum(f.bitwidth for f in info.fields.values())
    return (bits + 7) // 8


def build_packet_out_frame(info: MetadataInfo | None, msg: p4runtime_pb2.PacketOut) -> bytes:
    """The frame the pipeline sees on the CPU port for ``msg``; P4RTError if malformed."""
    if info is None:
        if len(msg.metadata):
            raise invalid("the program has no packet_out header; send PacketOut without metadata")
        return bytes(msg.payload)
    values: dict[int, int] = {}
    for md in msg.metadata:
        f = info.fields.get(md.metadata_id)
        if f is None:
            raise invalid(f"packet_out metadata id {md.metadata_id} is not in the P4Info")
        if md.metadata_id in values:
            raise invalid(f"packet_out metadata '{f.name}' given twice")
        values[md.metadata_id] = bytestrings.decode(md.value, f.bitwidth, f"packet_out metadata '{f.name}'")
    acc = 0
    bits = 0
    for fid in sorted(info.fields):
        f = info.fields[fid]
        acc = (acc << f.bitwidth) | values.get(fid, 0)
        bits += f.bitwidth
    pad = (-bits) % 8
    acc <<= pad
    return acc.to_bytes((bits + pad) // 8, "big") + bytes(msg.payload)


def parse_packet_in(info: MetadataInfo | None, frame: bytes) -> p4runtime_pb2.PacketIn:
    """PacketIn for a frame the program sent to the CPU port."""
    if info is None:
        return p4runtime_pb2.PacketIn(payload=frame)
    n = header_bytes(info)
    head, payload = frame[:n], frame[n:]
    acc = int.from_bytes(head.ljust(n, b"\x00"), "big")
    total = n * 8
    msg = p4runtime_pb2.PacketIn(payload=payload)
    shift = total
    for fid in sorted(info.fields):
        f = info.fields[fid]
        shift -= f.bitwidth
        value = (acc >> shift) & ((1 << f.bitwidth) - 1)
        msg.metadata.add(metadata_id=fid, value=bytestrings.encode(value))
    return msg
