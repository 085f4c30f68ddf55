"""Experiment 1, spraying balance: one transfer over every path of 4 planes, against one
plain UDP flow that the NIC sprays per flow.

Why the switches' counters: the sender's own per-plane counts say what it meant to do;
the NIC's ``plane_tx`` and the leaves' and spines' ``tx_port`` counters (read over
P4Runtime before and after) say where the packets went. The MRC transfer (UDP 4791,
an EV per packet from the address plan) should load every plane and every spine link
within 10% of the mean. The comparison is the same bytes sent by ``mrc-send`` to
another UDP port from one source port: not MRC for the NIC, so ``spray_mode`` sprays
it per flow (docs/nic.md) and the flow hash keeps all of it on one (plane, spine)
member. The RoCEv2 baseline's QP (``mrc-send --transport roce``, one path per queue
pair, docs/transport.md) carries the same bytes at the same packet rate from a fixed
source port (``ROCE_SOURCE_PORT``): its hash puts it on one EV, so one plane and one
spine link, as a real NIC's ECMP does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional


from controller.counters import delta, link_loads
from experiments import common as C
from experiments import roce as R
from fabric.paths import links

PLAIN_PORT = 4792  # not 4791: the NIC does not treat it as MRC
PLAIN_SOURCE_PORT = 40000  # one UDP source port: one flow
ROCE_SOURCE_PORT = 50000  # the QP's entropy: a fixed one, so every run takes the same path
# The timers: the transport's own on both targets (docs/experiments.md, "The
# transport's timers").
TIMERS: dict[str, float | None] = {"nack_delay": None, "rto_min": None}


def loads(fn: Any, before: dict, after: dict, src: str, dst: str) -> dict[str, Any]:
    """Per-plane packets out of ``src``'s NIC and per-spine-link packets in the data's
    direction (source leaf up to each spine, each spine down to the destination leaf)."""
    d = delta(after, before)
    s, t = fn.topo.host(src), fn.topo.host(dst)
    planes = {p: d.get(s.nic, {}).get("NicEgress.plane_tx", {}).get(p, (0, 0))[0] for p in range(fn.topo.planes)}
    fabric = [link for link in links(fn.topo) if link.kind == "fabric"]
    by_name = {x.link: x for x in link_loads(fn.topo, fabric, d)}
    up = {link.name: by_name[link.name].up_packets for link in fabric if link.leaf == s.leaf}
    down = {link.name: by_name[link.name].down_packets for link in fabric if link.leaf == t.leaf}
    return {"planes": planes, "spine_up": up, "spine_down": down}


def run(fn: Any, workdir: Path, *, nbytes: int, rate: float, src: str = "h1", dst: str = "h3",
        nack_delay: float | None = None, rto_min: float | None = None) -> dict[str, Any]:
    """The three transfers, one after the other, each between two counter reads."""
    out: dict[str, Any] = {"bytes": nbytes, "rate_pps": rate, "src": src, "dst": dst}
    send, recv = C.timer_args(nack_delay, rto_min)
    for name, send_args, recv_args in (
            ("mrc", ["--rate", str(rate), *send], recv),
            ("per_flow", ["--rate", str(rate), *send, "--port", str(PLAIN_PORT), "--source-port", str(PLAIN_SOURCE_PORT),
                          "--ev-list", "1", "--ev-min-active", "1"], [*recv, "--port", str(PLAIN_PORT)]),
            ("roce", R.send_args(rate, source_port=ROCE_SOURCE_PORT), [])):
        before = C.read_counters(fn)
        res = (R.run_transfer(fn, src, dst, nbytes, workdir / name, send_args, recv_args) if name == "roce" else
               C.run_transfer(fn, src, dst, nbytes, workdir / name, send_args=send_args, recv_args=recv_args))
        after = C.read_counters(fn)
        load = loads(fn, before, after, src, dst)
        out[name] = {"ok": res.ok, "summary": res.summary(), "goodput_bps": res.sender.get("goodput_bps"),
                     "completion_time_s": res.sender.get("completion_time_s"),
                     "retransmissions": res.sender.get("retransmissions"),
                     "sender_per_plane": res.sender.get("per_plane_packets"), **load,
                     "plane_spread": C.spread(list(load["planes"].values())),
                     "spine_up_spread": C.spread(list(load["spine_up"].values())),
                     "spine_down_spread": C.spread(list(load["spine_down"].values()))}
        if name == "roce":
            out[name]["qp"] = R.brief(R.qps(res)[0])
    return out


LABELS = (("mrc", "MRC-lite (per packet over 64 EVs)"), ("per_flow", "plain UDP (NIC per flow)"),
          ("roce", "RoCEv2 RC (one QP, ECMP-hashed)"))


def figures(data: dict[str, Any]) -> list[str]:
    lines = [f"spraying: {data['bytes']} bytes {data['src']} -> {data['dst']} at {data['rate_pps']:g} packets/s"]
    for name, label in LABELS:
        r = data[name]
        lines.append(f"  {label}: verified={r['ok']}, goodput {C.mbps(r['goodput_bps'])} Mb/s"
                     + (f"; QP on EV {r['qp']['ev']}: {R.outcome(r['qp'])}" if "qp" in r else ""))
        lines.append("    per plane (NIC plane_tx): " + ", ".join(f"{p}: {n}" for p, n in r["planes"].items())
                     + f"; max distance from the mean {100 * r['plane_spread']:.1f}%")
        lines.append("    per spine link up: " + ", ".join(f"{k}: {v}" for k, v in r["spine_up"].items())
                     + f"; {100 * r['spine_up_spread']:.1f}%")
        lines.append("    per spine link down: " + ", ".join(f"{k}: {v}" for k, v in r["spine_down"].items())
                     + f"; {100 * r['spine_down_spread']:.1f}%")
    return lines


def plot(data: dict[str, Any]) -> Any:
    plt = C.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [1, 2]})
    for ax, key, title in ((axes[0], "planes", "packets per plane (source NIC)"),
                           (axes[1], "spine_up", "packets per spine link (source leaf -> spine)")):
        names = list(data["mrc"][key])
        xs = range(len(names))
        for k, (name, label) in enumerate((("mrc", "MRC-lite, per packet"), ("roce", "RoCEv2 RC QP, ECMP"),
                                           ("per_flow", "plain UDP, per flow"))):
            ax.bar([x + 0.27 * (k - 1) for x in xs], [data[name][key][n] for n in names], 0.27, label=label)
        ax.set_xticks(list(xs), [f"plane {n}" if key == "planes" else str(n).replace(":", "\n") for n in names],
                      fontsize=8)
        ax.set_title(title)
        ax.set_ylabel("packets")
    axes[0].legend()
    fig.suptitle(f"Spraying {data['bytes'] / 1e6:g} MB h1 -> h3 over 4 planes x 2 spines")
    return fig


def acceptable(d: dict[str, Any]) -> bool:
    """MRC-lite's and the plain flow's transfers verified, the baseline's QP reported
    (its figures whatever they are)."""
    return bool(d["mrc"]["ok"] and d["per_flow"]["ok"] and not R.problems(d["roce"]["qp"]))


# On BMv2: 300 packets at 400 packets/s over 2 planes x 2 spines.
DEFAULTS = C.Defaults(embedded={"nbytes": 8_000_000, "rate": 4000.0, **TIMERS},
                      bmv2={"nbytes": 300_000, "rate": 400.0, **TIMERS})
EXPERIMENT = C.Experiment("spraying", figures, plot, acceptable, DEFAULTS)
app = C.app(__doc__.split("\n\n")[0])


@app.command()
def cli(
        nbytes: Annotated[Optional[int], C.bytes_option(DEFAULTS, "bytes per transfer")] = None,
        rate: Annotated[Optional[float], C.rate_option(DEFAULTS)] = None,
        nack_delay: Annotated[Optional[float], C.nack_delay_option(DEFAULTS)] = None,
        rto_min: Annotated[Optional[float], C.rto_min_option(DEFAULTS)] = None,
        out_dir: C.OutDirOpt = C.RESULTS, prefix: C.PrefixOpt = None, target: C.TargetOpt = "embedded",
        verbose: C.VerboseOpt = False) -> int:
    return C.main(EXPERIMENT, C.Options(out_dir, prefix, target, verbose), run,
                  {"nbytes": nbytes, "rate": rate, "nack_delay": nack_delay, "rto_min": rto_min})


def main(argv: list[str] | None = None) -> int:
    return C.command(app, "experiments.spraying", argv, DEFAULTS)


if __name__ == "__main__":
    raise SystemExit(main())
