"""Experiment 4, loss and reordering on fabric links during a transfer.

Why on the cables: the switches' own drops are rare and bursty; here a steady random
loss (``--loss`` percent) is put on every uplink of the source leaf in plane 0, and a
variable delay on every uplink of the source leaf in plane 1, so that packets of that
plane arrive late against the other planes' (reordering). The transfer must complete
with every byte verified; the receiver counts the packets that arrived below the
highest PSN it had seen (``out_of_order``).

With ``tc netem`` in the kernel: ``netem loss L%`` and ``netem delay D jitter J``. This
machine's kernel has no netem (CONFIG_NET_SCH_NETEM unset), so the experiment falls
back to what it has: an nftables ``netdev`` egress chain on the interface dropping
``numgen random mod 10000 < L*100`` (random loss, counted by nft), and a ``tbf``
token bucket at the plane's share of the rate, whose queue delays that plane's
bursts (reordering against the unshaped planes; tbf counts the packets it held back
as ``overlimits``). Every impairment is on the
root namespace's end of a veth, removed afterwards (and gone with the veth when the
network stops).

The RoCEv2 baseline (``mrc-send --transport roce``, docs/transport.md) sends the same
bytes at the same packet rate through the same impairments, right after: its QP is
one flow, so its source port is chosen (``--path-ev``) to put its one path through
plane 0's lossy uplinks. One path delivers in order, so the QP sees no reordering
from the planes' different delays; what it sees is the loss, and each lost packet
makes a gap, the gap a NAK, and the NAK a go-back-N that resends the lost packet and
everything sent after it (a lost resend waits for the local ACK timeout). Reported
as it is: its state, completion, go-back-N figures, the receiver's out-of-sequence
drops.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

import typer

from experiments import common as C
from experiments import roce as R
from fabric.paths import links, paths
from cli_common.options import finite

Method = Literal["netem", "nftables+tbf"]
NFT_TABLE = "mrc_exp_loss"  # + the network's node prefix: one table per network
TBF_FACTOR = 1.0  # the bucket's rate against the plane's share of the transfer
# The timers: the transport's own on both targets (docs/experiments.md, "The
# transport's timers").
TIMERS: dict[str, float | None] = {"nack_delay": None, "rto_min": None}


def _run(cmd: list[str], input: str | None = None) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=20, input=input)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r.stdout


def netem_available(intf: str) -> bool:
    """Can a netem qdisc be added here? (Tried on ``intf`` and removed at once.)"""
    r = subprocess.run(["tc", "qdisc", "add", "dev", intf, "root", "netem", "delay", "1ms"], capture_output=True,
                       text=True, timeout=20)
    if r.returncode == 0:
        subprocess.run(["tc", "qdisc", "del", "dev", intf, "root"], capture_output=True, timeout=20)
    return r.returncode == 0


@dataclass
class Impairments:
    """Loss and delay put on interfaces, and how to take them off and count them."""

    method: str  # "netem" or "nftables+tbf"
    table: str = NFT_TABLE
    undo: list[Callable[[], None]] = field(default_factory=list)

    def loss(self, intfs: list[str], pct: float) -> None:
        if self.method == "netem":
            for i in intfs:
                _run(["tc", "qdisc", "add", "dev", i, "root", "netem", "loss", f"{pct}%"])
                self.undo.append(lambda i=i: _del_qdisc(i))
            return
        rules = [f"table netdev {self.table} {{"]
        for n, i in enumerate(intfs):
            rules += [f"  chain loss{n} {{ type filter hook egress device {i} priority 0;",
                      f"    numgen random mod 10000 < {int(round(pct * 100))} counter drop", "  }"]
        rules.append("}")
        _run(["nft", "-f", "-"], "\n".join(rules) + "\n")
        self.undo.append(lambda: subprocess.run(["nft", "delete", "table", "netdev", self.table],
                                                capture_output=True, timeout=20))

    def delay(self, intfs: list[str], delay_ms: float, jitter_ms: float, share_bps: float) -> None:
        for i in intfs:
            if self.method == "netem":
                _run(["tc", "qdisc", "add", "dev", i, "root", "netem", "delay", f"{delay_ms}ms", f"{jitter_ms}ms"])
            else:  # a bucket of one packet just above the plane's share: its bursts queue
                _run(["tc", "qdisc", "add", "dev", i, "root", "tbf", "rate", f"{int(share_bps * TBF_FACTOR)}bit",
                      "burst", "1600", "latency", f"{int(delay_ms * 10)}ms"])
            self.undo.append(lambda i=i: _del_qdisc(i))

    def lost(self, intfs: list[str]) -> int:
        """Packets the loss impairment dropped (netem's qdisc stats, or nft's counters)."""
        if self.method == "netem":
            total = 0
            for i in intfs:
                for q in json.loads(_run(["tc", "-s", "-j", "qdisc", "show", "dev", i]) or "[]"):
                    if q.get("kind") == "netem":
                        total += int(q.get("drops", 0))
            return total
        data = json.loads(_run(["nft", "-j", "list", "table", "netdev", self.table]))
        return sum(x["counter"]["packets"] for item in data.get("nftables", []) for x in
                   item.get("rule", {}).get("expr", []) if "counter" in x)

    def held_back(self, intfs: list[str]) -> int:
        """Packets the delay impairment made wait (tbf's ``overlimits``; netem delays all)."""
        total = 0
        for i in intfs:
            for q in json.loads(_run(["tc", "-s", "-j", "qdisc", "show", "dev", i]) or "[]"):
                if q.get("kind") == "tbf":
                    total += int(q.get("overlimits", 0))
                elif q.get("kind") == "netem":
                    total += int(q.get("packets", 0))
        return total

    def remove(self) -> None:
        while self.undo:
            self.undo.pop()()


def _del_qdisc(intf: str) -> None:
    subprocess.run(["tc", "qdisc", "del", "dev", intf, "root"], capture_output=True, timeout=20)


def uplinks(fn: Any, plane: int, leaf: int) -> list[str]:
    """The leaf's ends (root namespace interfaces) of its cables to the spines in ``plane``."""
    return [fn.inventory.links[link.name].a_intf for link in links(fn.topo)
            if link.kind == "fabric" and link.plane == plane and link.leaf == leaf]


def qdisc_kinds(intf: str) -> list[str]:
    return [q.get("kind", "") for q in json.loads(_run(["tc", "-j", "qdisc", "show", "dev", intf]) or "[]")]


def run(fn: Any, workdir: Path, *, nbytes: int, rate: float, loss: float, delay_ms: float, jitter_ms: float,
        src: str = "h1", dst: str = "h3", method: str | None = None, nack_delay: float | None = None,
        rto_min: float | None = None) -> dict[str, Any]:
    send, recv = C.timer_args(nack_delay, rto_min)
    # the same transfer without impairments first: how much the paths reorder by themselves
    base = C.run_transfer(fn, src, dst, nbytes, workdir / "baseline", send_args=["--rate", str(rate), *send],
                          recv_args=recv)
    base_counts = (base.recv_report.get("connections") or [{}])[0].get("counts", {})
    leaf = fn.topo.host(src).leaf
    lossy, delayed = uplinks(fn, 0, leaf), uplinks(fn, 1, leaf)
    method = method or ("netem" if netem_available(lossy[0]) else "nftables+tbf")
    imp = Impairments(method, f"{NFT_TABLE}_{fn.names.prefix}")
    # each plane carries a quarter of the packets, each of its spines half of that
    share = rate / fn.topo.planes / len(delayed) * (1000 + 120) * 8
    try:
        imp.loss(lossy, loss)
        imp.delay(delayed, delay_ms, jitter_ms, share)
        res = C.run_transfer(fn, src, dst, nbytes, workdir / "impaired", send_args=["--rate", str(rate), *send],
                             recv_args=recv)
        dropped = imp.lost(lossy)
        held = imp.held_back(delayed)
        ev = min(p.ev for p in paths(fn.topo, fn.topo.host(src), fn.topo.host(dst)) if p.plane == 0)
        roce = R.run_transfer(fn, src, dst, nbytes, workdir / "roce", R.send_args(rate, path_ev=ev))
        roce_dropped = imp.lost(lossy) - dropped
    finally:
        imp.remove()
    s = res.sender
    per_plane: dict[str, dict[str, int]] = {}
    for e in s.get("per_ev", []):
        p = per_plane.setdefault(str(e["plane"]), {"sent": 0, "retransmits": 0, "losses": 0})
        for k in p:
            p[k] += e[k]
    conn = (res.recv_report.get("connections") or [{}])[0]
    return {"bytes": nbytes, "rate_pps": rate, "loss_pct": loss, "delay_ms": delay_ms, "jitter_ms": jitter_ms,
            "method": method, "nft_table": imp.table, "lossy_links": lossy, "reordering_links": delayed, "ok": res.ok,
            "summary": res.summary(), "impairment_dropped": dropped, "impairment_delayed": held, "retransmissions": s.get("retransmissions"),
            "completion_time_s": s.get("completion_time_s"), "goodput_bps": s.get("goodput_bps"),
            "per_plane": per_plane, "receiver_counts": conn.get("counts", {}),
            "delivered_series": s.get("delivered_series", []),
            "baseline": {"ok": base.ok, "out_of_order": base_counts.get("out_of_order", 0),
                         "retransmissions": base.sender.get("retransmissions"),
                         "goodput_bps": base.sender.get("goodput_bps")},
            "roce": {"impairment_dropped": roce_dropped, "qp": R.qps(roce)[0], "summary": roce.summary()}}


def figures(d: dict[str, Any]) -> list[str]:
    r = d["retransmissions"] or {}
    c = d["receiver_counts"]
    q = d["roce"]["qp"]
    how = (f"delay {d['delay_ms']} +- {d['jitter_ms']} ms" if d["method"] == "netem"
           else "a tbf bucket at the plane's share")
    return [f"loss and reordering ({d['method']}): {d['bytes']} bytes at {d['rate_pps']:g} packets/s; "
            f"{d['loss_pct']}% loss on {', '.join(d['lossy_links'])}; {how} on {', '.join(d['reordering_links'])}",
            f"  every byte verified: {d['ok']}; completion {d['completion_time_s'] or 0:.2f} s, goodput "
            f"{C.mbps(d['goodput_bps'])} Mb/s",
            f"  dropped by the impairment {d['impairment_dropped']}, held back {d['impairment_delayed']}; retransmissions {r.get('total')} (NACK "
            f"{r.get('nack')}, timeout {r.get('timeout')}); receiver: {c.get('out_of_order', 0)} arrivals out of "
            f"order ({d['baseline']['out_of_order']} in the same transfer without impairments), "
            f"{c.get('duplicates', 0)} duplicates",
            "  per plane (sent/retransmits/losses): " + ", ".join(
                f"{p}: {v['sent']}/{v['retransmits']}/{v['losses']}" for p, v in sorted(d["per_plane"].items())),
            f"  RoCEv2 QP on EV {q['ev']} (plane 0, the lossy uplinks): {R.outcome(q)}; the impairment dropped "
            f"{d['roce']['impairment_dropped']} of its packets; the receiver dropped "
            f"{q['receiver']['out_of_sequence']} out of sequence (behind a gap), {q['receiver']['duplicates']} "
            f"duplicates, and sent {q['receiver']['naks']} NAKs"]


def plot(d: dict[str, Any]) -> Any:
    plt = C.pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    series, q = d["delivered_series"], d["roce"]["qp"]
    axes[0].plot([t for t, _ in series], [b / 1e6 for _, b in series], color="tab:blue",
                 label=f"MRC-lite (verified: {d['ok']})")
    axes[0].plot([t for t, _ in q["delivered_series"]], [b / 1e6 for _, b in q["delivered_series"]], color="tab:red",
                 label=f"RoCEv2 QP on plane 0: {q['state']}, {q['go_back_n']['rewinds']} go-back-N, "
                       f"{q['go_back_n']['resent']} resent")
    axes[0].set_xlabel("seconds after the sender started")
    axes[0].set_ylabel("MB acknowledged")
    axes[0].set_title("progress, the same bytes and rate")
    axes[0].legend(fontsize=8)
    planes = sorted(d["per_plane"])
    xs = range(len(planes))
    axes[1].bar([x - 0.2 for x in xs], [d["per_plane"][p]["losses"] for p in planes], 0.4, label="losses seen")
    axes[1].bar([x + 0.2 for x in xs], [d["per_plane"][p]["retransmits"] for p in planes], 0.4,
                label="retransmitted packets sent on it")
    axes[1].set_xticks(list(xs), [f"plane {p}" + (" (loss)" if p == "0" else " (delay)" if p == "1" else "")
                                  for p in planes])
    axes[1].set_title(f"per plane; {d['receiver_counts'].get('out_of_order', 0)} arrivals out of order")
    axes[1].legend(fontsize=8)
    fig.suptitle(f"{d['loss_pct']}% loss on plane 0, delay on plane 1 ({d['method']})")
    return fig


def acceptable(d: dict[str, Any]) -> bool:
    """The impaired MRC-lite transfer verified; the baseline's QP reported (whatever
    its figures)."""
    return bool(d["ok"]) and not R.problems(d["roce"]["qp"])


# On BMv2: 800 packets at 400 packets/s, the same impairments. Half of them cross the
# lossy uplinks: a 2% random loss drops none of 200 once in 57 runs (0.98 ** 200), so
# the test saw no loss now and then; none of 400 once in 3,300.
_IMPAIRMENTS = {"loss": 2.0, "delay_ms": 5.0, "jitter_ms": 4.0}
DEFAULTS = C.Defaults(embedded={"nbytes": 8_000_000, "rate": 3000.0, **_IMPAIRMENTS, **TIMERS},
                      bmv2={"nbytes": 800_000, "rate": 400.0, **_IMPAIRMENTS, **TIMERS})
EXPERIMENT = C.Experiment("loss_reordering", figures, plot, acceptable, DEFAULTS)
app = C.app(__doc__.split("\n\n")[0])


@app.command()
def cli(
        nbytes: Annotated[Optional[int], C.bytes_option(DEFAULTS, "bytes")] = None,
        rate: Annotated[Optional[float], C.rate_option(DEFAULTS)] = None,
        loss: Annotated[Optional[float], typer.Option(
            "--loss", min=0, max=100, help=DEFAULTS.help("loss", "percent lost on plane 0's uplinks"))] = None,
        delay: Annotated[Optional[float], typer.Option(
            "--delay", min=0, callback=finite, help=DEFAULTS.help(
                "delay_ms", "ms of delay on plane 1's uplinks (netem; tbf: its queue holds 10x this)"))] = None,
        jitter: Annotated[Optional[float], typer.Option(
            "--jitter", min=0, callback=finite, help=DEFAULTS.help("jitter_ms", "ms of jitter on plane 1's uplinks (netem)"))] = None,
        method: Annotated[Optional[Method], typer.Option(
            "--method", help="default: netem when the kernel has it")] = None,
        nack_delay: Annotated[Optional[float], C.nack_delay_option(DEFAULTS)] = None,
        rto_min: Annotated[Optional[float], C.rto_min_option(DEFAULTS)] = None,
        out_dir: C.OutDirOpt = C.RESULTS, prefix: C.PrefixOpt = None, target: C.TargetOpt = "embedded",
        verbose: C.VerboseOpt = False) -> int:
    return C.main(EXPERIMENT, C.Options(out_dir, prefix, target, verbose), run,
                  {"nbytes": nbytes, "rate": rate, "loss": loss, "delay_ms": delay, "jitter_ms": jitter,
                   "method": method, "nack_delay": nack_delay, "rto_min": rto_min})


def main(argv: list[str] | None = None) -> int:
    return C.command(app, "experiments.loss_reordering", argv, DEFAULTS)


if __name__ == "__main__":
    raise SystemExit(main())
