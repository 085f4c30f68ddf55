"""Run a typer command line with the project's error convention.

Why: typer frames a usage mistake in a panel, wrapped at the terminal's width; the
project's commands say it in one ``error:`` line naming the option (exit status 2),
as their other errors are, so a script or a test can read it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence

import typer


def new_app(help: str | None = None, *, no_args_is_help: bool = False) -> typer.Typer:
    """A command line as the project's commands have it: ``-h``/``--help``, no shell
    completion, no rich traceback (``run_command`` says errors in one line)."""
    return typer.Typer(add_completion=False, pretty_exceptions_enable=False, help=help,
                       no_args_is_help=no_args_is_help, context_settings={"help_option_names": ["-h", "--help"]})


class CommandError(Exception):
    """A run that failed for a reason outside the command line (a peer that does not
    answer, an address not on this host): ``run_command`` says it in one ``error:``
    line (exit status 1)."""


def print_report(report: Mapping[str, object]) -> int:
    """Print ``report`` as one JSON line (what a caller in another namespace reads);
    the exit status: 1 when it says ``ok: false``, else 0."""
    print(json.dumps(report), flush=True)
    return 0 if report.get("ok", True) else 1


def run_command(app: typer.Typer, argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Run ``app`` on ``argv`` (default: the process's); the exit status it asks for.

    ``--help`` prints the help (0); a usage mistake is ``error: <what>`` and a pointer
    to ``--help`` on stderr (2); a ``CommandError`` is ``error: <what>`` (1); Ctrl-C is
    130."""
    command = typer.main.get_command(app)
    try:
        result = command.main(args=list(sys.argv[1:] if argv is None else argv), prog_name=prog,
                              standalone_mode=False)
    except typer.TyperException as exc:  # a usage mistake (exit status 2) or another error of typer's
        ctx = getattr(exc, "ctx", None)
        where = ctx.command_path if ctx is not None else (prog or "the command")
        print(f"error: {exc.format_message()} (see {where} --help)", file=sys.stderr)
        return exc.exit_code
    except CommandError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        print("interrupted", file=sys.stderr)
        return 130
    return result if isinstance(result, int) else 0
