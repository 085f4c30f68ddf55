"""pcap files of a port's traffic (``p4target run --pcap DIR``), as BMv2's ``--pcap``
writes them: the classic libpcap format, which Wireshark, tcpdump and scapy read."""

from __future__ import annotations

import struct
import time
from pathlib import Path

from p4target.errors import P4Error

MAX_FRAME = 65535


class PcapWriter:
    """Writes frames to a classic pcap file (microsecond timestamps, Ethernet).

    The format is a 24-byte global header (magic 0xa1b2c3d4, version 2.4, snaplen,
    link type 1 = Ethernet) and, per frame, a 16-byte record header (seconds,
    microseconds, captured length, original length) followed by the bytes; all in
    this machine's byte order, which readers detect from the magic.
    """

    MAGIC = 0xA1B2C3D4
    LINKTYPE_ETHERNET = 1

    def __init__(self, path: Path | str, snaplen: int = MAX_FRAME) -> None:
        self.path = Path(path)
        self.snaplen = snaplen
        self._f = open(self.path, "wb")  # closed by close()
        self._f.write(struct.pack("=IHHiIII", self.MAGIC, 2, 4, 0, 0, snaplen,
                                  self.LINKTYPE_ETHERNET))
        self.count = 0
        self.dirty = True  # the header too: a port without traffic still has a readable (empty) file

    def write(self, frame: bytes, timestamp: float | None = None) -> None:
        ts = time.time() if timestamp is None else timestamp
        sec = int(ts)
        usec = int(round((ts - sec) * 1e6))
        if usec >= 1_000_000:
            sec, usec = sec + 1, usec - 1_000_000
        cap = frame[: self.snaplen]
        self._f.write(struct.pack("=IIII", sec, usec, len(cap), len(frame)))
        self._f.write(cap)
        self.count += 1
        self.dirty = True

    def flush(self) -> None:
        if self.dirty and not self._f.closed:
            self._f.flush()
            self.dirty = False

    def close(self) -> None:
        if not self._f.closed:
            self._f.close()


def read_pcap(path: Path | str) -> list[tuple[float, bytes]]:
    """Read a classic pcap file (either byte order, usec or nsec) -> [(time, frame)]."""
    data = Path(path).read_bytes()
    if len(data) < 24:
        raise P4Error("not a pcap file (shorter than its header)", str(path))
    for endian in ("<", ">"):
        magic = struct.unpack(endian + "I", data[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            scale = 1e-6 if magic == 0xA1B2C3D4 else 1e-9
            break
    else:
        raise P4Error("not a pcap file (bad magic number)", str(path))
    out: list[tuple[float, bytes]] = []
    off = 24
    while off + 16 <= len(data):
        sec, frac, caplen, _ = struct.unpack(endian + "IIII", data[off: off + 16])
        off += 16
        out.append((sec + frac * scale, data[off: off + caplen]))
        off += caplen
    return out
