"""The RoCE baseline's options of ``mrc-send`` and ``mrc-recv``, each command's as one
object (``RoceSend``, ``RoceRecv``).

Why one object: the baseline adds fifteen options to ``mrc-send`` and three to
``mrc-recv``; ``endpoints/cli.py`` declares MRC-lite's and forwards these whole to
``endpoints/roce_cli.py``. ``expand`` turns a command's ``roce`` parameter into the
object's typer options (shown under their own heading in ``--help``) and hands the
command the object built from them. Every field is None (False for ``--print-ev``)
when not given: the defaults are the state machines' own (``roce_config.py``,
``dcqcn.py``), filled in by ``roce_cli``.
"""

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from typing import Annotated, Any, Optional, TypeVar

import typer

from endpoints.dcqcn import DcqcnConfig
from endpoints.roce_config import DSCP_CNP, DSCP_DATA, RoceReceiverConfig, RoceSenderConfig

PANEL = "RoCEv2 baseline (--transport roce)"
_SEND = RoceSenderConfig()
_DCQCN = DcqcnConfig()
_RECV = RoceReceiverConfig()

# The RoCE options of mrc-send: field -> (option, default shown in --help and used when not given)
SEND_OPTIONS: dict[str, tuple[str, Any]] = {
    "cc": ("--cc", "dcqcn"),
    "retry_count": ("--retry-count", _SEND.retry_count),
    "ack_timeout": ("--ack-timeout", _SEND.ack_timeout),
    "message_size": ("--message-size", None),  # MESSAGE_PACKETS x --mtu
    "dscp": ("--dscp", DSCP_DATA),
    "line_rate": ("--line-rate", _DCQCN.line_rate / 1e6),
    "dcqcn_g": ("--dcqcn-g", _DCQCN.g),
    "dcqcn_k": ("--dcqcn-k", _DCQCN.alpha_timer),
    "dcqcn_t": ("--dcqcn-t", _DCQCN.increase_timer),
    "dcqcn_b": ("--dcqcn-b", _DCQCN.byte_counter),
    "dcqcn_f": ("--dcqcn-f", _DCQCN.fast_recovery),
    "dcqcn_rai": ("--dcqcn-rai", _DCQCN.rate_ai / 1e6),
    "dcqcn_rhai": ("--dcqcn-rhai", _DCQCN.rate_hai / 1e6),
    "dcqcn_min_rate": ("--dcqcn-min-rate", _DCQCN.min_rate / 1e6),
    "path_ev": ("--path-ev", None),
    "print_ev": ("--print-ev", False),
}
RECV_OPTIONS: dict[str, tuple[str, Any]] = {
    "dscp": ("--dscp", DSCP_DATA),
    "cnp_interval": ("--cnp-interval", _RECV.cnp_interval),
    "cnp_dscp": ("--cnp-dscp", DSCP_CNP),
}

_SEND_HELP = {
    "cc": "rate control, dcqcn | none (send at --line-rate)",
    "retry_count": "retries without progress before the QP goes to the error state, 0..7",
    "ack_timeout": "local ACK timeout, seconds (4.096 us x 2**16)",
    "dscp": "DSCP of the data packets",
    "line_rate": "line rate, Mb/s (DCQCN starts there; --cc none paces at it)",
    "dcqcn_g": "DCQCN alpha gain g",
    "dcqcn_k": "DCQCN alpha timer K, seconds",
    "dcqcn_t": "DCQCN rate-increase timer T, seconds",
    "dcqcn_b": "DCQCN byte counter B, bytes",
    "dcqcn_f": "DCQCN fast-recovery stages F",
    "dcqcn_rai": "DCQCN additive increase R_AI, Mb/s",
    "dcqcn_rhai": "DCQCN hyper increase R_HAI, Mb/s",
    "dcqcn_min_rate": "the rate's floor, Mb/s",
}
_RECV_HELP = {
    "dscp": "DSCP of the ACKs and NAKs",
    "cnp_interval": "at most one CNP per QP per this many seconds",
    "cnp_dscp": "DSCP of the CNPs",
}


def _help(table: Mapping[str, tuple[str, Any]], text: Mapping[str, str], key: str) -> str:
    default = table[key][1]
    return f"roce: {text[key]} (default {default:g})" if isinstance(default, (int, float)) else \
        f"roce: {text[key]} (default {default})"


def _send(key: str, *names: str, help_text: str = "") -> Any:
    """The typer option of mrc-send's field ``key``, under the baseline's heading."""
    return typer.Option(*names, help=help_text or _help(SEND_OPTIONS, _SEND_HELP, key), rich_help_panel=PANEL)


def _recv(key: str) -> Any:
    return typer.Option(help=_help(RECV_OPTIONS, _RECV_HELP, key), rich_help_panel=PANEL)


@dataclass(frozen=True)
class RoceSend:
    """``mrc-send``'s RoCE options, None where not given."""

    cc: Annotated[Optional[str], _send("cc")] = None
    retry_count: Annotated[Optional[int], _send("retry_count")] = None
    ack_timeout: Annotated[Optional[float], _send("ack_timeout")] = None
    message_size: Annotated[Optional[int], _send("message_size", help_text=(
        "roce: bytes per RDMA WRITE message, a multiple of --mtu (default 1024 x --mtu)"))] = None
    dscp: Annotated[Optional[int], _send("dscp")] = None
    line_rate: Annotated[Optional[float], _send("line_rate")] = None
    dcqcn_g: Annotated[Optional[float], _send("dcqcn_g")] = None
    dcqcn_k: Annotated[Optional[float], _send("dcqcn_k")] = None
    dcqcn_t: Annotated[Optional[float], _send("dcqcn_t")] = None
    dcqcn_b: Annotated[Optional[int], _send("dcqcn_b")] = None
    dcqcn_f: Annotated[Optional[int], _send("dcqcn_f")] = None
    dcqcn_rai: Annotated[Optional[float], _send("dcqcn_rai")] = None
    dcqcn_rhai: Annotated[Optional[float], _send("dcqcn_rhai")] = None
    dcqcn_min_rate: Annotated[Optional[float], _send("dcqcn_min_rate")] = None
    path_ev: Annotated[Optional[int], _send("path_ev", help_text=(
        "roce: choose the source port (from 49152 up) whose hash puts the QP on this EV"))] = None
    print_ev: Annotated[bool, _send("print_ev", "--print-ev", help_text=(
        "roce: print the QP's 4-tuple and the EV it hashes onto, send nothing"))] = False

    def given(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class RoceRecv:
    """``mrc-recv``'s RoCE options, None where not given."""

    dscp: Annotated[Optional[int], _recv("dscp")] = None
    cnp_interval: Annotated[Optional[float], _recv("cnp_interval")] = None
    cnp_dscp: Annotated[Optional[int], _recv("cnp_dscp")] = None

    def given(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


NONE_SEND = RoceSend()  # none given (a command's default: the parameter ``expand`` replaces)
NONE_RECV = RoceRecv()


def misplaced(transport: str, given: Mapping[str, Any], table: Mapping[str, tuple[str, Any]]) -> str | None:
    """An option of the RoCE baseline given with MRC-lite: its name, else None."""
    if transport == "roce":
        return None
    for key, value in given.items():
        if value is not None and value is not False:
            return table[key][0]
    return None


R = TypeVar("R")


def expand(param: str, cls: type[Any]) -> Callable[[Callable[..., R]], Callable[..., R]]:
    """Decorate a typer command whose parameter ``param`` is a ``cls`` (a dataclass of
    ``Annotated`` typer options): the command shows ``cls``'s fields as its options in
    that place, and is called with ``param`` the object they make."""
    own = [inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type)
           for f in fields(cls)]

    def wrap(func: Callable[..., R]) -> Callable[..., R]:
        sig = inspect.signature(func, eval_str=True)
        params = []
        for p in sig.parameters.values():
            if p.name == param:
                params += own
            else:
                params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY))

        @functools.wraps(func)
        def command(**kwargs: Any) -> R:
            obj = cls(**{p.name: kwargs.pop(p.name) for p in own})
            return func(**kwargs, **{param: obj})

        command.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params} | {"return": sig.return_annotation}
        return command

    return wrap
