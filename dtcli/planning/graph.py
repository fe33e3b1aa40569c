"""The DAG of dynamic tables: order, cycles, and the upstream/downstream closures."""

from __future__ import annotations

from dataclasses import dataclass

from dtcli.errors import ValidationError
from dtcli.model import Project


@dataclass
class Graph:
    upstream: dict[str, list[str]]      # DT -> DTs it reads
    downstream: dict[str, list[str]]    # DT -> DTs that read it
    order: list[str]                    # topological, ties broken by name

    @classmethod
    def of(cls, project: Project) -> Graph:
        up = {n: [i for i in t.inputs if i in project.tables] for n, t in sorted(project.tables.items())}
        down: dict[str, list[str]] = {n: [] for n in up}
        for n, ins in up.items():
            for i in ins:
                down[i].append(n)
        order = _topo(up, project)
        return cls(up, down, order)

    def upstream_closure(self, names: set[str]) -> set[str]:
        return _closure(names, self.upstream)

    def downstream_closure(self, names: set[str]) -> set[str]:
        return _closure(names, self.downstream)

    def ordered(self, names: set[str]) -> list[str]:
        return [n for n in self.order if n in names]

    def depth(self, name: str) -> int:
        return 1 + max((self.depth(u) for u in self.upstream[name]), default=0)


def _closure(names: set[str], edges: dict[str, list[str]]) -> set[str]:
    seen, stack = set(names), list(names)
    while stack:
        for nxt in edges.get(stack.pop(), []):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _topo(up: dict[str, list[str]], project: Project) -> list[str]:
    order: list[str] = []
    state: dict[str, int] = {}  # 1 visiting, 2 done

    def visit(n: str, path: list[str]) -> None:
        if state.get(n) == 2:
            return
        if state.get(n) == 1:
            cycle = path[path.index(n):] + [n]
            table = project.tables[n]
            nxt = cycle[1]
            raise ValidationError(f"dependency cycle: {' -> '.join(cycle)}", file=table.file,
                                  line=table.input_lines.get(nxt),
                                  hint="a dynamic table cannot depend on itself through others; break the cycle")
        state[n] = 1
        for u in sorted(up[n]):
            visit(u, path + [n])
        state[n] = 2
        order.append(n)

    for n in sorted(up):
        visit(n, [])
    return order
