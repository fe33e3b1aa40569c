"""The `dt` command line: a thin Typer layer over `dtcli.api`, with one error boundary (main).

app.py holds the Typer applications and shared options; each *_commands module registers its
commands on them when imported here.
"""

from __future__ import annotations

import importlib
import sys

from dtcli.cli.app import _state, app
from dtcli.errors import DtError

# each module registers its commands on `app` when imported, in the order `dt --help` lists them
for _commands in ("project_commands", "run_commands", "lifecycle_commands", "show_commands", "import_commands",
                  "docs_commands"):
    importlib.import_module(f"dtcli.cli.{_commands}")


def main() -> None:
    """Console entry point: the one place errors become messages and exit codes.

    Typer runs in standalone mode (usage errors exit 2, --help, typer.Exit); dt's own typed
    errors come out of it and are printed here as one line, without a traceback unless --debug.
    """
    from dtcli.ui.output import err_console
    from dtcli.ui.quiet import library_noise

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
        sys.exit(130)

