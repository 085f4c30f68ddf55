"""Experiment 5, against TCP: goodput of one MRC-lite transfer and of one TCP flow
(plain Python sockets, ``experiments/tcp_flow.py``) between the same two hosts, one
after the other in one run, the same bytes each.

Why not at once: two flows on 2 cores of Python switches would measure which process
the scheduler favours. MRC-lite runs with its window only (``--rate`` paces it) and payloads
of the size TCP's segments have here (``--mtu 1380``); TCP is the kernel's (cubic), on
one path (the NIC sprays non-MRC traffic per flow: one plane, one spine), its
segments handed to the NIC switch as 64 KB super-frames that the target cuts
(docs/target.md).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from experiments import common as C
from cli_common.options import finite

# MRC-lite payload per packet: the host MTU (1460) less IPv6, UDP, BTH and RETH (76),
# rounded down; TCP's MSS there is 1388 (1460 - IPv6 - TCP with timestamps)
MTU = 1380
# The timers: the transport's own on both targets (docs/experiments.md, "The
# transport's timers").
TIMERS: dict[str, float | None] = {"nack_delay": None, "rto_min": None}


def _flow(fn: Any, module: str, src: str, dst: str, recv_args: list[str], send_args: list[str],
          timeout: float) -> dict[str, Any]:
    """``python -m MODULE recv`` in ``dst`` and ``send`` in ``src``; the receiver's JSON line,
    with the sender's under ``"sender"``."""
    py = sys.executable
    recv = fn.host(dst).popen([py, "-m", module, "recv", "--listen", fn.address(dst), *recv_args], cwd=C.REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    send = fn.host(src).popen([py, "-m", module, "send", "--to", fn.address(dst), *send_args], cwd=C.REPO,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        out, err = recv.communicate(timeout=timeout + 10)
        sent, _ = send.communicate(timeout=30)
    finally:
        for p in (recv, send):
            if p.poll() is None:
                p.kill()
                p.wait()
    lines = out.decode().strip().splitlines()
    r: dict[str, Any] = json.loads(lines[-1]) if lines else {"ok": False, "error": err.decode()[-300:]}
    r["exit"] = recv.returncode
    sent_lines = sent.decode().strip().splitlines()
    r["sender"] = json.loads(sent_lines[-1]) if sent_lines else {}
    return r


def tcp_transfer(fn: Any, src: str, dst: str, nbytes: int, timeout: float = 120.0) -> dict[str, Any]:
    """One TCP flow (experiments/tcp_flow.py): bytes, seconds, goodput, verified."""
    args = ["--bytes", str(nbytes), "--timeout", str(timeout)]
    return _flow(fn, "experiments.tcp_flow", src, dst, args, args, timeout)


def udp_stream(fn: Any, src: str, dst: str, nbytes: int, size: int, timeout: float = 60.0) -> dict[str, Any]:
    """One unpaced UDP stream (experiments/udp_stream.py) of datagrams of ``size``
    bytes: what the fabric delivered, and at what rate."""
    return _flow(fn, "experiments.udp_stream", src, dst, ["--bytes", str(nbytes), "--timeout", str(timeout)],
                 ["--bytes", str(nbytes), "--size", str(size)], timeout)


def run(fn: Any, workdir: Path, *, nbytes: int, rate: float | None, mtu: int = MTU, src: str = "h1",
        dst: str = "h3", nack_delay: float | None = None, rto_min: float | None = None) -> dict[str, Any]:
    send, recv = C.timer_args(nack_delay, rto_min)
    args = (["--rate", str(rate)] if rate else []) + ["--mtu", str(mtu), *send]
    mrc = C.run_transfer(fn, src, dst, nbytes, workdir, send_args=args, recv_args=recv)
    tcp = tcp_transfer(fn, src, dst, nbytes)
    s = mrc.sender
    return {"bytes": nbytes, "rate_pps": rate, "mtu": mtu, "src": src, "dst": dst,
            "mrc": {"ok": mrc.ok, "goodput_bps": s.get("goodput_bps"), "completion_time_s": s.get("completion_time_s"),
                    "retransmissions": s.get("retransmissions"), "summary": mrc.summary(),
                    "delivered_series": s.get("delivered_series", [])},
            "tcp": tcp}


def figures(d: dict[str, Any]) -> list[str]:
    m, t = d["mrc"], d["tcp"]
    return [f"against TCP: {d['bytes']} bytes {d['src']} -> {d['dst']}, one after the other",
            f"  MRC-lite ({'paced at %g packets/s' % d['rate_pps'] if d['rate_pps'] else 'window only'}, "
            f"{d['mtu']}-byte payloads): verified="
            f"{m['ok']}, goodput {C.mbps(m['goodput_bps'])} Mb/s, completion {m['completion_time_s'] or 0:.2f} s, "
            f"retransmissions {(m['retransmissions'] or {}).get('total')}",
            f"  TCP (one flow, one path): verified={t.get('ok')}, goodput {C.mbps(t.get('goodput_bps'))} Mb/s, "
            f"{t.get('seconds', 0):.2f} s"]


def plot(d: dict[str, Any]) -> Any:
    plt = C.pyplot()
    fig, ax = plt.subplots(figsize=(6, 4))
    vals = [C.mbps(d["mrc"]["goodput_bps"]), C.mbps(d["tcp"].get("goodput_bps"))]
    ax.bar(["MRC-lite (8 paths)", "TCP (1 path)"], vals, color=["tab:blue", "tab:gray"])
    for i, v in enumerate(vals):
        ax.text(i, v, f"{v:.1f}", ha="center", va="bottom")
    ax.set_ylabel("goodput, Mb/s")
    ax.set_title(f"{d['bytes'] / 1e6:g} MB h1 -> h3 through the Python fabric")
    return fig


# On BMv2: 500 packets, MRC-lite paced at 400 packets/s (embedded: window only, 0).
DEFAULTS = C.Defaults(embedded={"nbytes": 8_000_000, "rate": 0.0, **TIMERS},
                      bmv2={"nbytes": 500_000, "rate": 400.0, **TIMERS})


def acceptable(d: dict[str, Any]) -> bool:
    """Both transfers verified (the goodputs are figures, not a verdict)."""
    return bool(d["mrc"]["ok"] and d["tcp"].get("ok"))


EXPERIMENT = C.Experiment("tcp", figures, plot, acceptable, DEFAULTS)
app = C.app(__doc__.split("\n\n")[0])


@app.command()
def cli(
        nbytes: Annotated[Optional[int], C.bytes_option(DEFAULTS, "bytes per transfer")] = None,
        rate: Annotated[Optional[float], typer.Option(
            "--rate", min=0, callback=finite, help=DEFAULTS.help("rate", "MRC-lite pacing, packets/s (0: window only)"))] = None,
        mtu: Annotated[int, typer.Option(
            "--mtu", min=1, help="MRC-lite payload bytes per packet")] = MTU,
        nack_delay: Annotated[Optional[float], C.nack_delay_option(DEFAULTS)] = None,
        rto_min: Annotated[Optional[float], C.rto_min_option(DEFAULTS)] = None,
        out_dir: C.OutDirOpt = C.RESULTS, prefix: C.PrefixOpt = None, target: C.TargetOpt = "embedded",
        verbose: C.VerboseOpt = False) -> int:
    def run_one(fn: Any, workdir: Path, *, nbytes: int, rate: float, **timers: float | None) -> dict[str, Any]:
        return run(fn, workdir, nbytes=nbytes, rate=rate or None, mtu=mtu, **timers)

    return C.main(EXPERIMENT, C.Options(out_dir, prefix, target, verbose), run_one,
                  {"nbytes": nbytes, "rate": rate, "nack_delay": nack_delay, "rto_min": rto_min})


def main(argv: list[str] | None = None) -> int:
    return C.command(app, "experiments.tcp", argv, DEFAULTS)


if __name__ == "__main__":
    raise SystemExit(main())
