"""The direct paths of a frame through a ``Switch``: ``inject`` and ``inject_batch``.

``FramePaths`` is the collaborator of ``Switch`` (p4target/runtime/switch.py) that
takes a frame the short way when nothing else waits: first the fused fast path,
then the general direct path (simple_switch's steps for a unicast frame, without
queues or job objects), falling back to the steps of the general loop
(``GeneralLoop``, p4target/runtime/general_loop.py) for anything unusual. It lives
apart from the control-plane API of ``Switch`` (tables, externs, replication,
ports) and from the general loop so that each can be read on its own. It owns the
fast path a frame is offered (bound by ``Switch``) and the count of frames it took;
the queues, clock and counters are the general loop's.
"""

from __future__ import annotations

import logging
import time
from typing import Callable

from p4target.runtime.bindings import DROP_PORT, PacketAbort
from p4target.runtime.general_loop import NORMAL, GeneralLoop
from p4target.runtime.traffic import NUM_PRIORITIES

log = logging.getLogger(__name__)
_monotonic_ns = time.monotonic_ns


class FramePaths:
    """The direct ways of a frame through a switch: ``inject`` and ``inject_batch``,
    the fused fast path first, then the general direct path; what they cannot take
    goes to the general loop ``loop``, whose state and accounting they share.

    ``fast`` is the fused fast path (None: none), ``unbound`` until the switch binds
    it for the first frame; ``fast_clock`` says whether it reads the clock.
    ``verify`` and ``compute`` are the checksum blocks, None where the compiler marks
    them as doing nothing (an empty apply)."""

    def __init__(self, loop: GeneralLoop, fast: Callable | None, unbound: Callable | None,
                 verify: Callable | None, compute: Callable | None) -> None:
        self.loop = loop
        self.fast = fast
        self.unbound = unbound
        self.fast_clock = True
        self.fast_packets = 0  # frames the fused fast path (Pipeline.fast) handled
        self.verify = verify
        self.compute = compute

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
        loop = self.loop
        if loop.inq or loop.egq or type(port) is not int or not 0 <= port < DROP_PORT:
            loop.send(port, frame)
            return loop.run_until_idle()
        data = frame if type(frame) is bytes else bytes(frame)
        s = loop.port_stats.get(port)
        if s is None:
            s = loop.stats(port)
        s.rx_packets += 1
        s.rx_bytes += len(data)
        if port in loop.down:
            loop.drop("port_down", port)
            return loop.run_until_idle()
        fast = self.fast
        if fast is not None and not loop.tm.limited:
            # the fused path (p4target/compiler/fast_compiler.py): None means "not this
            # packet", with nothing changed; the general direct path below then runs
            if loop.real_time:  # 0 when the fast path reads no timestamp
                now = (_monotonic_ns() - loop.t0_ns) // 1000 if self.fast_clock else 0
            else:
                now = loop.vnow_us
            try:
                r = fast(data, port, now)
            except Exception:  # the general path below reports it as it always did
                r = None
            if r is not None:
                self.fast_packets += 1
                out_port, data = r
                if data is None:
                    loop.drop("ingress_drop", port)
                elif out_port in loop.down:  # loop.transmit, inlined: this is the hottest path
                    loop.drop("port_down", out_port)
                else:
                    s = loop.port_stats.get(out_port)
                    if s is None:
                        s = loop.stats(out_port)
                    s.tx_packets += 1
                    s.tx_bytes += len(data)
                    if out_port == loop.cpu_port:
                        loop.packet_ins.append(data)
                    loop.out.append((out_port, data))
                if loop.tm.queued:  # the queues were empty and the fast path adds nothing
                    loop.run()
                out = loop.out
                loop.out = []
                return out
        return self.general_direct(port, data)

    def general_direct(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """The general direct path of ``inject`` for a frame the fast path did not
        take (or that it could not be offered): every output until idle.

        The caller has checked that nothing waits for the ingress or egress pipeline
        and that ``port`` is a valid port that is up, and has counted the frame in
        ``port``'s rx statistics; ``inject`` and ``inject_batch`` share this so that a
        frame the fast path declined in a batch goes straight here, without running
        the fast path a second time."""
        loop = self.loop
        pipe = loop.pipeline
        st = None
        # ---- as _ingress + _after_ingress + _enqueue, for a unicast frame
        try:
            st = pipe.parse(data, port, NORMAL, None)
            sm = st.sm
            now = (_monotonic_ns() - loop.t0_ns) // 1000 if loop.real_time else loop.vnow_us
            sm.ingress_global_timestamp = now
            if self.verify is not None:
                self.verify(st)
            pipe.ingress(st)
            sm = st.sm  # a sub-control given standard_metadata inout hands back its copy
            if st.clones or st.digests or st.resubmit is not None or sm.mcast_grp:
                loop.after_ingress(st, data, port, None, 0)
                st = None
            else:
                out_port = sm.egress_spec
                if out_port == DROP_PORT:
                    loop.drop("ingress_drop", port)
                    st = None
                else:
                    sm.instance_type = NORMAL
                    if (not 0 <= out_port < DROP_PORT or not 0 <= sm.priority < NUM_PRIORITIES
                            or out_port in loop.tm.limited):
                        loop.enqueue(st, out_port, 0)
                        st = None
                    else:  # no rate limit: the packet would leave the queue at once
                        sm.enq_timestamp = now
                        sm.enq_qdepth = 0
        except PacketAbort as e:
            log.warning("%s: assertion failed in ingress (%s): packet dropped", loop.name, e.where)
            loop.drop("assert", port)
            st = None
        except Exception:  # the switch must survive any one packet
            log.exception("%s: internal error in ingress; packet dropped", loop.name)
            loop.drop("internal_error", port)
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
                sm = st.sm
                if st.clones or sm.egress_spec == DROP_PORT or st.recirculate is not None:
                    loop.egress_after(st, out_port, 0)
                else:
                    if self.compute is not None:
                        self.compute(st)
                    data = pipe.deparse(st)
                    cut = st.truncate_to
                    if cut is not None and 0 < cut < len(data):
                        data = data[:cut]
                    loop.transmit(out_port, data)
            except PacketAbort as e:
                log.warning("%s: assertion failed in egress (%s): packet dropped", loop.name, e.where)
                loop.drop("assert", out_port)
            except Exception:
                log.exception("%s: internal error in egress; packet dropped", loop.name)
                loop.drop("internal_error", out_port)
        if loop.inq or loop.egq or loop.tm.queued:
            loop.run()
        out = loop.out
        loop.out = []
        return out

    def inject_batch(self, port: int, frames: list[bytes],  # noqa: C901 — the fast path's per-frame loop, inlined: a helper would cost a call per frame
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
        loop = self.loop
        out = loop.out
        loop.out = []
        fast = self.batch_fast(port)
        if fast is not None:
            loop.stats(port)  # made first, as inject does (the dict keeps that order)
        stats = loop.port_stats
        down = loop.down
        cpu = loop.cpu_port
        keep_packet_in = loop.packet_ins.append
        add = out.append
        # the fast path's clock: read per frame if it reads the time, else fixed
        clock = loop.real_time and self.fast_clock
        t0 = loop.t0_ns
        now = 0 if loop.real_time else loop.vnow_us
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
                    except Exception:  # inject below reports it as it always did
                        r = None
                    if r is not None:  # as in inject
                        out_port, data = r
                        if data is None:
                            loop.drop("ingress_drop", port)
                        elif out_port in down:
                            loop.drop("port_down", out_port)
                        else:
                            if out_port != last_port:
                                if tx:
                                    s = stats[last_port]
                                    s.tx_packets += tx
                                    s.tx_bytes += tx_bytes
                                    tx = tx_bytes = 0
                                if out_port not in stats:
                                    loop.stats(out_port)
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
                        out += self.general_direct(port, data)
                except Exception as e:
                    if failed is None:
                        raise
                    failed(frame, e)
                fast = self.batch_fast(port)  # the first frame binds it, for one
                clock = loop.real_time and self.fast_clock
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

    def batch_fast(self, port: int) -> Callable | None:
        """The fast path ``inject_batch`` may call directly for frames from ``port``,
        or None if every frame must go through ``inject`` (see there)."""
        fast = self.fast
        loop = self.loop
        tm = loop.tm
        if (fast is None or tm.limited or tm.queued or loop.inq or loop.egq
                or type(port) is not int or not 0 <= port < DROP_PORT or port in loop.down
                or fast == self.unbound):
            return None
        return fast
