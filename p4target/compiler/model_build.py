"""The program's model (``ProgramModel``: what the runtime and the control plane
see) from what the program compiler recorded while it compiled the program."""

from __future__ import annotations

from p4target import model as M
from p4target.compiler.context import CompilerContext
from p4target.compiler.entities import anno_strs
from p4target.compiler.types import StructT
from p4target.frontend.bmv2_warnings import bmv2_warnings
from p4target.frontend.control_plane import p4info_action_names
from p4target.frontend.source import Loc


def program_model(ctx: CompilerContext) -> M.ProgramModel:
    """The model of the program ``ctx`` compiled (its tables, actions, externs...)."""
    return M.ProgramModel(
        source=str(ctx.source),
        arch="v1model",
        tables=tuple(ctx.tables),
        actions=tuple(model_action(ctx, n) for n in p4info_action_names(ctx.program, ctx.actions, ctx.used_actions)),
        externs=tuple(finish_externs(ctx)),
        controller_headers=tuple(controller_headers(ctx)),
        digests=tuple(ctx.digests.values()),
        value_sets=tuple(ctx.value_sets),
        warnings=tuple(ctx.warnings) + bmv2_warnings(ctx.program),
    )


def model_action(ctx: CompilerContext, name: str) -> M.Action:
    info = ctx.actions[name]
    params = []
    for p in info.decl.params:
        if p.direction:
            continue
        pt = ctx.resolve_type(p.type)
        params.append(M.Field(p.name, ctx.wire_width(pt, p.loc), anno_strs(p.annotations)))
    return M.Action(name, tuple(params), anno_strs(info.decl.annotations))


def finish_externs(ctx: CompilerContext) -> list[M.Extern]:
    users: dict[str, list[str]] = {}
    for t in ctx.tables:
        for n in (t.implementation, t.direct_counter, t.direct_meter):
            if n:
                users.setdefault(n, []).append(t.name)
    out = []
    for info in ctx.externs:
        ext = info.extern
        assert ext is not None
        if ext.name in users:
            ext = M.Extern(**{**ext.__dict__, "tables": tuple(users[ext.name])})
        out.append(ext)
    return out


def controller_headers(ctx: CompilerContext) -> list[M.ControllerHeader]:
    out = []
    for t in ctx.struct_types:
        ch = t.annotations.get("controller_header")
        if t.kind == "header" and ch:
            out.append(M.ControllerHeader(str(ch[0]), t.name, tuple(metadata_fields(ctx, t, ""))))
    return out


def metadata_fields(ctx: CompilerContext, t: StructT, prefix: str) -> list[M.Field]:
    """A controller header's fields in wire order; a struct-typed field's own fields
    are named ``field.inner``, as p4c names them in the P4Info."""
    out: list[M.Field] = []
    for n, ft in t.fields:
        if isinstance(ft, StructT):
            out += metadata_fields(ctx, ft, f"{prefix}{n}.")
            continue
        annos = {k: " ".join(map(str, v)) for k, v in t.field_annotations.get(n, {}).items()}
        out.append(M.Field(prefix + n, ctx.wire_width(ft, Loc(str(ctx.source), 0, 0)), annos))
    return out
