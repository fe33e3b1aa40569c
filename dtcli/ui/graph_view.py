"""The DAG as text: an indented tree, Mermaid or Graphviz dot."""

from __future__ import annotations

from dtcli.model import Project
from dtcli.planning.graph import Graph


def edges(project: Project, graph: Graph) -> list[tuple[str, str]]:
    return [(inp, name) for name in graph.order for inp in project.tables[name].inputs]


def render(project: Project, graph: Graph, fmt: str) -> str:
    if fmt == "mermaid":
        lines = ["graph LR"]
        lines += [f"  {s}[({s})]" for s in sorted({i for t in project.tables.values() for i in t.inputs
                                                   if i in project.sources})]
        lines += [f"  {a} --> {b}" for a, b in edges(project, graph)]
        lines += [f"  {n}" for n in graph.order if not project.tables[n].inputs]
        return "\n".join(lines)
    if fmt == "dot":
        lines = ["digraph dt {", "  rankdir=LR;"]
        for s in sorted({i for t in project.tables.values() for i in t.inputs if i in project.sources}):
            lines.append(f'  "{s}" [shape=cylinder];')
        lines += [f'  "{n}" [shape=box];' for n in graph.order]
        lines += [f'  "{a}" -> "{b}";' for a, b in edges(project, graph)]
        return "\n".join(lines + ["}"])
    # tree: each DT under the things it reads, roots are sources
    out: list[str] = []

    def walk(name: str, prefix: str, seen: tuple[str, ...]) -> None:
        for child in sorted(graph.downstream.get(name, [])):
            out.append(f"{prefix}└── {child}")
            if child not in seen:
                walk(child, prefix + "    ", seen + (child,))

    roots = sorted({i for t in project.tables.values() for i in t.inputs if i in project.sources})
    for root in roots:
        out.append(f"{root} (source)")
        for child in sorted(n for n in graph.order if root in project.tables[n].inputs):
            out.append(f"└── {child}")
            walk(child, "    ", (child,))
    return "\n".join(out)
