"""``mrcctl plan``'s table (controller/sizing_table.py): the sizer's rows, title and
caption as rich draws them, for the fabric worked out by hand in
tests/fabric/test_sizing.py (131,072 GPUs, 800G NICs, 8 planes of 100G, radix 512)."""

from __future__ import annotations

import io

from rich.console import Console

from controller.sizing_table import table
from fabric.sizing import size


def test_the_table_holds_the_rows_the_title_and_the_caption() -> None:
    report = size(131_072, nic_gbps=800, planes=8, port_gbps=100, radix=512)
    out = io.StringIO()
    Console(file=out, width=200, color_system=None).print(table(report))
    text = " ".join(out.getvalue().split())  # the caption wraps at the table's width
    assert "131,072 GPUs, 800G NICs" in text
    assert "multiplane" in text and "single plane" in text and "saved" in text
    # 8 * (512 + 256) switches against 4,096 * 3 + 2,048 (the single plane's 4 tiers): 57.1% fewer
    assert "switches │ 6,144 │ 14,336 │ 57.1%" in text
    assert "transceivers (800G) │ 262,144 │ 786,432 │ 66.7%" in text
    assert "one per switch-to-switch link end, a module of 800G; a 100G multiplane port is one of its 8 lanes" in text
    assert "it needs 4 tiers" in text
