"""The group file of ``p4target group GROUP.yaml`` (p4target/group/process.py): read,
checked as a whole, each mistake one message naming the file, the switch and the field.

The group file (YAML or JSON) lists the switches::

    grpc_addr: 127.0.0.1:9559        # optional: every switch without its own address here
    switches:
      - name: p0-leaf0
        program: p4src/fabric.p4
        device_id: 1
        ports: {1: mrc-p0-leaf0-eth1, 3: mrc-p0-leaf0-eth3}
        grpc_addr: 127.0.0.1:50001   # optional when the group has one
        rx_ring_frames: 256          # optional: every port's receive ring (default 4096)
        port_rx_ring_frames: {0: 16384}
        tx_ring_frames: 64           # optional (default 256)
        cpu_port: 255                # optional
        pcap: /tmp/pcaps             # optional: <iface>_in.pcap / _out.pcap there
        pid_file: /tmp/mrc-p4/run/mrc-p0-leaf0.pid   # optional: the group's pid, per switch
        netns: p4t-lab                # optional: the interfaces' network namespace

A mistake in the file is one message naming the file, the switch and the field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from p4target.errors import P4Error


class SwitchSpec(BaseModel):
    """One switch of a group file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=64)
    program: Path
    device_id: int = Field(ge=0, lt=1 << 64)
    ports: dict[int, str] = Field(min_length=1)
    grpc_addr: str | None = None
    cpu_port: int | None = Field(default=None, ge=0, lt=511)
    rx_ring_frames: int | None = Field(default=None, ge=64, le=65536)
    port_rx_ring_frames: dict[int, int] = Field(default_factory=dict)
    tx_ring_frames: int = Field(default=256, ge=16, le=65536)
    pcap: Path | None = None
    pid_file: Path | None = None
    netns: str | None = None  # open the interfaces in this network namespace
    seed: int = 0

    @field_validator("ports")
    @classmethod
    def _ports(cls, v: dict[int, str]) -> dict[int, str]:
        for port, iface in v.items():
            if not 0 <= port < 511:
                raise ValueError(f"port {port} must be 0..510 (511 is drop)")
            if not iface or len(iface) > 15 or "/" in iface or " " in iface:
                raise ValueError(f"port {port}: {iface!r} is not a valid interface name")
        return v

    @field_validator("port_rx_ring_frames")
    @classmethod
    def _rings(cls, v: dict[int, int]) -> dict[int, int]:
        for port, n in v.items():
            if not 64 <= n <= 65536:
                raise ValueError(f"port {port}: {n} receive ring slots; give 64 to 65536")
        return v


class GroupSpec(BaseModel):
    """A group file: the switches of one process."""

    model_config = ConfigDict(extra="forbid")

    grpc_addr: str | None = None
    # how Python's garbage collector runs once the process is up (p4target/ports/loop_stats.py)
    gc: Literal["freeze", "default", "off"] = "freeze"
    # every thread of the process SCHED_RR at this priority (p4target/ports/scheduling.py); None: SCHED_OTHER
    realtime: int | None = Field(default=None, ge=1, le=99)
    switches: list[SwitchSpec] = Field(min_length=1)


def _check_addr(addr: str, where: str) -> None:
    host, sep, port = addr.rpartition(":")
    if not sep or not host or not port.isdigit():
        raise P4Error(f"grpc_addr {addr!r} is not HOST:PORT (for example 127.0.0.1:9559)", where)


def load_group(path: Path, grpc_addr: str | None = None) -> GroupSpec:
    """Read and check a group file (``grpc_addr`` overrides the file's shared address).
    Raises ``P4Error`` naming the file and the place of the first mistake."""
    spec = _parse_group(path)
    if grpc_addr is not None:
        spec.grpc_addr = grpc_addr
    _GroupChecks(path, spec.grpc_addr).check(spec.switches)
    if spec.grpc_addr is not None:
        _check_addr(spec.grpc_addr, f"{path}: grpc_addr")
    return spec


def _parse_group(path: Path) -> GroupSpec:
    """The group file as a ``GroupSpec``: each switch checked on its own."""
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as e:
        raise P4Error(f"cannot read the group file: {e.strerror}; check the path", str(path)) from None
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        raise P4Error(f"not YAML or JSON: {getattr(e, 'problem', e)}; fix the syntax", where) from None
    try:
        return GroupSpec.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        raise P4Error(f"{_place(list(err['loc']), data)}: {err['msg']}; see the group file format in docs/target.md",
                      str(path)) from None


def _place(loc: list[Any], data: Any) -> str:
    """Where a validation error is: ``switch NAME: field`` for a switch's field."""
    place = ".".join(str(x) for x in loc)
    if len(loc) >= 2 and loc[0] == "switches" and isinstance(loc[1], int) and isinstance(data, dict):
        try:
            return f"switch {data['switches'][loc[1]].get('name', loc[1])}: " + ".".join(str(x) for x in loc[2:])
        except (AttributeError, IndexError, KeyError, TypeError):
            pass
    return place


class _GroupChecks:
    """What no switch can check on its own: names, interfaces and addresses given
    twice, device ids shared on the shared address, the program files."""

    def __init__(self, path: Path, shared_addr: str | None) -> None:
        self.path = path
        self.shared_addr = shared_addr
        self.names: set[str] = set()
        self.ifaces: dict[str, str] = {}
        self.own: dict[str, str] = {}
        self.shared_ids: dict[int, str] = {}

    def check(self, switches: list[SwitchSpec]) -> None:
        for sw in switches:
            where = f"{self.path}: switch {sw.name}"
            self._names_and_ports(sw, where)
            self._address(sw, where)
            if not sw.program.is_file():
                raise P4Error(f"no such program file {sw.program}; check the path", where)

    def _names_and_ports(self, sw: SwitchSpec, where: str) -> None:
        if sw.name in self.names:
            raise P4Error("the name is given to two switches; give every switch its own name", where)
        self.names.add(sw.name)
        for iface in sw.ports.values():
            if iface in self.ifaces:
                raise P4Error(f"interface {iface} is also a port of {self.ifaces[iface]}; give each interface once",
                              where)
            self.ifaces[iface] = sw.name
        if sw.cpu_port is not None and sw.cpu_port in sw.ports:
            raise P4Error(f"cpu_port {sw.cpu_port} is also an interface port", where)
        bad = set(sw.port_rx_ring_frames) - set(sw.ports)
        if bad:
            raise P4Error(f"port_rx_ring_frames: port {min(bad)} is not one of its ports", where)

    def _address(self, sw: SwitchSpec, where: str) -> None:
        if sw.grpc_addr is None:
            if self.shared_addr is None:
                raise P4Error("no grpc_addr: give the switch one, or the group a shared grpc_addr", where)
            if sw.device_id in self.shared_ids:
                raise P4Error(f"device id {sw.device_id} is also {self.shared_ids[sw.device_id]}'s on the shared "
                              f"address {self.shared_addr}; give each switch there its own device id", where)
            self.shared_ids[sw.device_id] = sw.name
            return
        _check_addr(sw.grpc_addr, where)
        if sw.grpc_addr in self.own and not sw.grpc_addr.endswith(":0"):
            raise P4Error(f"grpc_addr {sw.grpc_addr} is also {self.own[sw.grpc_addr]}'s; give each its own, "
                          "or leave it out to share the group's address", where)
        self.own[sw.grpc_addr] = sw.name


def refuse_plaintext_off_loopback(spec: GroupSpec, path: Path) -> None:
    """P4Error naming the first address of ``spec`` that is not loopback (served
    without TLS, it must be asked for with ``--insecure``)."""
    from p4target.p4runtime.tls import plaintext_refusal

    shared = any(sw.grpc_addr is None for sw in spec.switches)
    addrs = [(sw.grpc_addr, f"{path}: switch {sw.name}") for sw in spec.switches if sw.grpc_addr is not None]
    if shared and spec.grpc_addr is not None:
        addrs.append((spec.grpc_addr, f"{path}: grpc_addr"))
    for addr, where in addrs:
        why = plaintext_refusal(addr)
        if why is not None:
            raise P4Error(why, where)
