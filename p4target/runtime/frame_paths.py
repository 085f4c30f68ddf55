"""The paths a frame takes through a ``Switch``, and their accounting.

``FramePaths`` is the part of ``Switch`` (p4target/runtime/switch.py) that moves
packets: ``send`` + ``run_until_idle`` / ``advance`` run the general loop, which
follows simple_switch's sequence (parse, verify checksum, ingress, ingress clone,
digests, resubmit, multicast or unicast, queueing, egress, egress clone, drop
check, compute checksum, deparse, recirculate or transmit); ``inject`` and
``inject_batch`` first offer a frame to the fused fast path, then take the direct
path (the same steps for a unicast frame, without queues or job objects), falling
back to the general loop for anything unusual. It lives apart from the control-plane
API of ``Switch`` (tables, externs, replication, ports) so that each can be read
on its own; ``Switch`` inherits it and owns the state it works on.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections import deque
from dataclasses import dataclass
from typing import Callable

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


class FramePaths:
    """How frames move through a switch: the entry points (``send``, ``inject``,
    ``inject_batch``, ``run_until_idle``, ``advance``), the direct path, the general
    loop and the drop and port accounting they share.

    ``Switch.__init__`` sets the state below; ``Switch`` also provides ``now_us``
    (the clock) and ``_first_fast`` (the fast path until it is bound)."""

    name: str
    cpu_port: int | None
    pipeline: object  # the compiled program's instance (Program.instantiate)
    pre: ReplicationEngine
    tm: TrafficManager
    packet_ins: deque[bytes]
    drops: Counter[str]
    port_stats: dict[int, PortStats]
    fast_packets: int
    # the fused fast path (None: none; Switch._first_fast until it is bound) and
    # whether it reads the clock
    _fast: Callable | None
    _fast_clock: bool
    # the checksum blocks, None where the compiler marks them as doing nothing
    _verify: Callable | None
    _compute: Callable | None
    _real_time: bool
    _t0_ns: int
    _vnow_us: int
    _down: set[int]
    _inq: deque[_Job]
    _egq: deque
    _out: list[tuple[int, bytes]]
    _digests: list[tuple[str, tuple[int, ...]]]

    # ---- accounting --------------------------------------------------------------
    def _stats(self, port: int) -> PortStats:
        s = self.port_stats.get(port)
        if s is None:
            s = self.port_stats[port] = PortStats()
        return s

    @property
    def drop_count(self) -> int:
        return sum(self.drops.values())

    def _drop(self, reason: str, port: int | None = None) -> None:
        self.drops[reason] += 1
        if port is not None:
            self._stats(port).drops += 1
        log.debug("%s: drop (%s)", self.name, reason)

    # ---- entry points and the direct path -----------------------------------------
    def send(self, port: int, frame: bytes) -> None:
        """Queue a frame arriving on ``port``; ``run_until_idle`` processes it."""
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port < DROP_PORT:
            raise EntryError("invalid", f"ingress port {port!r} must be 0..{DROP_PORT - 1}")
        data = bytes(frame)
        s = self._stats(port)
        s.rx_packets += 1
        s.rx_bytes += len(data)
        if port in self._down:
            self._drop("port_down", port)
            return
        self._inq.append(_Job(data, port))

    def inject(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """Process one frame (and everything it causes) until idle; every output.

        The same as ``send`` + ``run_until_idle``. When nothing else waits for the
        ingress or egress pipeline (the usual case), the frame takes a direct path:
        ingress, then straight to egress when its port has no rate limit, with no
        job objects or queues in between; anything unusual (clones, resubmit,
        multicast, a shaped port, recirculation) falls back to the general loop, so
        the order of events and every metadata value are those of the general loop.
        With the real-time clock the direct path reads the clock once, at ingress:
        a packet that waits in no queue is enqueued and dequeued at that instant
        (enq_timestamp = egress_global_timestamp = ingress_global_timestamp,
        deq_timedelta 0), as with the virtual clock.
        """
        if self._inq or self._egq or type(port) is not int or not 0 <= port < DROP_PORT:
            self.send(port, frame)
            return self.run_until_idle()
        data = frame if type(frame) is bytes else bytes(frame)
        s = self.port_stats.get(port)
        if s is None:
            s = self._stats(port)
        s.rx_packets += 1
        s.rx_bytes += len(data)
        if port in self._down:
            self._drop("port_down", port)
            return self.run_until_idle()
        fast = self._fast
        if fast is not None and not self.tm.limited:
            # the fused path (p4target/compiler/fast_compiler.py): None means "not this
            # packet", with nothing changed; the general direct path below then runs
            if self._real_time:  # 0 when the fast path reads no timestamp
                now = (_monotonic_ns() - self._t0_ns) // 1000 if self._fast_clock else 0
            else:
                now = self._vnow_us
            try:
                r = fast(data, port, now)
            except Exception:  # the general path below reports it as it always did
                r = None
            if r is not None:
                self.fast_packets += 1
                out_port, data = r
                if data is None:
                    self._drop("ingress_drop", port)
                elif out_port in self._down:  # _transmit, inlined: this is the hottest path
                    self._drop("port_down", out_port)
                else:
                    s = self.port_stats.get(out_port)
                    if s is None:
                        s = self._stats(out_port)
                    s.tx_packets += 1
                    s.tx_bytes += len(data)
                    if out_port == self.cpu_port:
                        self.packet_ins.append(data)
                    self._out.append((out_port, data))
                if self.tm.queued:  # _inq/_egq were empty and the fast path adds nothing
                    self._run()
                out = self._out
                self._out = []
                return out
        return self._general_direct(port, data)

    def _general_direct(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """The general direct path of ``inject`` for a frame the fast path did not
        take (or that it could not be offered): every output until idle.

        The caller has checked that nothing waits for the ingress or egress pipeline
        and that ``port`` is a valid port that is up, and has counted the frame in
        ``port``'s rx statistics; ``inject`` and ``inject_batch`` share this so that a
        frame the fast path declined in a batch goes straight here, without running
        the fast path a second time."""
        pipe = self.pipeline
        st = None
        # ---- as _ingress + _after_ingress + _enqueue, for a unicast frame
        try:
            st = pipe.parse(data, port, NORMAL, None)
            sm = st.sm
            now = (_monotonic_ns() - self._t0_ns) // 1000 if self._real_time else self._vnow_us
            sm.ingress_global_timestamp = now
            if self._verify is not None:
                self._verify(st)
            pipe.ingress(st)
            if st.clones or st.digests or st.resubmit is not None or sm.mcast_grp:
                self._after_ingress(st, data, port, None, 0)
                st = None
            else:
                out_port = sm.egress_spec
                if out_port == DROP_PORT:
                    self._drop("ingress_drop", port)
                    st = None
                else:
                    sm.instance_type = NORMAL
                    if (not 0 <= out_port < DROP_PORT or not 0 <= sm.priority < NUM_PRIORITIES
                            or out_port in self.tm.limited):
                        self._enqueue(st, out_port, 0)
                        st = None
                    else:  # no rate limit: the packet would leave the queue at once
                        sm.enq_timestamp = now
                        sm.enq_qdepth = 0
        except PacketAbort as e:
            log.warning("%s: assertion failed in ingress (%s): packet dropped", self.name, e.where)
            self._drop("assert", port)
            st = None
        except Exception:  # the switch must survive any one packet
            log.exception("%s: internal error in ingress; packet dropped", self.name)
            self._drop("internal_error", port)
            st = None
        # ---- as _egress_safe(st, out_port, 0, 0)
        if st is not None:
            try:
                sm.egress_global_timestamp = now
                sm.deq_timedelta = 0
                sm.deq_qdepth = 0
                sm.egress_port = out_port
                sm.egress_spec = 0
                pipe.egress(st)
                if st.clones or sm.egress_spec == DROP_PORT or st.recirculate is not None:
                    self._egress_after(st, out_port, 0)
                else:
                    if self._compute is not None:
                        self._compute(st)
                    data = pipe.deparse(st)
                    cut = st.truncate_to
                    if cut is not None and 0 < cut < len(data):
                        data = data[:cut]
                    self._transmit(out_port, data)
            except PacketAbort as e:
                log.warning("%s: assertion failed in egress (%s): packet dropped", self.name, e.where)
                self._drop("assert", out_port)
            except Exception:
                log.exception("%s: internal error in egress; packet dropped", self.name)
                self._drop("internal_error", out_port)
        if self._inq or self._egq or self.tm.queued:
            self._run()
        out = self._out
        self._out = []
        return out

    def inject_batch(self, port: int, frames: list[bytes],
                     failed: Callable[[bytes, Exception], None] | None = None
                     ) -> list[tuple[int, bytes]]:
        """``inject`` for each of ``frames`` (all arriving on ``port``), in order: the
        outputs of all of them, in order, and the same counters and state as calling
        ``inject`` frame by frame.

        Why: netio's receive rings hand frames over in batches, and for a frame the
        fast path takes, the checks and lookups ``inject`` makes around it (the
        queues, the port, the clock, the counters) cost a quarter as much as the
        fast path of fabric.p4 itself; here they are made once per batch, and the
        counters are added up at the end. A frame the fast path does not take goes
        on to ``inject``'s general direct path (the fast path changed nothing when it
        declined, so it is not run again); every frame goes through ``inject`` itself
        when the fast path cannot be used (none bound yet, a shaped port or packets
        waiting in a queue, the port down). If that raises for a frame,
        ``failed(frame, exception)`` is called and the batch goes on; without
        ``failed`` the exception propagates.
        """
        out = self._out
        self._out = []
        fast = self._batch_fast(port)
        if fast is not None:
            self._stats(port)  # made first, as inject does (the dict keeps that order)
        stats = self.port_stats
        down = self._down
        cpu = self.cpu_port
        keep_packet_in = self.packet_ins.append
        add = out.append
        # the fast path's clock: read per frame if it reads the time, else fixed
        clock = self._real_time and self._fast_clock
        t0 = self._t0_ns
        now = 0 if self._real_time else self._vnow_us
        # frames inject took (it counts them itself), the output port whose counts
        # are being added up, and those counts
        taken = general = general_bytes = 0
        last_port = -1
        tx = tx_bytes = 0
        try:
            for frame in frames:
                if fast is not None:
                    data = frame if type(frame) is bytes else bytes(frame)
                    if clock:
                        now = (_monotonic_ns() - t0) // 1000
                    try:
                        r = fast(data, port, now)
                    except Exception:  # noqa: BLE001 - inject below reports it as it always did
                        r = None
                    if r is not None:  # as in inject
                        out_port, data = r
                        if data is None:
                            self._drop("ingress_drop", port)
                        elif out_port in down:
                            self._drop("port_down", out_port)
                        else:
                            if out_port != last_port:
                                if tx:
                                    s = stats[last_port]
                                    s.tx_packets += tx
                                    s.tx_bytes += tx_bytes
                                    tx = tx_bytes = 0
                                if out_port not in stats:
                                    self._stats(out_port)
                                last_port = out_port
                            tx += 1
                            tx_bytes += len(data)
                            if out_port == cpu:
                                keep_packet_in(data)
                            add(r)
                        taken += 1
                        continue
                general += 1
                general_bytes += len(frame)
                try:
                    if fast is None:
                        out += self.inject(port, frame)
                    else:  # declined: counted as inject counts it, then its general path
                        s = stats[port]
                        s.rx_packets += 1
                        s.rx_bytes += len(data)
                        out += self._general_direct(port, data)
                except Exception as e:
                    if failed is None:
                        raise
                    failed(frame, e)
                fast = self._batch_fast(port)  # the first frame binds it, for one
                clock = self._real_time and self._fast_clock
        finally:
            if tx:
                s = stats[last_port]
                s.tx_packets += tx
                s.tx_bytes += tx_bytes
            if taken:  # a frame from port was seen before these, so its stats exist
                s = stats[port]
                s.rx_packets += taken
                # the frames seen are the first taken + general ones (all, unless one raised)
                seen = frames if taken + general == len(frames) else frames[:taken + general]
                s.rx_bytes += sum(map(len, seen)) - general_bytes
                self.fast_packets += taken
        return out

    def _batch_fast(self, port: int) -> Callable | None:
        """The fast path ``inject_batch`` may call directly for frames from ``port``,
        or None if every frame must go through ``inject`` (see there)."""
        fast = self._fast
        tm = self.tm
        if (fast is None or tm.limited or tm.queued or self._inq or self._egq
                or type(port) is not int or not 0 <= port < DROP_PORT or port in self._down
                or fast == self._first_fast):
            return None
        return fast


    def run_until_idle(self) -> list[tuple[int, bytes]]:
        """Process what is waiting and what the clock lets leave the queues now."""
        self._run()
        out = self._out
        self._out = []
        return out

    def advance(self, seconds: float) -> list[tuple[int, bytes]]:
        """Move the virtual clock on, letting rate-limited queues drain on time."""
        if seconds < 0:
            raise EntryError("invalid", "advance() needs seconds >= 0")
        if self._real_time:
            time.sleep(seconds)
            return self.run_until_idle()
        target = self._vnow_us + int(round(seconds * 1e6))
        self._run()
        while True:
            t = self.tm.next_departure_us()
            if t is None or t > target:
                break
            self._vnow_us = max(self._vnow_us, int(t + 0.999999))
            self._run()
        self._vnow_us = target
        self._run()
        out = self._out
        self._out = []
        return out

    def digests(self) -> list[tuple[str, tuple[int, ...]]]:
        """Digests produced since the last call, oldest first."""
        out = self._digests
        self._digests = []
        return out

    # ---- the general loop -------------------------------------------------------
    def _run(self) -> None:
        inq, egq, tm = self._inq, self._egq, self.tm
        while True:
            if inq:
                job = inq.popleft()
                try:
                    self._ingress(job)
                except PacketAbort as e:
                    log.warning("%s: assertion failed in ingress (%s): packet dropped", self.name, e.where)
                    self._drop("assert", job.port)
                except Exception:  # the switch must survive any one packet
                    log.exception("%s: internal error in ingress; packet dropped", self.name)
                    self._drop("internal_error", job.port)
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
            self._drop("assert", port)
        except Exception:
            log.exception("%s: internal error in egress; packet dropped", self.name)
            self._drop("internal_error", port)

    def _enqueue(self, st, port: int, passes: int) -> None:
        sm = st.sm
        if not 0 <= port < DROP_PORT:
            self._drop("bad_egress_port")
            return
        prio = sm.priority
        if not 0 <= prio < NUM_PRIORITIES:
            self._drop("priority_out_of_range", port)
            return
        sm.enq_timestamp = self.now_us()
        if not self.tm.is_limited(port):
            sm.enq_qdepth = 0
            self._egq.append((st, port, 0, passes))
            return
        found = self.tm.enqueue(port, prio, (st, passes))
        if found is None:
            self._drop("queue_full", port)
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
        self._after_ingress(st, job.data, job.port, job.plen, job.passes)

    def _after_ingress(self, st, data: bytes, in_port: int, job_plen: int | None, passes: int) -> None:
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
                    self._enqueue(c, port, passes + 1)
            else:
                self._drop("loop")

        if st.digests:
            self._digests.extend(st.digests)
            st.digests.clear()

        if st.resubmit is not None:
            fl = st.resubmit
            st.resubmit = None
            if passes >= MAX_PASSES:
                self._drop("loop", in_port)
                return
            self._inq.appendleft(_Job(data, in_port, RESUBMIT, st, fl, plen, passes + 1))
            return

        grp = sm.mcast_grp
        if grp:
            replicas = self.pre.replicas(grp)
            if not replicas:
                self._drop("mcast_group_empty", in_port)
                return
            sm.instance_type = REPLICATION
            # simple_switch clears a copy's packet registers: a recirculate asked for
            # in ingress does not survive replication
            st.recirculate = None
            last = len(replicas) - 1
            for i, (port, rid) in enumerate(replicas):
                c = st if i == last else pipe.copy_state(st)
                c.sm.egress_rid = rid
                self._enqueue(c, port, passes)
            return

        spec = sm.egress_spec
        if spec == DROP_PORT:
            self._drop("ingress_drop", in_port)
            return
        sm.instance_type = NORMAL
        self._enqueue(st, spec, passes)

    def _egress(self, st, port: int, depth: int, passes: int) -> None:
        pipe = self.pipeline
        sm = st.sm
        now = (_monotonic_ns() - self._t0_ns) // 1000 if self._real_time else self._vnow_us
        sm.egress_global_timestamp = now
        sm.deq_timedelta = now - sm.enq_timestamp
        sm.deq_qdepth = depth
        sm.egress_port = port
        sm.egress_spec = 0
        pipe.egress(st)
        self._egress_after(st, port, passes)

    def _egress_after(self, st, port: int, passes: int) -> None:
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
                    self._enqueue(c, cport, passes + 1)
            elif cfg is not None:
                self._drop("loop", port)

        if sm.egress_spec == DROP_PORT:
            self._drop("egress_drop", port)
            return
        pipe.compute_checksum(st)
        data = pipe.deparse(st)

        if st.recirculate is not None:
            fl = st.recirculate
            st.recirculate = None
            if passes >= MAX_PASSES:
                self._drop("loop", port)
                return
            self._inq.appendleft(_Job(data, sm.ingress_port, RECIRC, st, fl, None, passes + 1))
            return

        cut = st.truncate_to
        if cut is not None and 0 < cut < len(data):
            data = data[:cut]
        self._transmit(port, data)

    def _transmit(self, port: int, data: bytes) -> None:
        if port in self._down:
            self._drop("port_down", port)
            return
        s = self.port_stats.get(port)
        if s is None:
            s = self._stats(port)
        s.tx_packets += 1
        s.tx_bytes += len(data)
        if port == self.cpu_port:
            self.packet_ins.append(data)
        self._out.append((port, data))
