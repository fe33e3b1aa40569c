"""Whether explain's operator table and a DT's refresh mode tell the same story: the checks of
tests/fuzz/test_explain_agrees.py, also run on the hand-written subquery cases."""

from __future__ import annotations

import dataclasses

from dtcli.artifacts.typed_json import to_json
from dtcli.errors import ValidationError
from dtcli.model import FULL
from dtcli.planning.explain import explain
from dtcli.planning.graph import Graph
from dtcli.planning.refresh_mode import change_compiler_reason, resolve_modes


def _not_the_query(reason: str | None) -> bool:
    """FULL for an input (an upstream DT refreshing FULL, a source without a change data feed):
    explain warns about it, and the rows stay the query's own."""
    return bool(reason) and (reason.startswith("upstream dynamic table ")
                             or (reason.startswith("source ") and "has no change data feed" in reason))


def disagreements(checked, pending: set[str] = frozenset()) -> list[str]:
    """Every DT whose operator table and refresh mode tell different stories (`pending`: DTs whose
    query the analyzer refuses ahead of the change compiler, on purpose for now)."""
    out = []
    for name in checked.graph.order:
        doc = to_json(explain(checked, name))
        mode, reason, rows = doc["refresh_mode"], doc["refresh_mode_reason"], doc["operators"]
        blocked = [r for r in rows if not r["incremental"]]
        analysis = checked.analyses[name]
        said = f"{name}: mode {mode} ({reason}); rows not incremental {blocked}\n  {checked.project.tables[name].sql}"
        if mode != FULL:
            if blocked:
                out.append(said)
        elif _not_the_query(reason):
            continue
        elif not blocked:
            out.append(said)
        # the reason is the analyzer's (its first blocker), naming a row that forces FULL
        elif reason not in analysis.blockers or not any(f"at line {r['line']} " in reason for r in blocked):
            out.append(said + "\n  (no row not incremental carries the mode's reason)")
        if checked.modes[name].shape_reason:
            out.append(said + "\n  (the change compiler refuses what the analyzer accepts: explain "
                       "shows a whole-query row)")
        # (the change compiler takes some constructs the analyzer refuses, e.g. a subquery
        # expression in a derived table, that their rules are about to rewrite: not yet checked)
        if (not analysis.incremental and name not in pending
                and change_compiler_reason(checked.project, name, checked.qualified.get(name)) is None):
            out.append(said + "\n  (the analyzer refuses what the change compiler accepts)")
    return out


def refused_as_incremental(checked) -> list[str]:
    """Every DT for which `refresh_mode: incremental` is accepted while a row is not incremental,
    or refused while every row is. Each DT is resolved with its upstream as checked."""
    project = checked.project

    def compiler_reason(name: str) -> str | None:
        # asked only of a query the analyzer accepts, whose mode then records the compiler's
        # refusal as its shape_reason (None: the compiler accepts it)
        return checked.modes[name].shape_reason

    cdf = {n: i.change_data_feed for n, i in checked.snapshot.sources.items()}
    out = []
    for name in checked.graph.order:
        every = all(r["incremental"] for r in to_json(explain(checked, name))["operators"])
        upstream = checked.graph.ordered(checked.graph.upstream_closure({name}))
        if every and any(checked.modes[u].mode == FULL for u in upstream if u != name):
            continue        # FULL for its upstream: `incremental` is refused whatever its query
        table = dataclasses.replace(project.tables[name], config=project.tables[name].config.with_keys(refresh_mode="incremental"))
        one = dataclasses.replace(project, tables={**project.tables, name: table})
        graph = Graph(checked.graph.upstream, checked.graph.downstream, upstream)
        try:
            resolve_modes(one, graph, cdf, checked.analyses, checked.qualified, compiler_reason, checked.schemas)
            accepted = True
        except ValidationError as err:
            accepted = False
            if checked.modes[name].reason not in str(err):     # the error says why, as explain does
                out.append(f"{name}: refused with {err}, not the reason {checked.modes[name].reason}")
        if accepted != every:
            out.append(f"{name}: refresh_mode incremental {'accepted' if accepted else 'refused'} but "
                       f"{'every' if every else 'not every'} operator is incremental\n  {table.sql}")
    return out
