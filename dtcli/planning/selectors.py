"""dbt-style node selection for `dt run --select`.

Supported forms, as dbt users write them: `name`, `+name` (with everything upstream),
`name+` (with everything downstream), `+name+`, `tag:x` (also with `+`), `path:tables/staging`
(every table in that folder, or one file), and `*` globs in names.
Several selectors (repeated `--select`, or space-separated in one value) are a union; a
comma joins selectors into an intersection (`tag:daily,+customer_rank`).
"""

from __future__ import annotations

import fnmatch

from dtcli.errors import UsageError, suggest
from dtcli.model import Project
from dtcli.planning.graph import Graph


def select(project: Project, graph: Graph, selectors: list[str] | None) -> set[str]:
    """The DTs the selectors name; no selectors means every DT."""
    if not selectors:
        return set(project.tables)
    chosen: set[str] = set()
    for value in selectors:
        for union_part in value.split():
            parts = [p for p in union_part.split(",") if p]
            if not parts:
                continue
            found = _one(project, graph, parts[0])
            for part in parts[1:]:
                found &= _one(project, graph, part)
            chosen |= found
    return chosen


def _one(project: Project, graph: Graph, selector: str) -> set[str]:
    text = selector.strip()
    up, down = text.startswith("+"), text.endswith("+")
    core = text.strip("+").lower().replace("\\", "/")
    if not core:
        raise UsageError(f"empty selector '{selector}'", hint="write name, +name, name+ or tag:x")
    if core.startswith("tag:"):
        tag = core[len("tag:"):]
        base = {n for n, t in project.tables.items() if tag in {x.lower() for x in t.tags}}
        if not base:
            known = sorted({x.lower() for t in project.tables.values() for x in t.tags})
            raise UsageError(f"no dynamic table has tag '{tag}'",
                             hint=suggest(tag, known) or (f"tags in use: {', '.join(known)}" if known
                                                          else "set tags in tables/<name>.yml"))
    elif core.startswith("path:"):
        path = core[len("path:"):].strip("/")
        path = path[len("tables/"):] if path.startswith("tables/") else path
        base = {n for n, t in project.tables.items()
                if f"{t.folder}/".startswith(f"{path}/") or t.file.lower() in (path, f"tables/{path}")}
        if not base:
            raise UsageError(f"no dynamic table is defined under '{core[len('path:'):]}'",
                             hint="give a folder under tables/, e.g. path:tables/staging")
    elif any(c in core for c in "*?["):
        base = {n for n in project.tables if fnmatch.fnmatch(n, core)}
        if not base:
            raise UsageError(f"no dynamic table matches '{core}'", hint="see `dt show dynamic tables`")
    else:
        base = {project.table_key(core)}
    result = set(base)
    if up:
        result |= graph.upstream_closure(base)
    if down:
        result |= graph.downstream_closure(base)
    return result
