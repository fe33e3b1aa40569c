"""The checked project: everything a command needs to know before Spark runs, computed once.

Built from the loaded project (every file rendered and parsed once) and one snapshot of the
warehouse: the DAG, target lags, each DT's columns and types, its query qualified against its
inputs, its refresh analysis and its resolved refresh mode. Planning, explain, show, watch and
run all read this one object (like SQLMesh's `Context`); none of them loads or parses again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from dtcli.errors import ValidationError
from dtcli.model import Column, Project, TableDef
from dtcli.planning import backfill, custom, declared_columns, frozen
from dtcli.planning.backfill import BackfillSource
from dtcli.planning.check_cache import CheckCache
from dtcli.planning.data_tests import TableChecks, check_tests
from dtcli.planning.definition import definition_hash
from dtcli.planning.graph import Graph
from dtcli.planning.lag import LagResolution, parse_target_lag, resolve_lags
from dtcli.planning.on_demand import is_on_demand
from dtcli.planning.refresh_mode import ResolvedMode, change_compiler_reason, resolve_modes
from dtcli.planning.snapshot import Snapshot
from dtcli.planning.unit_tests import check_unit_tests
from dtcli.sql.analysis import QueryAnalysis, analyze
from dtcli.sql.frozen import FrozenPredicate
from dtcli.sql.output_names import check_output_names
from dtcli.sql.resolve import Resolved, resolve
from dtcli.sql.types import to_sqlglot
from dtcli.unit_tests import UnitTest


@dataclass
class Checked:
    project: Project
    graph: Graph
    snapshot: Snapshot
    lags: LagResolution
    schemas: dict[str, tuple[Column, ...]]     # every input and DT -> its columns
    qualified: Qualified                       # DT -> its query with every column bound and rewritten by
                                               # sql/rules (None: left to Spark)
    analyses: dict[str, QueryAnalysis]
    modes: dict[str, ResolvedMode]
    hashes: dict[str, str] = field(default_factory=dict)   # DT -> definition hash
    frozen: dict[str, FrozenPredicate] = field(default_factory=dict)     # DTs with frozen_where
    backfills: dict[str, BackfillSource] = field(default_factory=dict)   # DTs about to be copied
    customs: dict[str, custom.CustomCheck] = field(default_factory=dict)  # REFRESH USING tables
    # DTs, sources and seeds -> their data tests and expectations (planning/data_tests.py)
    data_tests: dict[str, TableChecks] = field(default_factory=dict)
    unit_tests: dict[str, list[UnitTest]] = field(default_factory=dict)   # DT -> its `unit_tests:`

    @property
    def now(self) -> datetime:
        return self.snapshot.taken_at

    @property
    def effective_lags(self) -> dict[str, int | None]:
        return self.lags.effective_seconds

    @property
    def warnings(self) -> dict[str, list[str]]:
        return dict(self.lags.warnings)

    def delta_sql(self, name: str) -> str | None:
        """The qualified query as Spark SQL, for the change-query compiler."""
        query = self.qualified.get(name)
        return query.sql(dialect="spark") if query is not None else None


def check(project: Project, snapshot: Snapshot, *, use_cache: bool = True,
          only: set[str] | None = None, cache: CheckCache | None = None) -> Checked:
    """Everything that can be checked without Spark; raises the first problem found.
    `use_cache`: keep and reuse the costly pure steps in target/ (check_cache.py); `cache`: the
    one the project was loaded with, to write once.
    `only` (closed under upstream): check just these DTs, as `explain NAME` needs; the DAG and
    the lags stay the whole project's (a `downstream` lag comes from the consumers)."""
    cache = cache if cache is not None else CheckCache(project.root, enabled=use_cache)
    keys: dict[str, str] = {}      # DT -> its resolution's cache key, for the compiler's verdict
    graph = Graph.of(project)
    lags = {n: parse_target_lag(t.target_lag, file=t.file) for n, t in project.tables.items()}
    # An on-demand DT (scheduler: disable) has no target lag: the lag rules and `downstream`
    # resolution see it as they see a source (see on_demand.py).
    scheduled = {n: lag for n, lag in lags.items() if not is_on_demand(project.tables[n])}
    resolution = resolve_lags(scheduled, graph.upstream, {n: t.file for n, t in project.tables.items()})
    hashes = {n: definition_hash(t) for n, t in project.tables.items()}
    schemas: dict[str, tuple[Column, ...]] = {n: i.schema for n, i in snapshot.sources.items()}
    for name in sorted(snapshot.sources):
        declared_columns.check(project.sources[name], schemas[name], project.root)
    unsure: set[str] = set()        # DTs whose column names only Spark will know for sure
    resolutions: dict[str, Resolved | None] = {}
    analyses: dict[str, QueryAnalysis] = {}
    predicates: dict[str, FrozenPredicate] = {}
    backfills: dict[str, BackfillSource] = {}
    customs: dict[str, custom.CustomCheck] = {}
    order = graph.order if only is None else graph.ordered(only)
    for name in order:
        table = project.tables[name]
        custom.check_config(table)
        if table.kind == "custom":
            customs[name] = custom.check_table(project, table, schemas, snapshot)
            schemas[name] = customs[name].columns
            resolutions[name] = None
            analyses[name] = custom.analysis(table)
            source = backfill.check_table(project, table, schemas[name], snapshot.tables.get(name))
            if source is not None:
                backfills[name] = source
            continue
        inputs = {i: schemas.get(i, ()) for i in table.inputs}
        # an input whose columns are unknown (its query left to Spark) leaves this one to Spark too
        resolved = None
        if all(inputs.values()) and not unsure & set(inputs):
            keys[name] = CheckCache.key("resolve", table.sql, table.spark_sql, table.file, project.dialect,
                                        tuple((i, tuple((c.name, c.type) for c in cols))
                                              for i, cols in inputs.items()))
            resolved = cache.get(keys[name], _resolve, table, inputs, project.dialect)
        resolutions[name] = resolved
        schemas[name] = _table_schema(project, snapshot, name, hashes[name],
                                      resolved.columns if resolved else ())
        renamed = bool(table.config.columns)
        cache.get(CheckCache.key("names", keys.get(name) or (table.sql, table.spark_sql, table.file),
                                 schemas[name], renamed),
                  _check_output_names, table, schemas[name], renamed)
        if resolved and not resolved.names_certain and schemas[name] == resolved.columns \
                and not table.config.columns:
            unsure.add(name)
        # the analysis reads the parse of the file and the (qualified) query: both follow from the key
        key = CheckCache.key("analysis", keys[name] if resolved else
                             (table.sql, table.spark_sql, table.file, project.dialect))
        analyses[name] = cache.get(key, _analyze, table, resolved)
        predicate = frozen.check_table(table, schemas[name], project.dialect)
        if predicate is not None:
            predicates[name] = predicate
        source = backfill.check_table(project, table, schemas[name], snapshot.tables.get(name))
        if source is not None:
            backfills[name] = source
    tests = check_tests(project, schemas, order, only)
    cdf = {n: i.change_data_feed for n, i in snapshot.sources.items()}
    qualified = Qualified(resolutions)
    modes = resolve_modes(project, Graph(graph.upstream, graph.downstream, order), cdf, analyses, qualified,
                          _cached_reasons(project, cache, keys, qualified), schemas)
    units = check_unit_tests(project, schemas, order, modes)
    cache.save(prune=only is None)
    snapshot.keep()
    return Checked(project, graph, snapshot, resolution, schemas, qualified, analyses, modes, hashes,
                   predicates, backfills, customs, tests, units)


class Qualified(Mapping):
    """DT -> its qualified query (None: left to Spark), unpickled from the check cache only when
    a command reads it (dtcli.lazy); `bound(name)` answers without reading the tree."""

    def __init__(self, resolutions: dict[str, Resolved | None]):
        self._resolutions = resolutions

    def __getitem__(self, name: str) -> Any:
        resolved = self._resolutions[name]
        return resolved.query if resolved is not None else None

    def __iter__(self):
        return iter(self._resolutions)

    def __len__(self) -> int:
        return len(self._resolutions)

    def bound(self, name: str) -> bool:
        return self._resolutions.get(name) is not None

    def rewrites(self, name: str) -> tuple:
        """What dt's rules (sql/rules) rewrote in the DT's query: explain lists them."""
        resolved = self._resolutions.get(name)
        return resolved.rewrites if resolved is not None else ()


# The cached steps take the table, not its trees: a cached verdict must not unpickle the trees it
# was made of (dtcli.lazy), so they are read only inside the step, on a miss.
def _resolve(table: TableDef, inputs: dict[str, tuple[Column, ...]], dialect: str) -> Resolved | None:
    """The query qualified against its inputs, then rewritten by dt's rules (sql/rules) into the
    forms the change compiler refreshes: subqueries as joins, and so on."""
    resolved = resolve(table.query, inputs, dialect, table.file, table.parsed.text)
    return resolved.normalized() if resolved is not None else None


def _check_output_names(table: TableDef, columns: tuple[Column, ...], renamed: bool) -> None:
    check_output_names(table.query, columns, renamed=renamed, file=table.file, text=table.parsed.text)


def _analyze(table: TableDef, resolved: Resolved | None) -> QueryAnalysis:
    if resolved is None:
        return analyze(table.parsed, table.query)
    return analyze(table.parsed, resolved.query, resolved.rewrites)


def _cached_reasons(project: Project, cache: CheckCache, keys: dict[str, str], qualified: Qualified):
    """The change compiler's verdict on each DT (it builds the whole incremental rewrite just to
    answer), from the cache: keyed by the resolution's key, which fixes the qualified query."""
    def compiler_reason(name: str) -> str | None:
        table = project.tables[name]
        key = CheckCache.key("reason", keys[name]) if qualified.bound(name) \
            else CheckCache.key("reason", table.spark_sql, table.inputs)
        return cache.get(key, _compiler_reason, project, name, qualified)

    return compiler_reason


def _compiler_reason(project: Project, name: str, qualified: Qualified) -> str | None:
    return change_compiler_reason(project, name, qualified.get(name))


def _table_schema(project: Project, snapshot: Snapshot, name: str, digest: str,
                  derived: tuple[Column, ...]) -> tuple[Column, ...]:
    """A DT's columns: as its Delta log has them while its definition is unchanged, else as
    derived from its query (renamed and typed by `columns:` where given)."""
    info = snapshot.tables.get(name)
    if info is not None and info.frontier is not None and info.frontier.definition_hash == digest \
            and info.schema:
        return info.schema
    table = project.tables[name]
    declared = table.config.columns
    if not declared:
        return derived
    origin = table.config_origin.get("columns")
    where = {"file": origin.file if origin and origin.file else table.file,
             "line": origin.line if origin else None}
    if derived and len(declared) != len(derived):
        raise ValidationError(f"columns lists {len(declared)} columns but the query returns "
                              f"{len(derived)} ({', '.join(c.name for c in derived)})", **where,
                              hint="name every output column of the query, in order")
    out = []
    for k, spec in enumerate(declared):
        kind = spec.get("type")
        if kind and to_sqlglot(kind).is_type("unknown"):
            raise ValidationError(f"column {spec['name']}: unknown type '{kind}'", **where,
                                  hint="use a Spark SQL type such as BIGINT, STRING, DECIMAL(12,2)")
        out.append(Column(spec["name"], kind.upper() if kind else (derived[k].type if derived else None)))
    return tuple(out)
