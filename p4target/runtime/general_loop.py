"""The general loop of a ``Switch``: simple_switch's sequence, with queues.

``send`` queues a frame; ``run_until_idle`` and ``advance`` run what waits: parse,
verify checksum, ingress, ingress clone, digests, resubmit, multicast or unicast,
queueing (the traffic manager shapes limited ports), egress, egress clone, drop
check, compute checksum, deparse, recirculate or transmit, and the drop and port
accounting every path shares. Every frame can take this path; ``inject`` and
``inject_batch`` (``FramePaths``, p4target/runtime/frame_paths.py) take shorter
ones first and hand anything unusual (clones, resubmit, multicast, a shaped port,
recirculation) to the steps here, so that the order of events and every metadata
value are this loop's.

``GeneralLoop`` is a collaborator of ``Switch`` (p4target/runtime/switch.py), which
makes one per switch and hands it the replication engine, the traffic manager and
the pipeline; the loop owns the clock, the queues, the outputs waiting to be
returned and the counters (drops, port statistics, packet-ins).
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Any

from p4target.errors import EntryError
from p4target.runtime.bindings import DROP_PORT, PacketAbort
from p4target.runtime.pre import ReplicationEngine
from p4target.runtime.traffic import NUM_PRIORITIES, TrafficManager

log = logging.getLogger(__name__)
_monotonic_ns = time.monotonic_ns

# standard_metadata.instance_type values of simple_switch
NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = range(7)
# A packet may loop through resubmit/recirculate/clones at most this many times.
MAX_PASSES = 64
# Frames sent to cpu_port are kept (the newest this many) for tests and tools.
PACKET_IN_KEEP = 4096


@dataclass
class PortStats:
    rx_packets: int = 0
    rx_bytes: int = 0
    tx_packets: int = 0
    tx_bytes: int = 0
    drops: int = 0


class _Job:
    """A packet waiting for the ingress pipeline."""

    __slots__ = ("data", "port", "itype", "src", "field_list", "plen", "passes")

    def __init__(self, data: bytes, port: int, itype: int = NORMAL, src=None,
                 field_list: int | None = None, plen: int | None = None, passes: int = 0) -> None:
        self.data = data
        self.port = port
        self.itype = itype
        self.src = src
        self.field_list = field_list
        self.plen = plen
        self.passes = passes


class GeneralLoop:
    """The queued path of a switch (``send``, ``run_until_idle``, ``advance``), the
    steps of simple_switch's sequence the other paths fall back to, the clock, and
    the drop and port accounting.

    ``pipeline`` is set by the switch once its bindings (which read this clock) are
    made; ``down`` is the set of ports that are down, changed in place by the switch.
    """

    def __init__(self, name: str, cpu_port: int | None, pre: ReplicationEngine, tm: TrafficManager,
                 real_time: bool) -> None:
        self.name = name
        self.cpu_port = cpu_port
        self.pre = pre
        self.tm = tm
        self.pipeline: Any = None  # the compiled program's instance (Program.instantiate)
        self.down: set[int] = set()
        # the clock: virtual (moved by advance) unless real_time
        self.real_time = real_time
        self.t0_ns = time.monotonic_ns()
        self.vnow_us = 0
        # Frames sent to cpu_port: also in the outputs (port == cpu_port) for the
        # Device; kept here for tests and tools, the newest PACKET_IN_KEEP of them.
        self.packet_ins: deque[bytes] = deque(maxlen=PACKET_IN_KEEP)
        self.drops: Counter[str] = Counter()
        self.port_stats: dict[int, PortStats] = {}
        self.inq: deque[_Job] = deque()
        self.egq: deque = deque()
        self.out: list[tuple[int, bytes]] = []  # outputs not yet returned
        self.digest_rows: list[tuple[str, tuple[int, ...]]] = []  # digests not yet taken

    def now_us(self) -> int:
        """Microseconds since the switch started (virtual unless real_time)."""
        if self.real_time:
            return (_monotonic_ns() - self.t0_ns) // 1000
        return self.vnow_us

    # ---- accounting --------------------------------------------------------------
    def stats(self, port: int) -> PortStats:
        s = self.port_stats.get(port)
        if s is None:
            s = self.port_stats[port] = PortStats()
        return s

    @property
    def drop_count(self) -> int:
        return sum(self.drops.values())

    def drop(self, reason: str, port: int | None = None) -> None:
        self.drops[reason] += 1
        if port is not None:
            self.stats(port).drops += 1
        log.debug("%s: drop (%s)", self.name, reason)

    # ---- entry points -------------------------------------------------------------
    def send(self, port: int, frame: bytes) -> None:
        """Queue a frame arriving on ``port``; ``run_until_idle`` processes it."""
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < DROP_PORT:
            raise EntryError("invalid", f"ingress port {port!r} must be 0..{DROP_PORT - 1}")
        data = bytes(frame)
        s = self.stats(port)
        s.rx_packets += 1
        s.rx_bytes += len(data)
        if port in self.down:
            self.drop("port_down", port)
            return
        self.inq.append(_Job(data, port))

    def run_until_idle(self) -> list[tuple[int, bytes]]:
        """Process what is waiting and what the clock lets leave the queues now."""
        self.run()
        out = self.out
        self.out = []
        return out

    def advance(self, seconds: float) -> list[tuple[int, bytes]]:
        """Move the virtual clock on, letting rate-limited queues drain on time."""
        if seconds < 0:
            raise EntryError("invalid", "advance() needs seconds >= 0")
        if self.real_time:
            time.sleep(seconds)
            return self.run_until_idle()
        target = self.vnow_us + int(round(seconds * 1e6))
        self.run()
        while True:
            t = self.tm.next_departure_us()
            if t is None or t > target:
                break
            self.vnow_us = max(self.vnow_us, int(t + 0.999999))
            self.run()
        self.vnow_us = target
        self.run()
        out = self.out
        self.out = []
        return out

    def digests(self) -> list[tuple[str, tuple[int, ...]]]:
        """Digests produced since the last call, oldest first."""
        out = self.digest_rows
        self.digest_rows = []
        return out

    # ---- the general loop -------------------------------------------------------
    def run(self) -> None:
        inq, egq, tm = self.inq, self.egq, self.tm
        while True:
            if inq:
                job = inq.popleft()
                try:
                    self._ingress(job)
                except PacketAbort as e:
                    log.warning("%s: assertion failed in ingress (%s): packet dropped", self.name, e.where)
                    self.drop("assert", job.port)
                except Exception:  # the switch must survive any one packet
                    log.exception("%s: internal error in ingress; packet dropped", self.name)
                    self.drop("internal_error", job.port)
                continue
            if egq:
                st, port, depth, passes = egq.popleft()
                self._egress_safe(st, port, depth, passes)
                continue
            if tm.queued:
                item = tm.dequeue(self.now_us())
                if item is not None:
                    port, _prio, (st, passes), depth = item
                    self._egress_safe(st, port, depth, passes)
                    continue
            return

    def _egress_safe(self, st, port: int, depth: int, passes: int) -> None:
        try:
            self._egress(st, port, depth, passes)
        except PacketAbort as e:
            log.warning("%s: assertion failed in egress (%s): packet dropped", self.name, e.where)
            self.drop("assert", port)
        except Exception:
            log.exception("%s: internal error in egress; packet dropped", self.name)
            self.drop("internal_error", port)

    def enqueue(self, st, port: int, passes: int) -> None:
        sm = st.sm
        if not 0 <= port < DROP_PORT:
            self.drop("bad_egress_port")
            return
        prio = sm.priority
        if not 0 <= prio < NUM_PRIORITIES:
            self.drop("priority_out_of_range", port)
            return
        sm.enq_timestamp = self.now_us()
        if not self.tm.is_limited(port):
            sm.enq_qdepth = 0
            self.egq.append((st, port, 0, passes))
            return
        found = self.tm.enqueue(port, prio, (st, passes))
        if found is None:
            self.drop("queue_full", port)
            return
        sm.enq_qdepth = found

    def _ingress(self, job: _Job) -> None:
        pipe = self.pipeline
        st = pipe.parse(job.data, job.port, job.itype, job.plen)
        if job.src is not None and job.field_list is not None:
            pipe.preserve(job.src, st, job.field_list)
        sm = st.sm
        sm.ingress_global_timestamp = self.now_us()
        pipe.verify_checksum(st)
        pipe.ingress(st)
        self.after_ingress(st, job.data, job.port, job.plen, job.passes)

    def after_ingress(self, st, data: bytes, in_port: int, job_plen: int | None, passes: int) -> None:
        """What simple_switch does between ingress and the queues: ingress clones,
        digests, resubmit, multicast or unicast."""
        pipe = self.pipeline
        sm = st.sm
        plen = len(data) if job_plen is None else job_plen

        if st.clones:
            _, session, fl = st.clones[-1]
            st.clones.clear()
            cfg = self.pre.session(session)
            if cfg is None:
                log.debug("%s: clone to unconfigured session %d ignored", self.name, session)
            elif passes < MAX_PASSES:
                for port, rid in cfg.replicas:
                    c = pipe.parse(data, in_port, INGRESS_CLONE, plen)
                    if fl is not None:
                        pipe.preserve(st, c, fl)
                    c.sm.instance_type = INGRESS_CLONE
                    c.sm.egress_rid = rid
                    c.sm.ingress_global_timestamp = sm.ingress_global_timestamp
                    if cfg.truncate:
                        c.truncate_to = cfg.truncate
                    self.enqueue(c, port, passes + 1)
            else:
                self.drop("loop")

        if st.digests:
            self.digest_rows.extend(st.digests)
            st.digests.clear()

        if st.resubmit is not None:
            fl = st.resubmit
            st.resubmit = None
            if passes >= MAX_PASSES:
                self.drop("loop", in_port)
                return
            self.inq.appendleft(_Job(data, in_port, RESUBMIT, st, fl, plen, passes + 1))
            return

        grp = sm.mcast_grp
        if grp:
            replicas = self.pre.replicas(grp)
            if not replicas:
                self.drop("mcast_group_empty", in_port)
                return
            sm.instance_type = REPLICATION
            # simple_switch clears a copy's packet registers: a recirculate asked for
            # in ingress does not survive replication
            st.recirculate = None
            last = len(replicas) - 1
            for i, (port, rid) in enumerate(replicas):
                c = st if i == last else pipe.copy_state(st)
                c.sm.egress_rid = rid
                self.enqueue(c, port, passes)
            return

        spec = sm.egress_spec
        if spec == DROP_PORT:
            self.drop("ingress_drop", in_port)
            return
        sm.instance_type = NORMAL
        self.enqueue(st, spec, passes)

    def _egress(self, st, port: int, depth: int, passes: int) -> None:
        pipe = self.pipeline
        sm = st.sm
        now = (_monotonic_ns() - self.t0_ns) // 1000 if self.real_time else self.vnow_us
        sm.egress_global_timestamp = now
        sm.deq_timedelta = now - sm.enq_timestamp
        sm.deq_qdepth = depth
        sm.egress_port = port
        sm.egress_spec = 0
        pipe.egress(st)
        self.egress_after(st, port, passes)

    def egress_after(self, st, port: int, passes: int) -> None:
        """What simple_switch does after egress: egress clones, the drop check,
        compute checksum, deparse, then recirculate or transmit."""
        pipe = self.pipeline
        sm = st.sm
        if st.clones:
            _, session, fl = st.clones[-1]
            st.clones.clear()
            cfg = self.pre.session(session)
            if cfg is not None and passes < MAX_PASSES:
                for cport, rid in cfg.replicas:
                    c = pipe.copy_state(st)
                    # simple_switch keeps the headers and resets all metadata (user
                    # metadata too, where the pipeline can make a fresh state).
                    new_state = getattr(pipe, "new_state", None)
                    if new_state is not None:
                        c.meta = new_state().meta
                    pipe.reset_standard_metadata(c)
                    if fl is not None:
                        pipe.preserve(st, c, fl)
                    c.clones = []
                    c.digests = []
                    c.resubmit = None
                    c.recirculate = None
                    c.truncate_to = cfg.truncate or None
                    csm = c.sm
                    csm.instance_type = EGRESS_CLONE
                    csm.egress_rid = rid
                    csm.ingress_port = sm.ingress_port
                    csm.packet_length = sm.packet_length
                    csm.ingress_global_timestamp = sm.ingress_global_timestamp
                    self.enqueue(c, cport, passes + 1)
            elif cfg is not None:
                self.drop("loop", port)

        if sm.egress_spec == DROP_PORT:
            self.drop("egress_drop", port)
            return
        pipe.compute_checksum(st)
        data = pipe.deparse(st)

        if st.recirculate is not None:
            fl = st.recirculate
            st.recirculate = None
            if passes >= MAX_PASSES:
                self.drop("loop", port)
                return
            self.inq.appendleft(_Job(data, sm.ingress_port, RECIRC, st, fl, None, passes + 1))
            return

        cut = st.truncate_to
        if cut is not None and 0 < cut < len(data):
            data = data[:cut]
        self.transmit(port, data)

    def transmit(self, port: int, data: bytes) -> None:
        if port in self.down:
            self.drop("port_down", port)
            return
        s = self.port_stats.get(port)
        if s is None:
            s = self.stats(port)
        s.tx_packets += 1
        s.tx_bytes += len(data)
        if port == self.cpu_port:
            self.packet_ins.append(data)
        self.out.append((port, data))
