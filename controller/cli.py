"""mrcctl: compute, install, inspect and repair the multiplane fabric.

One topology source for every command (options before the command): --topology FILE,
or the shape as parameters (--planes --spines --leaves --hosts-per-leaf --evs-per-nic
--ev-mode), else the running network's state file (--state, default
$MRC_P4_RUN_DIR/network.json), else the default fabric (4 planes x 2 leaves x 2 spines,
2 hosts per leaf). Switches are reached at the addresses in the state file, or at
127.0.0.1:50001 + the switch's position (device id position + 1).

Errors are one line on stderr and exit status 1 (2 for a command-line mistake).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Annotated, Any, Optional

import typer
from rich.live import Live
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from controller import counters as C
from controller.errors import EntryError, SwitchError
from controller.reconcile import Reconciler, Report
from controller.repair import RepairReport, denied_links, set_denied
from controller.targets import SwitchTarget
from fabric import plan as P
from cli_common.options import (
    EvModeOpt,
    EvsPerNicOpt,
    HostsPerLeafOpt,
    LeavesOpt,
    PlanesOpt,
    SpinesOpt,
    TopologyOpt,
    VerboseOpt,
    seconds,
    shape,
)
from fabric.entries import Entry, GroupEntry, MemberEntry, node, nodes
from cli_common.command import new_app, run_command
from fabric.paths import links, paths
from fabric.topology import TopologyError
from fabric.wanted import wanted_entries
from controller.cable_cuts import down_links, set_link
from controller.network_state import Inventory, state_path
from controller.cli_base import Fail, Source, err, out, running_source as _running, source_of as _source
from controller.ops_cli import register as register_ops

HELP = " ".join(__doc__.split("\n\n")[1].split()) + "\n\n" + " ".join(__doc__.split("\n\n")[2].split())
app = new_app(HELP, no_args_is_help=True)
# ---- the topology and the switches ----------------------------------------------

StateOpt = Annotated[Optional[Path], typer.Option("--state", help="network state file (default: $MRC_P4_RUN_DIR/network.json)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON instead of tables")]
ElectionOpt = Annotated[int, typer.Option("--election-id", min=0, max=(1 << 128) - 1,
                                          help="P4Runtime election id (primary; 128 bits)")]
TlsDirOpt = Annotated[Optional[Path], typer.Option(
    "--tls-dir", envvar="MRCCTL_TLS_DIR", show_envvar=True,
    help="reach the switches over mutual TLS with DIR/ca.pem, DIR/client.pem and DIR/client.key "
         "(`mrcctl certs DIR` makes them; default: plaintext, or the state file's tls_dir)")]


@app.callback()
def main_options(ctx: typer.Context, topology: TopologyOpt = None, planes: PlanesOpt = None,
                 spines: SpinesOpt = None, leaves: LeavesOpt = None, hosts_per_leaf: HostsPerLeafOpt = None,
                 evs_per_nic: EvsPerNicOpt = None, ev_mode: EvModeOpt = None, state: StateOpt = None,
                 tls_dir: TlsDirOpt = None, verbose: VerboseOpt = False) -> None:
    """mrcctl: the MRC fabric's controller (topology options come before the command)."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, format="%(levelname)s %(message)s")
    chosen = shape(planes, spines, leaves, hosts_per_leaf, evs_per_nic, ev_mode)
    if ctx.invoked_subcommand in ("plan", "certs"):
        ctx.obj = None
        return
    ctx.obj = Source(topology, chosen, state)
    if tls_dir is not None:
        _use_tls(ctx.obj.inv, tls_dir)


def _use_tls(inv: Inventory, tls_dir: Path) -> None:
    """Every switch reached over mutual TLS with the credentials in ``tls_dir``,
    checked once here (a bad directory is one line, before any connection)."""
    from dataclasses import replace

    from controller.tls import load_client_tls

    load_client_tls(tls_dir)
    inv.switches = {k: replace(t, tls_dir=str(tls_dir.resolve())) for k, t in inv.switches.items()}


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=1) + "\n")


def _fmt(name: str, value: int) -> str:
    if "mac" in name:
        return P.mac_text(value)
    if name in ("carrier", "next_carrier", "nic_addr", "gw_addr") or value >= 1 << 64:
        return P.ip(value)
    return str(value)


def _match_text(m: Any) -> str:
    kind = type(m).__name__
    if kind == "Lpm":
        return f"{P.ip(m.value) if m.value >> 64 else m.value}/{m.prefix_len}"
    if kind == "Ternary":
        return f"{m.value:#x} &&& {m.mask:#x}"
    return str(m.value)


def _entry_json(e: Any) -> dict[str, Any]:
    if isinstance(e, MemberEntry):
        return {"kind": "member", "profile": e.profile, "member_id": e.member_id, "action": e.action,
                "params": {k: _fmt(k, v) for k, v in e.params}}
    if isinstance(e, GroupEntry):
        return {"kind": "group", "profile": e.profile, "group_id": e.group_id,
                "members": [{"member_id": m, "weight": w, "watch_port": p} for m, w, p in e.members]}
    d: dict[str, Any] = {"kind": "table", "table": e.table,
                         "match": {k: _match_text(v) for k, v in e.match}}
    if e.group is not None:
        d["group"] = e.group
    else:
        d["action"] = e.action
        d["params"] = {k: _fmt(k, v) for k, v in e.params}
    if e.priority:
        d["priority"] = e.priority
    return d


# ---- commands -------------------------------------------------------------------


@app.command()
def plan(gpus: Annotated[int, typer.Option(help="GPUs (one NIC each)")] = 131072,
         nic_gbps: Annotated[int, typer.Option("--nic-gbps", help="NIC bandwidth, Gb/s")] = 800,
         planes: Annotated[int, typer.Option(help="planes (NIC ports)")] = 8,
         port_gbps: Annotated[int, typer.Option("--port-gbps", help="switch port speed in the multiplane design, Gb/s")] = 100,
         radix: Annotated[int, typer.Option(help="switch ports at --port-gbps")] = 512,
         as_json: JsonOpt = False) -> None:
    """Size a fabric: the multiplane design against one plane of the same switch silicon."""
    from controller.sizing_table import table
    from fabric import sizing

    try:
        report = sizing.size(gpus=gpus, nic_gbps=nic_gbps, planes=planes, port_gbps=port_gbps, radix=radix)
    except sizing.SizingError as exc:
        raise Fail(str(exc)) from None
    if as_json:
        _print_json(report.to_json())
    else:
        out.print(table(report))


@app.command()
def certs(directory: Annotated[str, typer.Argument(metavar="DIR", help="where to write them (made if missing)")],
          server: Annotated[list[str], typer.Option(
              "--server", metavar="NAME=ADDR", help="a switch server's files are server-NAME.pem/.key, its certificate "
                               "valid for ADDR (the IP address or DNS name clients connect to); repeat per server")],
          force: Annotated[bool, typer.Option("--force", help="replace an existing CA (every certificate it "
                                                          "signed stops working)")] = False) -> None:
    """Make a CA, a certificate per P4Runtime server and the clients' one, for mutual TLS.

    Writes DIR/ca.pem, DIR/ca.key, DIR/server-NAME.pem, DIR/server-NAME.key, DIR/client.pem, DIR/client.key (keys readable by their owner only).

    A switch serves TLS with `p4target run --tls-cert DIR/server-NAME.pem --tls-key DIR/server-NAME.key --tls-ca DIR/ca.pem`; clients use `mrcctl --tls-dir DIR`.
    """
    from controller.certs import CertError, make_certs, parse_server

    if not directory:
        raise Fail("DIR is empty: give the directory to write the CA and keys into (. for this one)")
    try:
        written = make_certs(Path(directory), [parse_server(s) for s in server], force=force)
    except CertError as exc:
        raise Fail(str(exc)) from None
    for path in written:
        out.print(str(path), highlight=False)


@app.command("entries")
def entries_cmd(ctx: typer.Context, switch: Annotated[str, typer.Argument(help="switch or NIC name, e.g. p0-leaf0, nic1")],
                as_json: JsonOpt = False) -> None:
    """Every entry the controller writes into SWITCH."""
    src = _source(ctx)
    try:
        n = node(src.topo, switch)
    except KeyError:
        raise Fail(f"no switch {switch!r} in topology {src.topo.name!r}; switches are "
                   f"{', '.join(x.name for x in nodes(src.topo)[:4])}, ... (see `mrcctl links`)") from None
    es = wanted_entries(src.topo, src.inv.denied, only=[n])[n.name]
    if as_json:
        _print_json({"switch": switch, "program": n.program, "entries": [_entry_json(e) for e in es]})
        return
    table = Table(title=f"{switch} ({n.program}.p4): {len(es)} entries")
    for col in ("table / profile", "match", "action", "params"):
        table.add_column(col)
    for e in es:
        j = _entry_json(e)
        if isinstance(e, MemberEntry):
            table.add_row(e.profile, f"member {e.member_id}", e.action, _params_text(j["params"]))
        elif isinstance(e, GroupEntry):
            table.add_row(e.profile, f"group {e.group_id}", "",
                          " ".join(f"{m}(w{w},watch {p})" for m, w, p in e.members))
        else:
            match = " ".join(f"{k.split('.')[-1]}={v}" for k, v in j["match"].items())
            if "priority" in j:
                match += f" prio {j['priority']}"
            act = f"group {j['group']}" if "group" in j else j["action"].split(".")[-1]
            table.add_row(e.table, match, act, _params_text(j.get("params", {})))
    out.print(table)


def _params_text(params: dict[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in params.items())


@app.command("links")
def links_cmd(ctx: typer.Context, as_json: JsonOpt = False) -> None:
    """Every cable: its name (for fail/restore, deny/undeny), ends and ports, whether its
    cable is down and whether the NICs are told to avoid it (denied)."""
    src = _source(ctx)
    down = set(src.inv.down)
    denied = set(src.inv.denied)
    rows: list[dict[str, Any]] = [{"link": k.name, "kind": k.kind, "plane": k.plane, "a": k.a, "a_port": k.a_port, "b": k.b,
             "b_port": k.b_port, "up": k.name not in down, "denied": k.name in denied} for k in links(src.topo)]
    if as_json:
        _print_json(rows)
        return
    table = Table(title=f"{src.topo.name}: {len(rows)} links ({len(down)} down, {len(denied)} denied)")
    for col in ("link", "plane", "a port", "b port", "state"):
        table.add_column(col)
    for r in rows:
        state = ("up" if r["up"] else "[red]down[/red]") + (" [yellow]denied[/yellow]" if r["denied"] else "")
        table.add_row(r["link"], str(r["plane"]), str(r["a_port"]), str(r["b_port"]), state)
    out.print(table)


@app.command("paths")
def paths_cmd(ctx: typer.Context, src_host: Annotated[str, typer.Argument(help="source host, e.g. h1")],
              dst_host: Annotated[str, typer.Argument(help="destination host, e.g. h4")], as_json: JsonOpt = False) -> None:
    """Every EV of SRC_HOST's NIC towards DST_HOST: plane, hops, carrier, up or not."""
    s = _source(ctx)
    a, b = s.topo.host(src_host), s.topo.host(dst_host)
    if a == b:
        raise Fail(f"{src_host} and {dst_host} are the same host; give two different hosts")
    ps = paths(s.topo, a, b, down_links(s.topo, s.inv) | denied_links(s.topo, s.inv))
    if as_json:
        _print_json([{"ev": p.ev, "plane": p.plane, "spine": p.spine, "hops": list(p.hops),
                      "carrier": P.ip(p.carrier), "links": list(p.links), "up": p.up} for p in ps])
        return
    table = Table(title=f"{src_host} -> {dst_host}: {len(ps)} EVs ({s.topo.ev_mode}), "
                        f"{sum(p.up for p in ps)} up")
    for col in ("EV", "plane", "hops", "carrier", "state"):
        table.add_column(col)
    for p in ps:
        table.add_row(f"{p.ev:#06x}", str(p.plane), " > ".join(p.hops), P.ip(p.carrier),
                      "up" if p.up else "[red]down[/red]")
    out.print(table)


def _install_progress(total: int) -> tuple[Any, Any]:
    if not out.is_terminal:
        return None, None
    prog = Progress(TextColumn("install"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=out,
                    transient=True)
    task = prog.add_task("install", total=total)
    return prog, lambda _name, n: prog.advance(task, n)


def _report_failures(rep: Report) -> None:
    for r in rep.failed:
        err.print(f"mrcctl: {r.error}", markup=False, highlight=False)


@app.command()
def install(ctx: typer.Context, watch: Annotated[bool, typer.Option("--watch", help="stay connected; reconcile a switch again when it reconnects")] = False,
            keep_going: Annotated[bool, typer.Option("--keep-going", help="install what can be installed, list what failed")] = False,
            dry_run: Annotated[bool, typer.Option("--dry-run", help="read and diff, write nothing")] = False,
            parallel: Annotated[int, typer.Option(min=1, help="switches worked on at once")] = 8,
            election_id: ElectionOpt = 1, as_json: JsonOpt = False) -> None:
    """Reconcile every switch: push the pipeline if missing, write only what differs."""
    s = _source(ctx)
    problem = P.v1model_port_problem(s.topo)
    if problem:
        raise Fail(problem)
    if s.other_network is not None:
        raise Fail(f"a network of another topology is running ({s.other_network}); its switches may answer at the "
                   "default addresses: install into it with --state, or stop it first")
    wanted = wanted_entries(s.topo, s.inv.denied)
    targets = [s.inv.switches[n] for n in wanted]
    prog, cb = _install_progress(sum(len(v) for v in wanted.values()))
    rec = Reconciler(targets, election_id=election_id, parallel=parallel, keep_going=keep_going, progress=cb)
    try:
        if prog:
            with prog:
                rep = asyncio.run(rec.run(wanted, dry_run=dry_run))
        else:
            rep = asyncio.run(rec.run(wanted, dry_run=dry_run))
    except EntryError as exc:
        raise Fail(f"nothing written: {exc}") from None
    if as_json:
        _print_json({"seconds": rep.seconds, "writes": rep.writes, "rolled_back": rep.rolled_back,
                     "switches": [asdict(r) for r in rep.results]})
    else:
        out.print(("dry run: " if dry_run else "install: ") + rep.summary(), highlight=False)
    if rep.failed:
        _report_failures(rep)
        if not rep.rolled_back and not keep_going:
            err.print("mrcctl: nothing was written (every switch is checked before the first write)")
        raise typer.Exit(1)
    if watch:
        asyncio.run(_watch_reconnects(s, targets, wanted, election_id))


WATCH_RECONCILE_TIMEOUT = 120.0  # seconds one reconciliation of a switch that came back may take


async def _watch_reconnects(s: Source, targets: list[SwitchTarget], wanted: Mapping[str, list[Entry]],
                           election_id: int) -> None:
    """Keep a session per switch; when it drops (restart), reconnect and reconcile."""
    from controller.p4rt import Session

    async def keep(t: Any) -> None:
        first = True
        while True:
            try:
                async with Session(t, election_id) as sess:
                    rep = await asyncio.wait_for(
                        Reconciler([t], election_id=election_id).run({t.name: wanted[t.name]}, sessions={t.name: sess}),
                        WATCH_RECONCILE_TIMEOUT)
                    if rep.writes or not first:
                        out.print(f"watch: {t.name}: {rep.summary()}", highlight=False)
                    first = False
                    await sess.wait_closed()
                out.print(f"watch: {t.name} went away; waiting for it to come back", highlight=False)
            except SwitchError:
                pass  # not there (yet): try again
            except Exception as exc:  # a switch that hangs or breaks the session: start over
                out.print(f"watch: {t.name} reconnecting after {type(exc).__name__}: {exc}", highlight=False)
            await asyncio.sleep(1.0)

    out.print(f"watch: keeping {len(targets)} switches reconciled; Ctrl-C stops", highlight=False)
    try:
        await asyncio.gather(*(keep(t) for t in targets))
    except asyncio.CancelledError:
        pass


@app.command("counters")
def counters_cmd(ctx: typer.Context, switch: Annotated[Optional[str], typer.Argument(help="one switch (default: all)")] = None,
                 election_id: ElectionOpt = 1, as_json: JsonOpt = False) -> None:
    """Per port rx/tx/trimmed packets and drops by reason, read over P4Runtime."""
    s = _source(ctx)
    names = [switch] if switch else [n.name for n in nodes(s.topo)]
    for name in names:
        if name not in s.inv.switches:
            raise Fail(f"no switch {name!r} in the network; see `mrcctl links` for names")
    targets = [s.inv.switches[n] for n in names]
    counts = asyncio.run(C.read_all(targets, election_id))
    data = {t.name: {"ports": C.port_rows(s.topo, t.name, t.program, counts[t.name]),
                     "drops": C.drop_rows(t.program, counts[t.name])} for t in targets}
    if as_json:
        _print_json(data)
        return
    for t in targets:
        table = Table(title=f"{t.name} ({t.address})")
        for col in ("port", "rx pkts", "rx bytes", "tx pkts", "tx bytes", "trimmed"):
            table.add_column(col, justify="right")
        for r in data[t.name]["ports"]:
            table.add_row(str(r["port"]), str(r["rx_packets"]), str(r["rx_bytes"]), str(r["tx_packets"]),
                          str(r["tx_bytes"]), str(r.get("trimmed", "")))
        out.print(table)
        for d in data[t.name]["drops"]:
            out.print(f"  drop {d['name']} ({d['counter']}): {d['packets']}", highlight=False)


@app.command()
def fail(ctx: typer.Context, link: Annotated[str, typer.Argument(help="a link as `mrcctl links` names it, e.g. p0-leaf0:p0-spine0")],
         as_json: JsonOpt = False) -> None:
    """Take LINK's cable down; no table is written (the endpoints find the dead paths)."""
    _cable(ctx, link, True, as_json)


@app.command()
def restore(ctx: typer.Context, link: Annotated[str, typer.Argument(help="a link as `mrcctl links` names it")],
            as_json: JsonOpt = False) -> None:
    """Bring LINK's cable back up; no table is written (the endpoints' probes find it)."""
    _cable(ctx, link, False, as_json)


@app.command()
def deny(ctx: typer.Context, link: Annotated[str, typer.Argument(help="a link as `mrcctl links` names it")],
         election_id: ElectionOpt = 1, as_json: JsonOpt = False) -> None:
    """DENY LINK: rewrite the NICs so no EV or spray member uses it (no fabric table, no cable)."""
    _deny(ctx, link, True, election_id, as_json)


@app.command()
def undeny(ctx: typer.Context, link: Annotated[str, typer.Argument(help="a link as `mrcctl links` names it")],
           election_id: ElectionOpt = 1, as_json: JsonOpt = False) -> None:
    """Lift the denial of LINK: the NICs get their paths over it back."""
    _deny(ctx, link, False, election_id, as_json)


def _repair_json(r: RepairReport) -> dict[str, Any]:
    return {"link": r.link, "down": r.down, "changed": r.changed, "seconds": r.seconds, "cable": r.cable,
            "writes": r.writes}


def _cable(ctx: typer.Context, link: str, down: bool, as_json: bool) -> None:
    s = _running(ctx, "fail or restore a link of")
    if not s.running:  # recording it would make a state file, as if a network of this topology ran
        raise Fail(f"no running network ({s.inv.path}): there is no cable to take {'down' if down else 'up'}; "
                   "start one (make run) or give its state file with --state; nothing written")
    r = asyncio.run(set_link(s.topo, s.inv, link, down=down))
    if as_json:
        _print_json(_repair_json(r))
    else:
        out.print(f"{r.link} {'down' if down else 'up'}: cable: {r.cable}; no table written "
                  f"(recorded in {s.inv.path})", highlight=False)


def _deny(ctx: typer.Context, link: str, denied: bool, election_id: int, as_json: bool) -> None:
    s = _running(ctx, "deny a link of")
    r = asyncio.run(set_denied(s.topo, s.inv, link, denied=denied, election_id=election_id))
    if as_json:
        _print_json({**_repair_json(r), "denied": r.down})
    else:
        out.print(f"{r.link} {'denied' if denied else 'no longer denied'}: {len(r.changed)} NICs changed "
                  f"({', '.join(r.changed) or 'none'}), {r.writes} NIC entries written, no fabric table touched, "
                  f"cable not touched, {r.seconds * 1000:.0f} ms from the command to the last write", highlight=False)
    if r.report is not None and r.report.failed:
        _report_failures(r.report)
        raise typer.Exit(1)


@app.command()
def watch(ctx: typer.Context, once: Annotated[bool, typer.Option("--once", help="one sample, then exit")] = False,
          interval: Annotated[float, typer.Option(callback=seconds, help="seconds between samples")] = 1.0,
          election_id: ElectionOpt = 1, as_json: JsonOpt = False) -> None:
    """Live per-plane and per-link load (packets/s from counter deltas) until Ctrl-C."""
    s = _source(ctx)
    targets = [s.inv.switches[n.name] for n in nodes(s.topo)]
    all_links = links(s.topo)

    def sample(before: dict[str, C.Counts], now: dict[str, C.Counts], dt: float) -> dict[str, Any]:
        d = C.delta(now, before)
        loads = C.link_loads(s.topo, all_links, d)
        return {"interval": dt,
                "planes": {str(p): round(v / dt, 1) for p, v in C.plane_loads(s.topo, d).items()},
                "links": [{"link": k.link, "plane": k.plane, "up_pps": round(k.up_packets / dt, 1),
                           "down_pps": round(k.down_packets / dt, 1)} for k in loads]}

    def render(data: dict[str, Any]) -> Table:
        table = Table(title=f"{s.topo.name}: load over {data['interval']:.1f} s (packets/s)")
        table.add_column("plane / link")
        table.add_column("up", justify="right")
        table.add_column("down", justify="right")
        for p, v in data["planes"].items():
            table.add_row(f"[bold]plane {p}[/bold] (NICs -> fabric)", f"{v:,.0f}", "")
        for row in data["links"]:
            if row["up_pps"] or row["down_pps"]:
                table.add_row(row["link"], f"{row['up_pps']:,.0f}", f"{row['down_pps']:,.0f}")
        return table

    before = asyncio.run(C.read_all(targets, election_id))
    t0 = time.monotonic()
    if once:
        err.print(f"mrcctl watch: first counters read from {len(targets)} switches; sampling for {interval:g} s",
                  markup=False, highlight=False)
        time.sleep(interval)
        now = asyncio.run(C.read_all(targets, election_id))
        data = sample(before, now, time.monotonic() - t0)
        _print_json(data) if as_json else out.print(render(data))
        return
    try:
        with Live(render(sample(before, before, interval)), console=out, refresh_per_second=4) as live:
            while True:
                time.sleep(interval)
                now = asyncio.run(C.read_all(targets, election_id))
                t1 = time.monotonic()
                data = sample(before, now, t1 - t0)
                if as_json:
                    _print_json(data)
                else:
                    live.update(render(data))
                before, t0 = now, t1
    except KeyboardInterrupt:
        pass


@app.command()
def web(ctx: typer.Context,
        bind: Annotated[str, typer.Option("--bind", help="address to listen on; the page has no login, so anything "
                                                       "but the loopback is taken with a warning")] = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", min=0, max=65535, help="TCP port (0: any free one)")] = 8790,
        interval: Annotated[float, typer.Option(callback=seconds, help="seconds between counter readings")] = 1.0,
        events: Annotated[Optional[Path], typer.Option(
            "--events", help="EV events file to follow (default: events.jsonl beside the state file)")] = None,
        election_id: ElectionOpt = 1) -> None:
    """Serve the live view of the fabric (planes, links, loads, EVs) and /metrics for Prometheus (docs/web.md)."""
    from webview.server import EVENTS_NAME, BindError, serve

    s = _source(ctx)
    state = s.inv.path if s.running else None  # no network of this topology running: the drawing only
    folder = state.parent if state is not None else state_path().parent
    tls_dir = ctx.parent.params.get("tls_dir") if ctx.parent else None  # the state file is read anew each second
    try:
        serve(s.topo, state, events or folder / EVENTS_NAME, bind=bind, port=port, interval=interval,
              election_id=election_id, tls_dir=tls_dir)
    except BindError as exc:
        raise Fail(str(exc)) from None
    except KeyboardInterrupt:
        pass


# events, probe, locate, guard: their bodies in controller/ops_cli.py
register_ops(app)


def main() -> None:
    """Console script entry: a mistake of the user's is one line on stderr, exit status 1
    (a usage mistake: exit status 2, cli_common/command.py)."""
    try:
        code = run_command(app, prog="mrcctl")
    except (Fail, TopologyError, SwitchError, EntryError, P.PlanError) as exc:
        err.print(f"mrcctl: error: {exc}", markup=False, highlight=False)
        sys.exit(1)
    sys.exit(code)


if __name__ == "__main__":
    main()
