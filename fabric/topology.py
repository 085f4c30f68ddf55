"""The topology model, and loading it from a YAML file or from parameters.

Why a schema: a topology is what a person writes by hand; every mistake in it must
come back as one line naming the file, the field and the fix, and a topology the
address plan cannot hold (docs/addressing.md) must be refused before anything is
computed or installed. pydantic checks the input; the model the rest of the
controller uses is a small frozen value (``Topology``) that knows nothing of YAML.

Two forms (topologies/README.md):

- Clos: ``planes``, ``spines``, ``leaves``, ``hosts_per_leaf``: every leaf of every
  plane is cabled to every spine of its plane.
- Explicit graph: ``graph: {spines: [names], leaves: [{name, hosts, uplinks}]}`` for
  odd shapes: leaves with different host counts, leaves cabled to some spines only,
  and cables present in some planes only.

Every plane has the same leaves and spines (a host's NIC has one port per plane, to
leaf ``i`` of every plane); only the cables may differ between planes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

MAX_PLANES = 8
MAX_LEAVES = 512
MAX_SPINES = 256
MAX_HOSTS_PER_LEAF = 4095
MAX_HOSTS = 1 << 20
MAX_EVS = 256
DEFAULT_EVS = 64
DEFAULT_TRIM_DSCP = 62
DEFAULT_TRIM_THRESHOLD = 32  # packets in the egress queue (v1model depths are packets)
# The traffic classes (DSCPs) the fabric trims: MRC-lite's data leaves the host with
# DSCP 0; any other class (RoCEv2 data at DSCP 26, its CNPs at 48) is never trimmed.
DEFAULT_TRIM_CLASSES = (0,)
EvMode = Literal["explicit", "generated"]

DEFAULTS: dict[str, Any] = {
    "name": "default",
    "planes": 4,
    "spines": 2,
    "leaves": 2,
    "hosts_per_leaf": 2,
}


class TopologyError(ValueError):
    """A topology that cannot be used; ``str()`` is the one line to show a person."""


# ---- the model the controller uses -------------------------------------------


@dataclass(frozen=True)
class Leaf:
    index: int
    name: str
    hosts: int


@dataclass(frozen=True)
class Host:
    """Host ``name`` (h1, h2, ...) behind leaf port ``port`` (1-based) of leaf ``leaf``."""

    index: int
    leaf: int
    port: int

    @property
    def name(self) -> str:
        return f"h{self.index + 1}"

    @property
    def nic(self) -> str:
        return f"nic{self.index + 1}"


@dataclass(frozen=True)
class LinuxHost:
    """A Linux SRv6 node (the kernel's seg6 encapsulation and End.DT6, no NIC) cabled to
    leaf ``leaf`` of plane ``plane`` only, on leaf port ``port`` (after the uplinks).
    Its address is in the host plan, ``fd00:0:<leaf>:<port>::1``, so the NICs reach
    it like any host; the leaf forwards its local uSID ``0xE000 + port`` to it."""

    index: int
    name: str
    plane: int
    leaf: int
    port: int


@dataclass(frozen=True)
class Topology:
    """A multiplane 2-tier fabric: the same leaves and spines in every plane.

    ``missing`` holds the (plane, leaf, spine) cables that the explicit graph leaves
    out; a Clos has none, so the full 131,072-host fabric stays a few integers.
    """

    name: str
    planes: int
    spine_names: tuple[str, ...]
    leaves: tuple[Leaf, ...]
    missing: frozenset[tuple[int, int, int]] = frozenset()
    evs_per_nic: int = DEFAULT_EVS
    ev_mode: EvMode = "explicit"
    trim_threshold: int | None = DEFAULT_TRIM_THRESHOLD
    trim_dscp: int = DEFAULT_TRIM_DSCP
    trim_classes: tuple[int, ...] = DEFAULT_TRIM_CLASSES  # the DSCPs whose data is trimmed
    source: str = field(default="parameters", compare=False)  # where it was read from, for messages
    linux_specs: tuple[tuple[str, int, int], ...] = ()  # (name, plane, leaf) of each Linux SRv6 node
    # where the network runner places the switches (topologies/placement.py); not part of the fabric
    servers: tuple[str, ...] = field(default=(), compare=False)
    placement: str | None = field(default=None, compare=False)
    _hosts: tuple[Host, ...] = field(default=(), init=False, repr=False, compare=False)
    _first: tuple[int, ...] = field(default=(), init=False, repr=False, compare=False)
    _max_hosts: int = field(default=0, init=False, repr=False, compare=False)
    _linux: tuple[LinuxHost, ...] = field(default=(), init=False, repr=False, compare=False)
    cache: dict[Any, Any] = field(init=False, repr=False, compare=False)  # plan.py's and entries.py's memos

    def __post_init__(self) -> None:
        object.__setattr__(self, "cache", {})
        hosts: list[Host] = []
        first: list[int] = []
        for leaf in self.leaves:
            base = len(hosts)
            first.append(base)
            hosts += [Host(base + n - 1, leaf.index, n) for n in range(1, leaf.hosts + 1)]
        object.__setattr__(self, "_hosts", tuple(hosts))
        object.__setattr__(self, "_first", tuple(first))
        object.__setattr__(self, "_max_hosts", max((leaf.hosts for leaf in self.leaves), default=0))
        first_free = self._max_hosts + len(self.spine_names) + 1  # leaf ports after the uplinks
        object.__setattr__(self, "_linux", tuple(LinuxHost(k, name, plane, leaf, first_free + k)
                                                 for k, (name, plane, leaf) in enumerate(self.linux_specs)))

    def first_host(self, leaf: int) -> int:
        """Index of the first host behind ``leaf`` (hosts are numbered leaf by leaf)."""
        return self._first[leaf]

    @property
    def spines(self) -> int:
        return len(self.spine_names)

    @property
    def hosts(self) -> tuple[Host, ...]:
        return self._hosts

    @property
    def linux_hosts(self) -> tuple[LinuxHost, ...]:
        return self._linux

    def linux_on(self, plane: int, leaf: int) -> list[LinuxHost]:
        """The Linux SRv6 nodes cabled to leaf ``leaf`` of ``plane``."""
        return [x for x in self._linux if x.plane == plane and x.leaf == leaf]

    @property
    def max_hosts_per_leaf(self) -> int:
        return self._max_hosts

    def cabled(self, plane: int, leaf: int, spine: int) -> bool:
        """Is leaf ``leaf`` of ``plane`` cabled to spine ``spine`` of that plane?"""
        return (plane, leaf, spine) not in self.missing

    def uplinks(self, plane: int, leaf: int) -> Iterator[int]:
        """The spines leaf ``leaf`` of ``plane`` is cabled to, in index order."""
        if not self.missing:
            return iter(range(self.spines))
        return (s for s in range(self.spines) if (plane, leaf, s) not in self.missing)

    def downlinks(self, plane: int, spine: int) -> Iterator[int]:
        if not self.missing:
            return iter(range(len(self.leaves)))
        return (i for i in range(len(self.leaves)) if (plane, i, spine) not in self.missing)

    def host(self, name: str) -> Host:
        """The host called ``name`` (``h3``), or a TopologyError naming the valid range."""
        if name.startswith("h") and name[1:].isdigit():
            index = int(name[1:]) - 1
            if 0 <= index < len(self._hosts):
                return self._hosts[index]
        raise TopologyError(f"no host {name!r} in topology {self.name!r}: hosts are h1..h{len(self._hosts)}")

    def leaf_name(self, plane: int, leaf: int) -> str:
        return f"p{plane}-{self.leaves[leaf].name}"

    def spine_name(self, plane: int, spine: int) -> str:
        return f"p{plane}-{self.spine_names[spine]}"

    def summary(self) -> str:
        shape = "Clos" if not self.missing else f"graph, {len(self.missing)} cables left out"
        linux = f", {len(self._linux)} Linux SRv6 nodes" if self._linux else ""
        return (f"{self.name}: {self.planes} planes x ({len(self.leaves)} leaves + {self.spines} spines), "
                f"{len(self._hosts)} hosts ({shape}){linux}, {self.evs_per_nic} EVs per NIC, {self.ev_mode} EVs")


# ---- the schema (input files and parameters) ---------------------------------


def _limit(low: int, high: int, what: str) -> Any:
    return Field(ge=low, le=high, description=f"{what} ({low}..{high})")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class TrimSpec(_Strict):
    enabled: bool = True
    threshold: Annotated[int, _limit(0, (1 << 19) - 1, "queue depth in packets")] = DEFAULT_TRIM_THRESHOLD
    dscp: Annotated[int, _limit(0, 63, "DSCP of the trim mark")] = DEFAULT_TRIM_DSCP
    classes: list[Annotated[int, _limit(0, 63, "DSCP of a trimmed traffic class")]] = list(DEFAULT_TRIM_CLASSES)

    @field_validator("classes")
    @classmethod
    def _classes_listed_once(cls, classes: list[int]) -> list[int]:
        if not classes:
            raise ValueError("no traffic class to trim; list at least one DSCP (MRC-lite's is 0), "
                             "or turn trimming off with 'enabled: false'")
        twice = sorted({d for d in classes if classes.count(d) > 1})
        if twice:
            raise ValueError(f"DSCP {twice[0]} is listed twice; list each traffic class once")
        return classes

    @model_validator(mode="after")
    def _mark_is_not_a_class(self) -> TrimSpec:
        if self.dscp in self.classes:
            raise ValueError(f"DSCP {self.dscp} is both a trimmed class (classes) and the trim mark (dscp): "
                             "trimmed and whole packets could not be told apart; give the mark another DSCP")
        return self


class UplinkSpec(_Strict):
    spine: str
    planes: list[Annotated[int, _limit(0, MAX_PLANES - 1, "plane")]] | None = None


class LeafSpec(_Strict):
    name: str | None = None
    hosts: Annotated[int, _limit(0, MAX_HOSTS_PER_LEAF, "hosts on the leaf")]
    uplinks: list[str | UplinkSpec] | None = None  # default: every spine, every plane


class GraphSpec(_Strict):
    spines: Annotated[list[str], Field(min_length=1, max_length=MAX_SPINES)]
    leaves: Annotated[list[LeafSpec], Field(min_length=1, max_length=MAX_LEAVES)]


class LinuxHostSpec(_Strict):
    name: str
    plane: Annotated[int, _limit(0, MAX_PLANES - 1, "plane")]
    leaf: Annotated[int, _limit(0, MAX_LEAVES - 1, "leaf")]


class TopologySpec(_Strict):
    """What a topology file (or the command line) may say."""

    name: str = "topology"
    planes: Annotated[int, _limit(1, MAX_PLANES, "planes")]
    spines: Annotated[int, _limit(1, MAX_SPINES, "spines per plane")] | None = None
    leaves: Annotated[int, _limit(1, MAX_LEAVES, "leaves per plane")] | None = None
    hosts_per_leaf: Annotated[int, _limit(1, MAX_HOSTS_PER_LEAF, "hosts per leaf")] | None = None
    graph: GraphSpec | None = None
    evs_per_nic: Annotated[int, _limit(1, MAX_EVS, "EVs per NIC")] = DEFAULT_EVS
    ev_mode: EvMode = "explicit"
    trim: TrimSpec = TrimSpec()
    linux_hosts: list[LinuxHostSpec] = []
    servers: list[str] = []  # [user@]host of each server the runner may place switches on
    placement: str | None = None  # plane, round-robin or a placement file

    @model_validator(mode="after")
    def _one_form(self) -> TopologySpec:
        clos = [k for k in ("spines", "leaves", "hosts_per_leaf") if getattr(self, k) is not None]
        if self.graph is not None and clos:
            raise ValueError(f"give either 'graph' or {', '.join(clos)}, not both")
        if self.graph is None and len(clos) != 3:
            missing = [k for k in ("spines", "leaves", "hosts_per_leaf") if getattr(self, k) is None]
            raise ValueError(f"missing {', '.join(missing)} (or describe the fabric with 'graph')")
        return self


def _graph_topology(spec: TopologySpec, graph: GraphSpec, where: str, root: yaml.Node | None = None) -> Topology:
    def at(*loc: Any) -> str:
        """``file:line: field.path`` of ``loc`` (the line when the YAML is at hand)."""
        line = _line_of(root, ("graph",) + loc) if root is not None else None
        return f"{where}:{line}: " if line else f"{where}: "

    spine_index: dict[str, int] = {}
    for j, name in enumerate(graph.spines):
        if name in spine_index:
            raise TopologyError(f"{at('spines', j)}graph.spines.{j}: duplicate spine name {name!r}; "
                                "give every spine its own name")
        spine_index[name] = j
    leaves: list[Leaf] = []
    seen: dict[str, int] = {}
    missing: set[tuple[int, int, int]] = set()
    for i, ls in enumerate(graph.leaves):
        name = ls.name or f"leaf{i}"
        if name in seen or name in spine_index:
            raise TopologyError(f"{at('leaves', i, 'name')}graph.leaves.{i}.name: duplicate name {name!r}; "
                                "give every switch its own name")
        seen[name] = i
        leaves.append(Leaf(i, name, ls.hosts))
        if ls.uplinks is None:
            continue
        cabled: set[tuple[int, int]] = set()
        for k, up in enumerate(ls.uplinks):
            spine = up if isinstance(up, str) else up.spine
            planes = range(spec.planes) if isinstance(up, str) or up.planes is None else up.planes
            if spine not in spine_index:
                raise TopologyError(f"{at('leaves', i, 'uplinks', k)}graph.leaves.{i}.uplinks.{k}: no spine {spine!r}; "
                                    f"spines are {', '.join(graph.spines)}")
            for p in planes:
                if p >= spec.planes:
                    raise TopologyError(f"{at('leaves', i, 'uplinks', k, 'planes')}graph.leaves.{i}.uplinks.{k}.planes: "
                                        f"plane {p} does not exist; "
                                        f"planes are 0..{spec.planes - 1}")
                cabled.add((p, spine_index[spine]))
        missing |= {(p, i, s) for p in range(spec.planes) for s in range(len(graph.spines)) if (p, s) not in cabled}
    if not any(leaf.hosts for leaf in leaves):
        raise TopologyError(f"{at('leaves')}graph.leaves: no leaf has hosts; give at least one leaf 'hosts: 1'")
    _check_hosts(sum(leaf.hosts for leaf in leaves), f"{at('leaves')}graph.leaves")
    return Topology(spec.name, spec.planes, tuple(graph.spines), tuple(leaves), frozenset(missing),
                    spec.evs_per_nic, spec.ev_mode, spec.trim.threshold if spec.trim.enabled else None,
                    spec.trim.dscp, tuple(spec.trim.classes), where)


def _check_hosts(total: int, place: str) -> None:
    """A NIC's and host's MACs hold the host index in 20 bits (docs/addressing.md)."""
    if total > MAX_HOSTS:
        raise TopologyError(f"{place}: {total} hosts, more than the address plan's {MAX_HOSTS} "
                            "(20-bit host index in MACs); use fewer leaves or hosts per leaf")


def from_spec(spec: TopologySpec, where: str, root: yaml.Node | None = None, option_names: bool = False) -> Topology:
    """The model of a validated spec (``where`` names the source in errors, ``root``
    the composed YAML for line numbers)."""
    topo = _fabric_of(spec, where, root, option_names)
    if spec.servers or spec.placement:
        topo = dataclasses.replace(topo, servers=tuple(spec.servers), placement=spec.placement)
    if not spec.linux_hosts:
        return topo
    seen: set[str] = set()
    for k, lx in enumerate(spec.linux_hosts):
        line = _line_of(root, ("linux_hosts", k)) if root is not None else None
        place = f"{where}:{line}" if line else where
        if lx.name in seen or (lx.name.startswith("h") and lx.name[1:].isdigit()) or lx.name.startswith("nic"):
            raise TopologyError(f"{place}: linux_hosts.{k}.name: {lx.name!r} is taken (hosts are h1.., NICs nic1..); "
                                "give every Linux node its own name, e.g. lx1")
        seen.add(lx.name)
        if lx.plane >= topo.planes:
            raise TopologyError(f"{place}: linux_hosts.{k}.plane: plane {lx.plane} does not exist; "
                                f"planes are 0..{topo.planes - 1}")
        if lx.leaf >= len(topo.leaves):
            raise TopologyError(f"{place}: linux_hosts.{k}.leaf: leaf {lx.leaf} does not exist; "
                                f"leaves are 0..{len(topo.leaves) - 1}")
    return dataclasses.replace(topo, linux_specs=tuple((lx.name, lx.plane, lx.leaf) for lx in spec.linux_hosts))


def _fabric_of(spec: TopologySpec, where: str, root: yaml.Node | None, option_names: bool) -> Topology:
    if spec.graph is not None:
        return _graph_topology(spec, spec.graph, where, root)
    assert spec.spines is not None and spec.leaves is not None and spec.hosts_per_leaf is not None
    line = _line_of(root, ("hosts_per_leaf",)) if root is not None else None
    field_name = "--hosts-per-leaf" if option_names else "hosts_per_leaf"
    _check_hosts(spec.leaves * spec.hosts_per_leaf, f"{where}:{line}: {field_name}" if line else f"{where}: {field_name}")
    leaves = tuple(Leaf(i, f"leaf{i}", spec.hosts_per_leaf) for i in range(spec.leaves))
    return Topology(spec.name, spec.planes, tuple(f"spine{j}" for j in range(spec.spines)), leaves, frozenset(),
                    spec.evs_per_nic, spec.ev_mode, spec.trim.threshold if spec.trim.enabled else None,
                    spec.trim.dscp, tuple(spec.trim.classes), where)


_FIXES = {
    "extra_forbidden": "remove it (see topologies/README.md for the fields)",
    "missing": "add it",
    "int_type": "write a whole number",
    "string_type": "write a name",
    "bool_type": "write true or false",
    "list_type": "write a list: [first, second, ...]",
    "literal_error": "",
    "less_than_equal": "",
    "greater_than_equal": "",
}


def _line_of(node: yaml.Node | None, loc: tuple[Any, ...]) -> int | None:
    """The 1-based line of field ``loc`` in a composed YAML document, if it is there
    (the line of its key, or of its item in a list)."""
    line = None
    for key in loc:
        if node is None:
            break
        line = node.start_mark.line + 1
        if isinstance(node, yaml.MappingNode):
            pair = next(((k, v) for k, v in node.value if getattr(k, "value", None) == key), None)
            if pair is None:
                return line
            line, node = pair[0].start_mark.line + 1, pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def _one_line(err: ValidationError, where: str, root: yaml.Node | None, option_names: bool) -> str:
    e = err.errors()[0]
    loc = tuple(x for x in e["loc"] if not (isinstance(x, str) and x.startswith(("function-", "int", "str"))))
    loc = tuple(x for x in loc if x not in ("UplinkSpec",))
    if not loc and e["type"] == "value_error" and isinstance(e.get("input"), dict) and "graph" in e["input"]:
        loc = ("graph",)  # both forms given: point at the graph
    if option_names and loc:
        path = "--" + str(loc[0]).replace("_", "-")
    else:
        path = ".".join(str(x) for x in loc) or "(top level)"
    line = _line_of(root, loc) if root is not None else None
    place = f"{where}:{line}" if line else where
    msg = e["msg"].replace("Value error, ", "")
    fix = _FIXES.get(e["type"], "")
    ctx = e.get("ctx") or {}
    if e["type"] == "less_than_equal":
        msg, fix = f"{e['input']} is more than the limit {ctx['le']}", f"give at most {ctx['le']}"
    elif e["type"] == "greater_than_equal":
        msg, fix = f"{e['input']} is less than {ctx['ge']}", f"give at least {ctx['ge']}"
    extra = len(err.errors()) - 1
    more = f" (and {extra} more)" if extra else ""
    return f"{place}: {path}: {msg}{'; ' + fix if fix else ''}{more}"


def load_file(path: str | Path) -> Topology:
    """Read and validate a topology file; TopologyError with file:line: field: what and fix."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TopologyError(f"{path}: cannot read the topology file ({exc.strerror}); "
                            "give a file from topologies/ or the shape as parameters") from None
    except UnicodeDecodeError as exc:
        raise TopologyError(f"{path}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); "
                            "a topology file is YAML text, see topologies/README.md") from None
    try:
        root = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        place = f"{path}:{mark.line + 1}" if mark else str(path)
        raise TopologyError(f"{place}: not valid YAML ({getattr(exc, 'problem', exc)}); fix the syntax") from None
    except RecursionError:
        raise TopologyError(f"{path}: nested too deeply to read; a topology is a few levels of fields, "
                            "see topologies/README.md") from None
    if not isinstance(data, dict):
        raise TopologyError(f"{path}: a topology file is a mapping of fields (planes: 4, ...); see topologies/README.md")
    data.setdefault("name", path.stem)
    try:
        spec = TopologySpec.model_validate(data)
    except ValidationError as exc:
        raise TopologyError(_one_line(exc, str(path), root, option_names=False)) from None
    return from_spec(spec, str(path), root)


def from_parameters(**params: Any) -> Topology:
    """The topology given as command-line parameters (None: the default fabric's value)."""
    data = dict(DEFAULTS)
    data.update({k: v for k, v in params.items() if v is not None})
    classes = params.get("trim_classes")
    trim = {"enabled": not params.get("no_trim"), "threshold": params.get("trim_threshold"),
            "classes": list(classes) if isinstance(classes, tuple) else classes}
    for key in ("trim_threshold", "no_trim", "trim_classes"):
        data.pop(key, None)
    if not trim["enabled"] or any(v is not None for v in (trim["threshold"], trim["classes"])):
        data["trim"] = {k: v for k, v in trim.items() if v is not None}
    try:
        spec = TopologySpec.model_validate(data)
    except ValidationError as exc:
        raise TopologyError(_one_line(exc, "parameters", None, option_names=True)) from None
    return from_spec(spec, "parameters", option_names=True)


def default_topology() -> Topology:
    """The default fabric: 4 planes x (2 leaves + 2 spines), 2 hosts per leaf."""
    return from_parameters()
