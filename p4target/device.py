"""A running device: the current switch, its lock, and where its frames go.

``p4target run`` (ports on Linux interfaces) and the P4Runtime server share one
``Device``. The server may replace the pipeline at any time
(SetForwardingPipelineConfig) while frames keep arriving, so the switch is only
touched under ``lock``, and the port state (link status, queue settings) belongs to
the device, not to one switch: a new pipeline starts with the ports as they are.
Frames the pipeline sends to the CPU port become packet-ins for the controller;
every other output goes to ``output_sink`` (netio sets it to "transmit on the port's
interface").
"""

from __future__ import annotations

import gc
import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:  # pragma: no cover - typing only
    from p4target.compiler import CompiledProgram

log = logging.getLogger(__name__)

PacketInListener = Callable[[bytes], None]
DigestListener = Callable[[str, list[tuple[int, ...]]], None]


def _drop_sink(port: int, frame: bytes) -> None:
    """Default sink: a device without ports has nowhere to send frames."""


def settle_heap() -> None:
    """Collect the garbage of a compile and keep what is left out of later collections.

    A compile leaves hundreds of thousands of long-lived objects (the program's model,
    generated code, tables). Without this, the first full collection afterwards,
    which the allocations of the first large P4Runtime write or of the first busy
    second of traffic trigger, walks all of them, which takes longer than a 1,000-entry
    nic.p4 write itself. ``gc.freeze`` moves the survivors to the permanent
    generation; unfreezing first lets a replaced pipeline's cycles be collected.
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()


class Device:
    """One switch instance as the outside world sees it (see docs/target-internals.md §4)."""

    def __init__(self, device_id: int = 0, cpu_port: int | None = None, seed: int = 0,
                 name: str | None = None) -> None:
        self.device_id = device_id
        # how log lines name the device: "device 3", or "p0-leaf1 (device 3)" when the
        # process runs several switches (p4target group)
        self.label = f"{name} (device {device_id})" if name else f"device {device_id}"
        self.cpu_port = cpu_port
        self.seed = seed
        self.lock = threading.RLock()
        self.switch: Any | None = None
        self.ports: dict[int, str] = {}
        self.output_sink: Callable[[int, bytes], None] = _drop_sink
        self.port_up: dict[int, bool] = {}
        self.queue_depth: dict[int, int] = {}
        self.queue_rate: dict[int, float] = {}
        self.rx_frames = 0
        self.tx_frames = 0
        self.dropped_no_pipeline = 0
        self.errors = 0
        self._packet_in: list[PacketInListener] = []
        self._digest: list[DigestListener] = []

    def _log(self, level: int, msg: str, *args: object) -> None:
        log.log(level, "%s: " + msg, self.label, *args)

    # -- pipeline
    def load(self, source: Path | str | CompiledProgram) -> None:
        """Make a new switch from a .p4 path or a compiled program and make it current.

        A running device keeps real time (meters, queue rates, timestamps follow the
        wall clock), unlike the virtual clock of a bare ``Switch`` in tests.

        The old switch keeps forwarding until the new one is ready; port status and
        queue settings carry over. Raises ``P4Error`` (and keeps the old switch) if
        the program does not compile or load.
        """
        from p4target import Switch

        if isinstance(source, (str, Path)):
            sw = Switch.load(Path(source), seed=self.seed, device_id=self.device_id,
                             cpu_port=self.cpu_port, real_time=True)
            what = str(source)
        else:
            sw = Switch(source, seed=self.seed, device_id=self.device_id,
                        cpu_port=self.cpu_port, real_time=True)
            what = getattr(getattr(source, "model", None), "source", "compiled program")
        for port, up in self.port_up.items():
            sw.set_port_status(port, up)
        for port, depth in self.queue_depth.items():
            sw.set_queue_depth(port, depth)
        for port, rate in self.queue_rate.items():
            sw.set_queue_rate(port, rate)
        sw.bind_fast_path()
        with self.lock:
            self.switch = sw
        settle_heap()
        self._log(logging.INFO, "pipeline loaded from %s (fast path: %s)", what, sw.fast_kind)

    def unload(self) -> None:
        """Forget the pipeline: frames are dropped until the next ``load``."""
        with self.lock:
            self.switch = None

    # -- ports
    def set_port_status(self, port: int, up: bool) -> None:
        """Link up/down from netio or a test: selector watch ports react at once."""
        with self.lock:
            changed = self.port_up.get(port) != up
            self.port_up[port] = up
            if self.switch is not None:
                self.switch.set_port_status(port, up)
        if changed:
            name = self.ports.get(port, "")
            self._log(logging.INFO, "port %d%s is %s", port, f" ({name})" if name else "",
                      "up" if up else "down")

    def set_queue_depth(self, port: int, packets: int) -> None:
        with self.lock:
            self.queue_depth[port] = packets
            if self.switch is not None:
                self.switch.set_queue_depth(port, packets)

    def set_queue_rate(self, port: int, packets_per_second: float) -> None:
        with self.lock:
            self.queue_rate[port] = packets_per_second
            if self.switch is not None:
                self.switch.set_queue_rate(port, packets_per_second)

    # -- frames
    def receive(self, port: int, frame: bytes) -> None:
        """A frame arrived on ``port``: run it through the pipeline and deliver every
        output. Never raises: a pipeline failure is logged and the frame dropped."""
        with self.lock:
            sw = self.switch
            self.rx_frames += 1
            if sw is None:
                self.dropped_no_pipeline += 1
                return
            try:
                outputs = sw.inject(port, frame)
                digests = sw.digests() if self._digest else None
            except Exception:  # one bad frame must not stop the device
                self.errors += 1
                log.exception("%s: frame from port %d dropped: pipeline failed",
                              self.label, port)
                return
        self._deliver(outputs, digests)

    def receive_batch(self, port: int, frames: list[bytes]) -> None:
        """``receive`` for several frames that arrived on ``port``, in order.

        The same as calling ``receive`` for each frame, except that the lock is taken
        once for all of them and the outputs are delivered after the last frame
        (still in order, outside the lock), so the per-frame cost of the lock and
        the delivery is paid once.
        """
        sink = self.output_sink
        for out_port, data in self.process_batch(port, frames):
            try:
                sink(out_port, data)
            except Exception:
                self.errors += 1
                log.exception("%s: output to port %d failed", self.label, out_port)

    def process_batch(self, port: int, frames: list[bytes]) -> list[tuple[int, bytes]]:
        """``receive_batch`` without the last step: the frames' outputs to ports are
        returned, in order, for the caller to transmit (netio writes them into its
        transmit rings with no call per frame); packet-ins and digests are delivered
        to their listeners as ``receive`` does, outside the lock. The switch runs the
        whole batch in one call (``Switch.inject_batch``), netio's path for every frame;
        the digests of the batch go to their listeners after it."""
        cpu = self.cpu_port
        with self.lock:
            sw = self.switch
            self.rx_frames += len(frames)
            if sw is None:
                self.dropped_no_pipeline += len(frames)
                return []
            outs = sw.inject_batch(port, frames, lambda _f, e: self._frame_failed(port, e))
            # digests accumulate in the switch: taken once for the whole batch
            digests = sw.digests() if self._digest else None
        if cpu is not None and any(p == cpu for p, _ in outs):
            to_ports = []
            for out_port, data in outs:
                if out_port == cpu:
                    for cb in list(self._packet_in):
                        self._safe(cb, data)
                else:
                    to_ports.append((out_port, data))
            outs = to_ports
        self.tx_frames += len(outs)
        if digests:
            self._deliver_digests(digests)
        return outs

    def _frame_failed(self, port: int, e: Exception) -> None:
        """One frame's pipeline run raised: count it and log it; the others go on."""
        self.errors += 1
        log.error("%s: frame from port %d dropped: pipeline failed", self.label,
                  port, exc_info=e)

    def poll(self) -> float | None:
        """Let rate-limited queues send what the clock allows now; returns the seconds
        until the next queued packet may leave (None: nothing queued). netio calls this
        between frames so a shaped queue drains on time even when no frame arrives."""
        with self.lock:
            sw = self.switch
            if sw is None or not sw.tm.queued:
                return None
            try:
                outputs = sw.run_until_idle()
            except Exception:
                self.errors += 1
                log.exception("%s: draining the queues failed", self.label)
                return None
            nxt = sw.tm.next_departure_us() if sw.tm.queued else None
            wait = None if nxt is None else max(0.0, (nxt - sw.now_us()) / 1e6)
        if outputs:
            self._deliver(outputs, None)
        return wait

    def packet_out(self, frame: bytes) -> None:
        """A frame from the controller: processed as if it arrived on the CPU port."""
        if self.cpu_port is None:
            self._log(logging.WARNING, "packet-out dropped: no CPU port (start with --cpu-port)")
            return
        self.receive(self.cpu_port, frame)

    def _deliver(self, outputs: list[tuple[int, bytes]], digests: list | None) -> None:
        cpu = self.cpu_port
        for port, data in outputs:
            if cpu is not None and port == cpu:
                for cb in list(self._packet_in):
                    self._safe(cb, data)
            else:
                self.tx_frames += 1
                try:
                    self.output_sink(port, data)
                except Exception:
                    self.errors += 1
                    log.exception("%s: output to port %d failed", self.label, port)
        if digests:
            self._deliver_digests(digests)

    def _deliver_digests(self, digests: list) -> None:
        grouped: dict[str, list[tuple[int, ...]]] = {}
        for item in digests:
            name, values = item[0], item[1]
            grouped.setdefault(name, []).append(tuple(values))
        for name, rows in grouped.items():
            for cb in list(self._digest):
                self._safe(cb, name, rows)

    def _safe(self, cb: Callable[..., None], *args: Any) -> None:
        try:
            cb(*args)
        except Exception:  # a listener must not break forwarding
            log.exception("%s: listener %r failed", self.label, cb)

    # -- listeners
    def add_packet_in_listener(self, cb: PacketInListener) -> None:
        self._packet_in.append(cb)

    def remove_packet_in_listener(self, cb: PacketInListener) -> None:
        if cb in self._packet_in:
            self._packet_in.remove(cb)

    def add_digest_listener(self, cb: DigestListener) -> None:
        self._digest.append(cb)

    def remove_digest_listener(self, cb: DigestListener) -> None:
        if cb in self._digest:
            self._digest.remove(cb)
