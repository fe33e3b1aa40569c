"""What `dt explain NAME` prints in a terminal, from its typed report (dtcli/artifacts/explain.py;
the JSON output is that report as is)."""

from __future__ import annotations

from dataclasses import asdict

from dtcli.artifacts.explain import ColumnLineage, CustomSection, ExplainReport, Frozen, LineageInput, TopN
from dtcli.ui.output import console, print_table


def print_explain(report: ExplainReport) -> None:
    """Mode and reason, schedule, columns, operators, inputs, then the sections a table has
    (custom statement, adaptive choice, frozen region, ignored properties) and warnings."""
    x = report
    title = x.qualified_name or x.name
    console.print(f"[bold]{title}[/] ({x.file}): refresh mode [bold]{x.refresh_mode}[/]"
                  + (f" — {x.refresh_mode_reason}" if x.refresh_mode_reason else ""))
    if x.scheduler != "ENABLE":
        schedule = "scheduler: disable (refreshed only on demand: dt refresh NAME)"
    elif x.effective_lag is None:     # downstream with no consumer that has a time lag
        schedule = f"target lag {x.target_lag}, not refreshed by schedule (no consumer with a time lag)"
    else:
        schedule = f"target lag {x.target_lag}, effective lag {x.effective_lag} s, period {x.period_seconds} s"
        if x.refresh_seconds is not None:
            schedule += f" (refreshes take {x.refresh_seconds:.0f} s from snapshot to commit)"
    console.print(f"{schedule}; upstream: {', '.join(x.upstream) or '-'}; "
                  f"downstream: {', '.join(x.downstream) or '-'}", highlight=False)
    if x.columns:
        print_table([{"column": c.name, "type": c.type or "(known when Spark runs)"} for c in x.columns],
                    ("column", "type"), title="columns")
    print_table([asdict(o) for o in x.operators], ("operator", "line", "strategy", "considerations"),
                title="operators")
    if x.rewritten_sql:
        constructs = [r.construct for r in x.rewrites]
        console.print(f"refreshed incrementally as (dt rewrote {len(constructs)} construct"
                      f"{'s' if len(constructs) != 1 else ''}: {', '.join(constructs)}):", highlight=False)
        console.print(x.rewritten_sql, highlight=False, markup=False)
    print_table([asdict(i) for i in x.inputs], ("name", "kind", "version", "change_data_feed", "path"),
                title="inputs")
    if x.top_n:
        _print_top_n(x.top_n)
    if x.internal_tables:
        print_table([asdict(t) for t in x.internal_tables], ("role", "version", "rows", "holds", "path"),
                    title="internal tables (kept and dropped with it, under the warehouse's _dt/)")
    if x.data_tests:
        print_table([asdict(t) for t in x.data_tests], ("name", "test", "column", "on_failure", "reads"),
                    title="data tests and expectations, checked before each commit")
    if x.column_lineage:
        print_lineage(x.column_lineage)
    if x.custom:
        _print_custom(x.custom)
    if x.adaptive:
        console.print(f"next refresh: {x.adaptive.action} — {x.adaptive.reason}", highlight=False)
    if x.frozen:
        _print_frozen(x.frozen)
    if x.ignored_properties:
        console.print("ignored (Snowflake-only): " + ", ".join(
            f"{p.property}{' = ' + p.value if p.value else ''} (line {p.line})"
            for p in x.ignored_properties), highlight=False)
    for warning in x.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)


def _print_top_n(top: TopN) -> None:
    last = "" if top.limit is None else top.offset + top.limit
    console.print(f"top-N: the rows {top.offset + 1}..{last} of the query below, recomputed from "
                  f"{top.recomputed_from} when a change reaches them:", highlight=False)
    console.print(top.inner_sql, highlight=False, markup=False)


def _print_custom(custom: CustomSection) -> None:
    changes = ", ".join(f"{c.name} ({c.information}"
                        + (f", compacted on RELY key {', '.join(c.rely_primary_key or ())})" if c.compacted_per_key
                           else ", as recorded: no RELY key)") for c in custom.changes) or "-"
    reads_self = "line " + ", ".join(map(str, custom.self_reads)) if custom.self_reads else "no"
    console.print(f"{custom.statement}; CHANGES() of: {changes}; reads SELF: {reads_self}; "
                  f"read at the run's snapshot: {', '.join(custom.snapshot_tables) or '-'}; "
                  f"first refresh: {custom.initial_population}", highlight=False)


def _print_frozen(frozen: Frozen) -> None:
    counted = (f"; at the last refresh ({frozen.as_of[:19]}) {frozen.frozen_rows} rows frozen, "
               f"{frozen.active_rows} active" if frozen.as_of else "")
    console.print(f"frozen where {frozen.predicate} (columns {', '.join(frozen.columns)}); "
                  f"{frozen.rely_check}{counted}", highlight=False)


def print_lineage(lineage: ColumnLineage) -> None:
    """Column lineage: per output column the input columns its value is made of and the ones
    that decide it otherwise (a window's PARTITION BY, a CASE condition), then the columns that
    decide which rows there are."""
    rows = [{"column": c.name, "made from": lineage_text(c.inputs, "DIRECT") or "-",
             "depends on": lineage_text(c.inputs, "INDIRECT") or "-"} for c in lineage.columns]
    print_table(rows, ("column", "made from", "depends on"), title="column lineage")
    if lineage.dataset:
        console.print(f"every row depends on: {lineage_text(lineage.dataset, 'INDIRECT')}", highlight=False)


def lineage_text(inputs: list[LineageInput], kind: str) -> str:
    """`input.column (how)` for each input field with transformations of `kind`; an identity is
    shown bare."""
    out = []
    for field in inputs:
        how = [t.subtype.lower().replace("_", " ") + (", masked" if t.masking else "")
               for t in field.transformations if t.type == kind]
        if how:
            shown = [h for h in how if h != "identity"]
            out.append(f"{field.input}.{field.column}" + (f" ({'; '.join(shown)})" if shown else ""))
    return ", ".join(out)
