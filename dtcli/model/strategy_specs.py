"""What the strategies of two kinds of table need beyond a query: a custom table's statement and
its CHANGES() inputs, a top-N's order and limit, and the internal tables a DT keeps. Parts of a
step's options (dtcli/model/plan.py), JSON-serialisable for the driver."""

from __future__ import annotations

from dataclasses import dataclass

from dtcli.config_keys import ColumnDecl, StartAt
from dtcli.json_types import JsonObject


@dataclass
class ChangeInputSpec:
    """An input a custom table reads with CHANGES(): how, where, and its RELY key (if any)."""

    name: str
    mode: str                     # DEFAULT | APPEND_ONLY
    path: str
    key: list[str] | None = None


@dataclass
class CustomSpec:
    """A custom incremental table's statement, as the engine runs it (planning/custom.py)."""

    kind: str                                 # MERGE | INSERT
    columns: list[ColumnDecl]                 # the table's columns
    add_columns: list[ColumnDecl]             # columns the table gains at this refresh
    target_alias: str | None
    on: str | None                            # a MERGE's ON condition, as written
    changes: list[ChangeInputSpec]
    start_versions: dict[str, int] | None     # with backfill, at creation: where CHANGES() begin
    start_at: StartAt | None = None           # `start_at` config

    @classmethod
    def from_dict(cls, raw: JsonObject | None) -> CustomSpec | None:
        if raw is None:
            return None
        values = dict(raw)
        values["changes"] = [ChangeInputSpec(**c) for c in raw.get("changes") or []]
        return cls(**values)


@dataclass
class InternalTable:
    """An intermediate result a DT keeps as a Delta table of its own (its *internal state*): at
    `<warehouse>/_dt/internal/<dt>/<role>`, refreshed in the DT's refresh before the DT, with a
    frontier of its own; dropped with the DT (docs/configuration.md, "Internal state")."""

    role: str                     # what it holds, e.g. top_n_rows
    path: str
    sql: str                      # Spark SQL over the DT's inputs (logical names): its rows
    # an aggregate's running totals: maintained from their own rows, also without GROUP BY (one
    # row, kept at COUNT(*) 0), never recomputed per key (sql/rules/aggregate_totals.py)
    running_totals: bool = False


@dataclass
class KeptAggregate:
    """An aggregate inside a DT's query kept as running totals (sql/rules/kept_aggregates.py):
    the incremental refresh reads it as an input of its own, the totals' change its change."""

    name: str                     # the input the DT's incremental query reads it by (__dt_kept<n>)
    block_sql: str                # Spark SQL: the derived table's query, as the DT's query has it
    state: InternalTable          # its running totals

    @classmethod
    def from_dict(cls, raw: JsonObject) -> KeptAggregate:
        return cls(raw["name"], raw["block_sql"], InternalTable(**raw["state"]))


@dataclass
class SortKey:
    position: int                 # column of the top-N's inner query
    desc: bool
    nulls_first: bool


@dataclass
class TopNSpec:
    """A top-N DT (`ORDER BY … LIMIT n` outermost) as the engine refreshes it: the query under
    it, whose change is computed, and the top-N applied over it (sql/rules/top_n.py)."""

    inner_sql: str                # Spark SQL: the outputs, then the hidden sort columns
    outputs: int                  # the DT's columns: the inner query's first `outputs`
    order: list[SortKey]
    limit: int | None
    offset: int
    state: InternalTable | None   # the inner query's rows, when recomputing from them pays

    @property
    def hidden(self) -> int:
        return max([k.position + 1 for k in self.order] + [self.outputs]) - self.outputs

    @classmethod
    def from_dict(cls, raw: JsonObject | None) -> TopNSpec | None:
        if raw is None:
            return None
        values = dict(raw)
        values["order"] = [SortKey(**k) for k in raw.get("order") or []]
        values["state"] = InternalTable(**raw["state"]) if raw.get("state") else None
        return cls(**values)


@dataclass
class TotalsSpec:
    """An aggregate DT refreshed over running totals kept as an internal table: the DT's query
    as qualified, which the engine splits again (sql/rules/aggregate_totals.py) once it knows
    the types of the summed arguments, and the totals table."""

    sql: str                      # Spark SQL: the DT's outermost aggregate over its inputs
    state: InternalTable

    @classmethod
    def from_dict(cls, raw: JsonObject | None) -> TotalsSpec | None:
        if raw is None:
            return None
        return cls(raw["sql"], InternalTable(**raw["state"]))
