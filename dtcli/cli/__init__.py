"""The `dt` command line: a thin Typer layer over `dtcli.api`, with one error boundary (main).

app.py holds the Typer applications and shared options; each *_commands module registers its
commands on them when imported here.
"""

from __future__ import annotations

import importlib
import signal
import sys

from dtcli.cli.app import _state, app
from dtcli.errors import DtError

# each module registers its commands on `app` when imported, in the order `dt --help` lists them
for _commands in ("project_commands", "run_commands", "test_commands", "lifecycle_commands", "show_commands", "import_commands",
                  "docs_commands"):
    importlib.import_module(f"dtcli.cli.{_commands}")


def main() -> None:
    """Console entry point: the one place errors become messages and exit codes.

    Typer runs in standalone mode (usage errors exit 2, --help, typer.Exit); dt's own typed
    errors come out of it and are printed here as one line, without a traceback unless --debug.
    """
    from dtcli.ui.output import err_console
    from dtcli.ui.quiet import library_noise

    signal.signal(signal.SIGTERM, _terminated)
    try:
        with library_noise("--debug" in sys.argv[1:]):
            app()
    except DtError as err:
        if _state["debug"]:
            raise
        from dtcli.redact import scrub

        err_console.print(scrub(f"error: {err}"), highlight=False, markup=False, soft_wrap=True)
        sys.exit(err.exit_code)
    except KeyboardInterrupt:
        err_console.print("interrupted")
        sys.exit(interrupted_exit_code())


_stopped_by = {"signal": signal.SIGINT}


def _terminated(signum, frame) -> None:
    """SIGTERM (a CI job's timeout, a service manager) stops a run as Ctrl-C does: between
    refreshes, with its results written."""
    _stopped_by["signal"] = signum
    raise KeyboardInterrupt


def interrupted_exit_code() -> int:
    """128 + the signal that stopped dt: 130 for Ctrl-C, 143 for SIGTERM."""
    return 128 + int(_stopped_by["signal"])

