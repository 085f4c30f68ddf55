"""The project's own programs (p4src/*.p4) get a P4Info and go through the server."""

from __future__ import annotations

from pathlib import Path

import pytest

from p4target.device_config import device_config_from_file, load_device_config
from p4target.p4info import build_p4info, parse_p4info_text, p4info_text
from tests.p4runtime.p4rt_client import RawClient

P4SRC = Path(__file__).resolve().parents[2] / "p4src"
PROGRAMS = sorted(P4SRC.glob("*.p4"))


@pytest.mark.parametrize("program", PROGRAMS, ids=[p.name for p in PROGRAMS])
def test_program_p4info_and_pipeline_push(program: Path, rig) -> None:
    config = device_config_from_file(program)
    info = build_p4info(load_device_config(config).model)
    assert info.tables, f"{program.name} has tables"
    objs = [*info.tables, *info.actions, *info.action_profiles, *info.counters, *info.direct_counters,
            *info.meters, *info.direct_meters, *info.registers, *info.digests, *info.controller_packet_metadata]
    ids = [o.preamble.id for o in objs]
    assert len(ids) == len(set(ids)), "P4Runtime ids are unique"
    aliases = [o.preamble.alias for o in objs]
    assert len(aliases) == len(set(aliases)), "aliases are unique"
    assert parse_p4info_text(p4info_text(load_device_config(config).model)) == info
    c = RawClient(rig.server.bound_port, device_id=1)
    try:
        c.arbitrate(1)
        c.set_pipeline(info, config)
        assert c.get_pipeline("P4INFO_AND_COOKIE").p4info == info
    finally:
        c.close()
