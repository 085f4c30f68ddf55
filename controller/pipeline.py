"""What SetForwardingPipelineConfig pushes for a program: the P4Info and device config.

Why apart: the codec (controller/codec.py) needs a program's P4Info, the session
(controller/p4rt.py) pushes the pipeline to a switch, and topologies/p4switch.py
starts BMv2 on the same compilation; none of them needs the others. Compiling is
the embedded target's compiler, or p4c-bm2-ss for BMv2.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from finsy.proto.p4.config.v1 import p4info_pb2

from controller.errors import SwitchError

REPO = Path(__file__).resolve().parents[1]
P4SRC = REPO / "p4src"


@dataclass(frozen=True)
class Pipeline:
    """What SetForwardingPipelineConfig pushes for one program on one kind of target."""

    program: str
    p4info: p4info_pb2.P4Info
    device_config: bytes
    cookie: int


@lru_cache(maxsize=8)
def pipeline(program: str, target: str = "embedded") -> Pipeline:
    """The pipeline of ``p4src/<program>.p4``: the embedded target's source bundle, or
    p4c-bm2-ss's JSON and P4Info for BMv2 (when ``p4c-bm2-ss`` is on the PATH)."""
    path = P4SRC / f"{program}.p4"
    if target == "bmv2":
        return _bmv2_pipeline(program, path)
    from p4target import api

    info = api.p4info_of(path)
    config = api.device_config(path)
    return Pipeline(program, info, config, _cookie(config))


def _bmv2_pipeline(program: str, path: Path) -> Pipeline:
    from google.protobuf import text_format

    from p4target.api import bmv2_device_config

    p4c = shutil.which("p4c-bm2-ss")
    if p4c is None:
        raise SwitchError(f"{program}: the switch runs BMv2 but p4c-bm2-ss is not on the PATH; install p4c or "
                          "run the embedded target (--target embedded)")
    out = REPO / "build" / "bmv2"
    out.mkdir(parents=True, exist_ok=True)
    json_path, info_path = out / f"{program}.json", out / f"{program}.p4info.txtpb"
    r = subprocess.run([p4c, "--arch", "v1model", "-o", str(json_path), "--p4runtime-files", str(info_path),
                        "-I", str(P4SRC / "include"), str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        raise SwitchError(f"{program}: p4c-bm2-ss failed: {r.stderr.strip().splitlines()[-1:]}")
    info = text_format.Parse(info_path.read_text(), p4info_pb2.P4Info())
    config = bmv2_device_config(json_path)
    return Pipeline(program, info, config, _cookie(config))


def _cookie(config: bytes) -> int:
    """A pipeline's cookie: 63 bits of the device config's SHA-256."""
    return int.from_bytes(hashlib.sha256(config).digest()[:8], "big") >> 1
