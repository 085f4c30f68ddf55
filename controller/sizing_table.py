"""``mrcctl plan``'s table: a sizing report (fabric/sizing.py) as one rich table.

Why apart from the sizer: the fabric model computes and prints nothing (no rich, no
typer); the command line draws its report, with the counting rule and the tier notes
the model gives as caption.
"""

from __future__ import annotations

from rich.table import Table

from fabric.sizing import COUNTING_RULE, SizingReport, rows


def table(report: SizingReport) -> Table:
    """The comparison as one rich table, the counting rule and the tier notes as caption."""
    out = Table(
        title=f"{report.gpus:,} GPUs, {report.nic_gbps}G NICs",
        caption_justify="left",
        caption="\n".join(
            [
                COUNTING_RULE.format(
                    nic=report.nic_gbps, port=report.multiplane.port_gbps, lanes=report.multiplane.lanes
                ),
                *report.notes(),
            ]
        ),
    )
    out.add_column("")
    out.add_column("multiplane", justify="right")
    out.add_column("single plane", justify="right")
    out.add_column("saved", justify="right")
    for row in rows(report):
        out.add_row(*row)
    return out
