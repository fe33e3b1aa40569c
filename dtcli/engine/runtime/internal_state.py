"""Refreshing a DT's internal table (state/internal.py) inside the DT's refresh, before the DT.

An internal table is refreshed as a DT of its own query would be: the incremental strategy over
the same pinned inputs, with a frontier of its own in its commits, or recomputed. A kill at any
moment leaves it at its previous frontier or at the new one, and the DT's commit records the
version of it the DT's rows were computed from (`Frontier.state_versions`). A DT whose internal
table got ahead of it (killed between the two commits) reads the table's change from the
version it recorded, which covers the commit it missed: nothing is lost or applied twice.
"""

from __future__ import annotations

from dataclasses import dataclass

from dtcli.engine.runtime import audit
from dtcli.engine.runtime.changes import ChangesUnavailable
from dtcli.engine.runtime.context import RefreshContext
from dtcli.model import FULL, INCREMENTAL, Frontier, InternalTable, RefreshStep, StepOptions
from dtcli.plan_parts import Estimate, Layout
from dtcli.state.delta_log import table_info


@dataclass(frozen=True)
class Refreshed:
    version: int          # the internal table's version the DT's rows are now computed from
    replaced: bool        # rebuilt in this refresh: its change feed across that is not read
    strategy: str | None = None     # how its incremental refresh applied the change


def name_of(ctx: RefreshContext, table: InternalTable) -> str:
    return f"{ctx.step.name} (internal table {table.role})"


def recompute(ctx: RefreshContext, table: InternalTable) -> Refreshed:
    """Rebuild the internal table from the DT's inputs at the run's versions. An existing table
    (its frontier read from its log) is replaced as a DT's FULL replaces the DT: by a commit dt
    builds from its file list where it still fits the rows (strategies/full.py), which keeps
    its Delta table id, rather than by `CREATE OR REPLACE`, which gives it a new one."""
    from dtcli.engine.runtime.strategies.full import full_refresh

    info = table_info(table.path, with_stats=False)
    sub = _context(ctx, table, FULL, previous=info.frontier if info is not None else None)
    with audit.suspended():
        return Refreshed(full_refresh(sub).table_version, True)


def bring_up(ctx: RefreshContext, table: InternalTable, recorded: int | None) -> Refreshed:
    """Apply the inputs' changes since the internal table's own frontier (`recorded`: the version
    the DT last read). Raises ChangesUnavailable when the table cannot be trusted (missing,
    made for another definition, older than the DT says): the caller rebuilds both."""
    from dtcli.engine.runtime.strategies.incremental import incremental_refresh

    info = table_info(table.path, with_stats=False)
    what = name_of(ctx, table)
    if info is None or info.frontier is None:
        raise ChangesUnavailable(f"{what} is missing")
    if info.frontier.definition_hash != ctx.step.definition_hash:
        raise ChangesUnavailable(f"{what} was made for another definition")
    if recorded is None or info.version < recorded:
        raise ChangesUnavailable(f"{what} is not at the version the table records")
    if info.frontier.source_versions == ctx.input_versions:
        # already there: an earlier refresh committed it, then was stopped before the DT's commit
        return Refreshed(info.version, False)
    sub = _context(ctx, table, INCREMENTAL, previous=info.frontier)
    with audit.suspended():
        result = incremental_refresh(sub)
    return Refreshed(result.table_version, result.fallback_action is not None, result.strategy)


def _context(ctx: RefreshContext, table: InternalTable, action: str, previous: Frontier | None
             ) -> RefreshContext:
    """The internal table's refresh as a step of its own over the DT's pinned inputs."""
    step, frontier = ctx.step, ctx.frontier
    sub = RefreshStep(
        name=name_of(ctx, table), path=table.path, action=action, trigger=step.trigger, sql=table.sql,
        inputs=step.inputs, definition_hash=step.definition_hash, refresh_mode=step.refresh_mode,
        previous=previous,
        options=StepOptions(previous_rows=None, file=step.options.file, delta_sql=table.sql,
                            read_columns=step.options.read_columns,
                            # its columns carry the DT's names (TPC-DS q16's `order count`): Delta
                            # holds them only with column mapping, as it does the DT's
                            layout=Layout(column_mapping=step.options.layout.column_mapping),
                            estimate=Estimate(change_rows=step.options.estimate.change_rows,
                                              input_rows=step.options.estimate.input_rows),
                            running_totals=table.running_totals,
                            read_by_tables=True))       # its DT reads its change
    own = Frontier(dict(ctx.input_versions), step.definition_hash, frontier.data_timestamp,
                   frontier.run_id, action, step.refresh_mode)
    return RefreshContext(ctx.spark, ctx.plan, sub, ctx.input_versions, own, ctx.pinned, ctx.changes,
                          derived=ctx.derived)
