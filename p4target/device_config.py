"""What goes in ``ForwardingPipelineConfig.p4_device_config`` for each target.

A P4Runtime pipeline push carries the P4Info and an opaque, target-specific device
config. BMv2 (``simple_switch_grpc``) wants the JSON that ``p4c-bm2-ss`` writes. The
embedded target compiles P4 itself, so its device config is the P4 source: a *source
bundle*, UTF-8 JSON of this form::

    {
      "format": "p4target-source-bundle/1",
      "main": "fabric.p4",                      # path of the main file inside "files"
      "files": {"fabric.p4": "...", "include/headers.p4": "..."},
      "defines": {"NAME": "VALUE"}              # optional preprocessor defines
    }

``files`` holds the main file and every project file it includes with
``#include "..."`` (recursively), under paths relative to their common directory;
``<core.p4>`` and ``<v1model.p4>`` come with the compiler and are not bundled. The
loader writes the files into a private temporary directory and compiles the main
file there with ``p4target.compiler``, so error messages name the bundled paths.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from p4target.errors import P4Error

log = logging.getLogger(__name__)

BUNDLE_FORMAT = "p4target-source-bundle/1"
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
_MAX_BUNDLE_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class SourceBundle:
    """The P4 sources of one program, as carried in a device config."""

    main: str
    files: dict[str, str]
    defines: dict[str, str] = field(default_factory=dict)

    def to_bytes(self) -> bytes:
        doc: dict[str, Any] = {"format": BUNDLE_FORMAT, "main": self.main, "files": self.files}
        if self.defines:
            doc["defines"] = self.defines
        return json.dumps(doc, sort_keys=True, indent=1).encode()

    def digest(self) -> str:
        return hashlib.sha256(self.to_bytes()).hexdigest()


def _included_files(path: Path, include_dirs: tuple[Path, ...], seen: dict[Path, str]) -> None:
    path = path.resolve()
    if path in seen:
        return
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise P4Error(f"cannot read P4 source {path}: {exc}; check the path") from None
    seen[path] = text
    for m in _INCLUDE_RE.finditer(text):
        name = m.group(1)
        for base in (path.parent, *include_dirs):
            candidate = base / name
            if candidate.is_file():
                _included_files(candidate, include_dirs, seen)
                break
        # An include found nowhere is left for the compiler to report with its location.


def bundle_from_file(
    path: str | Path, include_dirs: tuple[str | Path, ...] = (), defines: dict[str, str] | None = None
) -> SourceBundle:
    """Bundle ``path`` and every project file it includes (``#include "..."``)."""
    main = Path(path)
    if not main.is_file():
        raise P4Error(f"{main}: no such P4 file; give the path of the program's main .p4 file")
    seen: dict[Path, str] = {}
    _included_files(main, tuple(Path(d) for d in include_dirs), seen)
    root = Path(os.path.commonpath([str(p.parent) for p in seen]))
    files = {p.relative_to(root).as_posix(): text for p, text in seen.items()}
    return SourceBundle(main=main.resolve().relative_to(root).as_posix(), files=files, defines=dict(defines or {}))


def device_config_from_file(path: str | Path, include_dirs: tuple[str | Path, ...] = ()) -> bytes:
    """The embedded target's ``p4_device_config`` bytes for the program at ``path``."""
    return bundle_from_file(path, include_dirs).to_bytes()


def bmv2_device_config(bmv2_json: str | bytes | Path) -> bytes:
    """The ``p4_device_config`` for real BMv2: the JSON ``p4c-bm2-ss`` wrote, checked.

    Accepts the JSON text/bytes or the path of the .json file.
    """
    if isinstance(bmv2_json, Path):
        try:
            data = bmv2_json.read_bytes()
        except OSError as exc:
            raise P4Error(f"cannot read BMv2 JSON {bmv2_json}: {exc}") from None
    elif isinstance(bmv2_json, str):
        data = bmv2_json.encode()
    else:
        data = bmv2_json
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise P4Error(f"BMv2 device config is not JSON ({exc}); pass the file p4c-bm2-ss --to wrote") from None
    if not isinstance(doc, dict) or "pipelines" not in doc:
        raise P4Error("BMv2 device config has no 'pipelines'; pass the file p4c-bm2-ss --to wrote")
    return data


def parse_bundle(data: bytes) -> SourceBundle:
    """Decode and check a source bundle; P4Error says what is wrong and what to send."""
    if len(data) > _MAX_BUNDLE_BYTES:
        raise P4Error(f"device config of {len(data)} bytes is larger than {_MAX_BUNDLE_BYTES}")
    if not data:
        raise P4Error(
            "empty p4_device_config; the embedded target needs a P4 source bundle "
            "(p4target.device_config.device_config_from_file)"
        )
    try:
        doc = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise P4Error(
            "p4_device_config is not a P4 source bundle (not JSON); build it with "
            "p4target.device_config.device_config_from_file"
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != BUNDLE_FORMAT:
        if isinstance(doc, dict) and "pipelines" in doc:
            raise P4Error(
                "p4_device_config is a BMv2 JSON; the embedded target compiles P4 source: "
                "send device_config_from_file(<main .p4>) instead"
            )
        raise P4Error(f"p4_device_config has no 'format': '{BUNDLE_FORMAT}'; build it with device_config_from_file")
    main, files, defines = doc.get("main"), doc.get("files"), doc.get("defines", {})
    if not isinstance(files, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in files.items()):
        raise P4Error("source bundle 'files' must map relative paths to file text")
    if not isinstance(main, str) or main not in files:
        raise P4Error("source bundle 'main' must name one of its 'files'")
    if not isinstance(defines, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in defines.items()):
        raise P4Error("source bundle 'defines' must map names to strings")
    for name in files:
        p = PurePosixPath(name)
        if p.is_absolute() or ".." in p.parts or not p.parts or "\\" in name:
            raise P4Error(f"source bundle path '{name}' must be relative and stay inside the bundle")
    return SourceBundle(main=main, files=dict(files), defines=dict(defines))


_cache_lock = threading.Lock()
_cache: dict[str, Any] = {}


def load_device_config(data: bytes) -> Any:
    """Compile a source bundle; returns ``p4target.compiler.CompiledProgram``.

    Results are cached by the bundle's content, so pushing the same pipeline twice
    (reconnecting controllers do) costs one compile.
    """
    bundle = parse_bundle(data)
    key = hashlib.sha256(data).hexdigest()
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    from p4target import compiler  # late: the compiler is heavy and optional for P4Info users

    with tempfile.TemporaryDirectory(prefix="p4t-bundle-") as tmp:
        root = Path(tmp)
        for name, text in bundle.files.items():
            dest = root / name
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_text(text, encoding="utf-8")
        try:
            compiled = compiler.compile_file(root / bundle.main, defines=bundle.defines)
        except P4Error as exc:
            raise P4Error(str(exc).replace(tmp + os.sep, "")) from None
    with _cache_lock:
        if len(_cache) > 16:
            _cache.clear()
        _cache[key] = compiled
    return compiled
