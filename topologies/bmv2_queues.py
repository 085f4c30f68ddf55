"""Egress queue depth and rate of a running BMv2 switch, and a register cell read and
written (the queue-depth register), over its Thrift runtime API.

Why: ``simple_switch_grpc`` has no command-line option for either (only
``--priority-queues``, the number of queues per port); BMv2 sets them at run time
through the ``simple_switch`` service of its Thrift server. The calls are made with
thriftpy2 from the small IDL beside this module (``idl/bmv2_queues.thrift``). The
same settings are ``p4target run --queue-rate PORT=PPS --queue-depth PORT=N`` on the
embedded target; ``queue_options`` reads them from those options, so an experiment
sets a queue the same way on both targets. BMv2's P4Runtime server neither reads
nor writes registers (``UNIMPLEMENTED``), so ``read_register`` and ``write_register``
use one cell through the ``standard`` service instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from controller.errors import SwitchError

IDL = Path(__file__).with_name("idl") / "bmv2_queues.thrift"
SERVICE = "simple_switch"


@dataclass
class QueueSettings:
    rates: dict[int, float] = field(default_factory=dict)  # port -> packets/s
    depths: dict[int, int] = field(default_factory=dict)  # port -> packets

    def __bool__(self) -> bool:
        return bool(self.rates or self.depths)


def queue_options(args: Sequence[str], where: str) -> tuple[QueueSettings, list[str]]:
    """Split ``--queue-rate PORT=PPS`` / ``--queue-depth PORT=N`` out of ``args``
    (the embedded target's options): the settings and the other arguments."""
    out, rest = QueueSettings(), []
    it = iter(args)
    for a in it:
        if a not in ("--queue-rate", "--queue-depth"):
            rest.append(a)
            continue
        spec = next(it, "")
        port, _, value = spec.partition("=")
        try:
            if a == "--queue-rate":
                rate = float(value)
                if not rate > 0:
                    raise ValueError
                out.rates[int(port)] = rate
            else:
                depth = int(value)
                if depth < 0:
                    raise ValueError
                out.depths[int(port)] = depth
        except ValueError:
            raise SwitchError(f"{where}: {a} {spec!r}: give PORT=VALUE (a rate > 0 packets/s, a depth >= 0 "
                              "packets)") from None
    return out, rest


@lru_cache(maxsize=1)
def _service() -> ModuleType:
    import thriftpy2

    return thriftpy2.load(str(IDL), module_name="bmv2_queues_thrift")


def _client(service: str, thrift_port: int, where: str, host: str) -> object:
    from thriftpy2.protocol import TBinaryProtocolFactory, TMultiplexedProtocolFactory
    from thriftpy2.rpc import make_client
    from thriftpy2.transport import TBufferedTransportFactory

    svc = _service()
    try:
        return make_client(getattr(svc, "SimpleSwitch" if service == SERVICE else "Standard"), host, thrift_port,
                           proto_factory=TMultiplexedProtocolFactory(
                               TBinaryProtocolFactory(),  # type: ignore[no-untyped-call]  # thriftpy2's is unannotated
                               service),
                           trans_factory=TBufferedTransportFactory(), timeout=5000)
    except Exception as exc:  # thriftpy2 raises its own transport errors
        raise SwitchError(f"{where}: BMv2's Thrift server at {host}:{thrift_port} does not answer ({exc}); "
                          "is simple_switch_grpc running?") from None


def write_register(thrift_port: int, name: str, index: int, value: int, where: str, host: str = "127.0.0.1") -> None:
    """Set cell ``index`` of register ``name`` (its P4 name, ``FabricEgress.max_qdepth``) to ``value``."""
    client: Any = _client("standard", thrift_port, where, host)
    try:
        client.bm_register_write(0, name, index, value)
    except Exception as exc:  # InvalidRegisterOperation (its code) or a transport error
        raise SwitchError(f"{where}: BMv2 refused to write {name}[{index}] over Thrift: {exc!r}") from None
    finally:
        client.close()


def read_register(thrift_port: int, name: str, index: int, where: str, host: str = "127.0.0.1") -> int:
    """Cell ``index`` of register ``name`` (its P4 name, ``FabricEgress.max_qdepth``)."""
    client: Any = _client("standard", thrift_port, where, host)
    try:
        return int(client.bm_register_read(0, name, index))
    except Exception as exc:  # InvalidRegisterOperation (its code) or a transport error
        raise SwitchError(f"{where}: BMv2 refused to read {name}[{index}] over Thrift: {exc!r}") from None
    finally:
        client.close()


def apply_queues(thrift_port: int, settings: QueueSettings, where: str, host: str = "127.0.0.1") -> None:
    """Set ``settings`` on the BMv2 switch whose Thrift server is at ``host:thrift_port``."""
    client: Any = _client(SERVICE, thrift_port, where, host)
    try:
        for port, depth in sorted(settings.depths.items()):
            _checked(client.set_egress_queue_depth(port, depth), where, f"queue depth {depth} on port {port}")
        for port, rate in sorted(settings.rates.items()):
            _checked(client.set_egress_queue_rate(port, max(1, round(rate))), where,
                     f"queue rate {rate:g} packets/s on port {port}")
    except SwitchError:
        raise
    except Exception as exc:
        raise SwitchError(f"{where}: setting BMv2's egress queues over Thrift failed: {exc}") from None
    finally:
        client.close()


def _checked(rc: int, where: str, what: str) -> None:
    if rc != 0:
        raise SwitchError(f"{where}: BMv2 refused {what} (code {rc}); the port must be one of the switch's")


__all__ = ["IDL", "QueueSettings", "apply_queues", "queue_options", "read_register", "write_register"]
