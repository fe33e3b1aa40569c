"""Writing the site: index.html (lineage graph and overview), a page per DT and per source, the
assets it ships and project.json. Every file is replaced atomically, so `dt docs serve` never
serves half a page, and pages of nodes that are gone are removed."""

from __future__ import annotations

import json
import os
from pathlib import Path

from markupsafe import Markup

from dtcli.artifacts.manifest import Manifest
from dtcli.artifacts.typed_json import dumps
from dtcli.redact import scrub
from dtcli.ui.site import highlight
from dtcli.ui.site.text import page_name, parse_time
from dtcli.ui.site.views import graph_data, index_view, source_view, table_view

HERE = Path(__file__).parent
ASSETS = HERE / "assets"
# shipped as they are: the page scripts and styles, and the layout library with its licences
ASSET_FILES = ("site.js", "site.css", "vendor/dagre/dagre.min.js", "vendor/dagre/LICENSE",
               "vendor/dagre/LICENSE.graphlib", "vendor/dagre/VERSION")


def write_site(doc: Manifest, out: Path) -> int:
    """Write every file of the site under `out`; returns the number of HTML pages."""
    env = _environment()
    now = parse_time(doc.metadata.generated_at)
    pages = {n: f"tables/{page_name(n)}" for n in doc.dynamic_tables}
    pages.update({n: f"sources/{page_name(n)}" for n in doc.sources})
    written: set[Path] = set()

    def write(relative: str, text: str | bytes) -> None:
        path = out / relative
        _replace(path, text if isinstance(text, bytes) else scrub(text))
        written.add(path)

    for asset in ASSET_FILES:
        write(f"assets/{asset}", (ASSETS / asset).read_bytes())
    write("assets/sql.css", highlight.style_sheet())
    common = {"meta": doc.metadata, "pages": pages}
    write("index.html", env.get_template("index.html").render(
        **common, root="", graph_json=_script_json(graph_data(doc, pages)), **index_view(doc)))
    table_page = env.get_template("table.html")
    for name, table in doc.dynamic_tables.items():
        write(pages[name], table_page.render(**common, root="../", **table_view(doc, table, now, pages)))
    source_page = env.get_template("source.html")
    for name, source in doc.sources.items():
        write(pages[name], source_page.render(**common, root="../", **source_view(doc, source)))
    # one line: json's C encoder (an indent falls back to the Python one, seconds on a big site)
    write("project.json", dumps(doc, separators=(",", ":")) + "\n")
    _remove_stale(out, written)
    return 1 + len(doc.dynamic_tables) + len(doc.sources)


def _environment():
    from jinja2 import Environment, FileSystemLoader

    # autoescape everywhere: names, SQL, comments and messages are the user's text
    return Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=True,
                       trim_blocks=True, lstrip_blocks=True)


def _script_json(data: object) -> Markup:
    """JSON to embed in <script type="application/json">: no '<', '>' or '&' can end the element
    or start markup, whatever the names hold."""
    text = json.dumps(data, separators=(",", ":"), default=str)
    for raw, escaped in (("&", "\\u0026"), ("<", "\\u003c"), (">", "\\u003e"),
                         ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(raw, escaped)
    return Markup(text)


def _replace(path: Path, content: str | bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    if isinstance(content, bytes):
        temporary.write_bytes(content)
    else:
        temporary.write_text(content, encoding="utf-8")
    os.replace(temporary, path)


def _remove_stale(out: Path, written: set[Path]) -> None:
    for folder in ("tables", "sources"):
        for path in (out / folder).glob("*.html"):
            if path not in written:
                path.unlink(missing_ok=True)
