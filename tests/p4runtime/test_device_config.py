"""Device config bundles: what is bundled, what is refused, BMv2 JSON passthrough."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from p4target.device_config import (
    BUNDLE_FORMAT,
    bmv2_device_config,
    bundle_from_file,
    device_config_from_file,
    parse_bundle,
)
from p4target.errors import P4Error


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "include").mkdir()
    (tmp_path / "prog").mkdir()
    (tmp_path / "include" / "headers.p4").write_text('#include "types.p4"\nheader h_t { bit<8> x; }\n')
    (tmp_path / "include" / "types.p4").write_text("typedef bit<9> port_t;\n")
    main = tmp_path / "prog" / "main.p4"
    main.write_text('#include <core.p4>\n#include <v1model.p4>\n#include "../include/headers.p4"\n// main\n')
    return main


def test_bundle_holds_main_and_every_project_include(tmp_path: Path) -> None:
    bundle = bundle_from_file(_tree(tmp_path))
    assert bundle.main == "prog/main.p4"
    assert set(bundle.files) == {"prog/main.p4", "include/headers.p4", "include/types.p4"}
    doc = json.loads(bundle.to_bytes())
    assert doc["format"] == BUNDLE_FORMAT and doc["main"] == "prog/main.p4"
    assert parse_bundle(bundle.to_bytes()) == bundle


def test_include_dirs_are_searched(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "x.p4").write_text("const bit<8> X = 1;\n")
    (tmp_path / "src").mkdir()
    main = tmp_path / "src" / "m.p4"
    main.write_text('#include "x.p4"\n')
    data = device_config_from_file(main, include_dirs=(tmp_path / "lib",))
    assert set(json.loads(data)["files"]) == {"src/m.p4", "lib/x.p4"}


@pytest.mark.parametrize(
    "data, message",
    [
        (b"", "empty p4_device_config"),
        (b"\x00\x01garbage", "not a P4 source bundle"),
        (json.dumps({"pipelines": []}).encode(), "is a BMv2 JSON"),
        (json.dumps({"format": "other"}).encode(), "has no 'format'"),
        (json.dumps({"format": BUNDLE_FORMAT, "main": "a.p4", "files": {"b.p4": ""}}).encode(), "'main' must name"),
        (json.dumps({"format": BUNDLE_FORMAT, "main": "../a.p4", "files": {"../a.p4": ""}}).encode(), "stay inside"),
        (json.dumps({"format": BUNDLE_FORMAT, "main": "/a.p4", "files": {"/a.p4": ""}}).encode(), "stay inside"),
        (json.dumps({"format": BUNDLE_FORMAT, "main": "a.p4", "files": {"a.p4": 3}}).encode(), "'files' must map"),
    ],
)
def test_bad_bundles_are_refused_with_the_fix(data: bytes, message: str) -> None:
    with pytest.raises(P4Error, match=message):
        parse_bundle(data)


def test_missing_main_file(tmp_path: Path) -> None:
    with pytest.raises(P4Error, match="no such P4 file"):
        bundle_from_file(tmp_path / "nope.p4")


def test_bmv2_json_passthrough(tmp_path: Path) -> None:
    doc = {"header_types": [], "pipelines": [{"name": "ingress"}]}
    path = tmp_path / "x.json"
    path.write_text(json.dumps(doc))
    assert json.loads(bmv2_device_config(path)) == doc
    assert bmv2_device_config(json.dumps(doc)) == json.dumps(doc).encode()
    with pytest.raises(P4Error, match="no 'pipelines'"):
        bmv2_device_config("{}")
    with pytest.raises(P4Error, match="not JSON"):
        bmv2_device_config(b"\xff")
