"""What `dt explain NAME` prints in a terminal (the JSON output is api.explain's dict as is)."""

from __future__ import annotations

from typing import Any

from dtcli.ui.output import console, print_table


def print_explain(data: dict[str, Any]) -> None:
    """Mode and reason, schedule, columns, operators, inputs, then the sections a table has
    (custom statement, adaptive choice, frozen region, ignored properties) and warnings."""
    title = data.get("qualified_name") or data["name"]
    console.print(f"[bold]{title}[/] ({data['file']}): refresh mode [bold]{data['refresh_mode']}[/]"
                  + (f" — {data['refresh_mode_reason']}" if data["refresh_mode_reason"] else ""))
    if data["scheduler"] != "ENABLE":
        schedule = "scheduler: disable (refreshed only on demand: dt refresh NAME)"
    elif data["effective_lag"] is None:     # downstream with no consumer that has a time lag
        schedule = f"target lag {data['target_lag']}, not refreshed by schedule (no consumer with a time lag)"
    else:
        schedule = (f"target lag {data['target_lag']}, effective lag {data['effective_lag']} s, "
                    f"period {data['period_seconds']} s")
        if data.get("refresh_seconds") is not None:
            schedule += f" (refreshes take {data['refresh_seconds']:.0f} s from snapshot to commit)"
    console.print(f"{schedule}; upstream: {', '.join(data['upstream']) or '-'}; "
                  f"downstream: {', '.join(data['downstream']) or '-'}", highlight=False)
    if data["columns"]:
        print_table([{"column": c["name"], "type": c["type"] or "(known when Spark runs)"}
                     for c in data["columns"]], ("column", "type"), title="columns")
    print_table(data["operators"], ("operator", "line", "strategy", "considerations"), title="operators")
    if data.get("rewritten_sql"):
        console.print(f"refreshed incrementally as (dt rewrote {len(data['rewrites'])} construct"
                      f"{'s' if len(data['rewrites']) != 1 else ''}: "
                      f"{', '.join(r['construct'] for r in data['rewrites'])}):", highlight=False)
        console.print(data["rewritten_sql"], highlight=False, markup=False)
    print_table(data["inputs"], ("name", "kind", "version", "change_data_feed", "path"), title="inputs")
    if data.get("top_n"):
        top = data["top_n"]
        last = "" if top["limit"] is None else top["offset"] + top["limit"]
        console.print(f"top-N: the rows {top['offset'] + 1}..{last} of the query below, recomputed from "
                      f"{top['recomputed_from']} when a change reaches them:", highlight=False)
        console.print(top["inner_sql"], highlight=False, markup=False)
    if data.get("internal_tables"):
        print_table(data["internal_tables"], ("role", "version", "rows", "holds", "path"),
                    title="internal tables (kept and dropped with it, under the warehouse's _dt/)")
    if data.get("data_tests"):
        print_table(data["data_tests"], ("name", "test", "column", "on_failure", "reads"),
                    title="data tests and expectations, checked before each commit")
    if data.get("column_lineage"):
        print_lineage(data["column_lineage"])
    if data["custom"]:
        custom = data["custom"]
        changes = ", ".join(f"{c['name']} ({c['information']}"
                            + (f", compacted on RELY key {', '.join(c['rely_primary_key'])})" if c["compacted_per_key"]
                               else ", as recorded: no RELY key)") for c in custom["changes"]) or "-"
        console.print(f"{custom['statement']}; CHANGES() of: {changes}; reads SELF: "
                      f"{'line ' + ', '.join(map(str, custom['self_reads'])) if custom['self_reads'] else 'no'}; "
                      f"read at the run's snapshot: {', '.join(custom['snapshot_tables']) or '-'}; "
                      f"first refresh: {custom['initial_population']}", highlight=False)
    if data["adaptive"]:
        console.print(f"next refresh: {data['adaptive']['action']} — {data['adaptive']['reason']}", highlight=False)
    if data["frozen"]:
        frozen = data["frozen"]
        counted = (f"; at the last refresh ({frozen['as_of'][:19]}) {frozen['frozen_rows']} rows frozen, "
                   f"{frozen['active_rows']} active" if frozen["as_of"] else "")
        console.print(f"frozen where {frozen['predicate']} (columns {', '.join(frozen['columns'])}); "
                      f"{frozen['rely_check']}{counted}", highlight=False)
    if data["ignored_properties"]:
        console.print("ignored (Snowflake-only): " + ", ".join(
            f"{p['property']}{' = ' + p['value'] if p['value'] else ''} (line {p['line']})"
            for p in data["ignored_properties"]), highlight=False)
    for warning in data["warnings"]:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)



def print_lineage(lineage: dict[str, Any]) -> None:
    """Column lineage: per output column the input columns its value is made of and the ones
    that decide it otherwise (a window's PARTITION BY, a CASE condition), then the columns that
    decide which rows there are."""
    rows = [{"column": c["name"], "made from": lineage_text(c["inputs"], "DIRECT") or "-",
             "depends on": lineage_text(c["inputs"], "INDIRECT") or "-"} for c in lineage["columns"]]
    print_table(rows, ("column", "made from", "depends on"), title="column lineage")
    if lineage["dataset"]:
        console.print(f"every row depends on: {lineage_text(lineage['dataset'], 'INDIRECT')}", highlight=False)


def lineage_text(inputs: list[dict[str, Any]], kind: str) -> str:
    """`input.column (how)` for each input field with transformations of `kind`; an identity is
    shown bare."""
    out = []
    for field in inputs:
        how = [t["subtype"].lower().replace("_", " ") + (", masked" if t["masking"] else "")
               for t in field["transformations"] if t["type"] == kind]
        if how:
            shown = [h for h in how if h != "identity"]
            out.append(f"{field['input']}.{field['column']}" + (f" ({'; '.join(shown)})" if shown else ""))
    return ", ".join(out)
