"""`dt docs generate` and `dt docs serve`: the project as a static site in target/docs/ (no Spark)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from dtcli.cli.app import ProjectDir, Target, app

docs_app = typer.Typer(help="The project as a browsable site: lineage graph, a page per dynamic table, "
                            "refresh timelines (no Spark).\n\nExample: dt docs generate && dt docs serve",
                       no_args_is_help=True)
app.add_typer(docs_app, name="docs")

Select = Annotated[Optional[list[str]], typer.Option("--select", "-s", help="Only these tables, as in dt run: name, +name (with upstream), name+ (with downstream), tag:x, path:tables/staging; repeatable.")]


@docs_app.command("generate")
def generate(project_dir: ProjectDir = Path("."), target: Target = None, select: Select = None,
             openlineage: Annotated[bool, typer.Option("--openlineage", help="Also write each dynamic table as an OpenLineage job event (its SQL, inputs, output and column lineage; no run) to target/docs/openlineage.jsonl, and send them where `openlineage:` (or OPENLINEAGE_URL / OPENLINEAGE_CONFIG) says.")] = False) -> None:
    """Write target/docs/: index.html (lineage graph and overview), a page per dynamic table and
    source, and project.json (the same facts for other tools). The site opens from the file
    system and needs no network.

    Example: dt docs generate --select +customer_rank
    """
    from dtcli import api
    from dtcli.api.docs import generate as write_docs
    from dtcli.api.watch import clock_from_env

    checked = api.check(project_dir, target, check_sources=True, now=clock_from_env().now(), with_stats=True)
    done = write_docs(checked, select, openlineage=openlineage)
    typer.echo(f"wrote {done['pages']} pages ({done['dynamic_tables']} dynamic tables, {done['sources']} "
               f"sources) to {done['path']} in {done['seconds']:.2f}s; open {done['index']}")
    lineage = done.get("openlineage")
    if lineage:
        sent = f"; sent to {lineage['sent_to']}" if lineage["sent_to"] else ""
        typer.echo(f"wrote {lineage['events']} OpenLineage job events to {lineage['path']}{sent}")
        if lineage["warning"]:
            typer.echo(f"warning: {lineage['warning']}", err=True)


@docs_app.command("serve")
def serve(project_dir: ProjectDir = Path("."), target: Target = None, select: Select = None,
          port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free one).")] = 8080) -> None:
    """Serve target/docs/ on 127.0.0.1 (this machine only), generating it first and again
    whenever a page is asked for after the project or its warehouse changed. Ctrl-C stops it.

    Example: dt docs serve --port 8081
    """
    from dtcli.api.docs_serve import DocsServer

    server = DocsServer(project_dir, target, select, port)
    typer.echo(f"serving {server.out} at {server.url} (Ctrl-C to stop)")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        typer.echo("stopped")
    finally:
        server.close()
