"""Checking a loaded project against one snapshot of the warehouse, without Spark: `check`
builds the checked project (planning/checked_project.py) every command reads, each DT checked
by its kind (planning/kinds) in DAG order, then its tests and its refresh mode.
"""

from __future__ import annotations

from dtcli.model import Column, Project
from dtcli.planning import backfill, declared_columns
from dtcli.planning.backfill import BackfillSource
from dtcli.planning.check_cache import CheckCache
from dtcli.planning.checked_project import Checked, Qualified
from dtcli.planning.custom import CustomCheck
from dtcli.planning.data_tests import check_tests
from dtcli.planning.definition import definition_hash
from dtcli.planning.graph import Graph
from dtcli.planning.kinds.base import CheckScope
from dtcli.planning.kinds.registry import kind_of
from dtcli.planning.lag import parse_target_lag, resolve_lags
from dtcli.planning.on_demand import is_on_demand
from dtcli.planning.refresh_mode import change_compiler_reason, resolve_modes
from dtcli.planning.snapshot import Snapshot
from dtcli.planning.unit_tests import check_unit_tests
from dtcli.sql.analysis import QueryAnalysis
from dtcli.sql.frozen import FrozenPredicate
from dtcli.sql.resolve import Resolved

__all__ = ["Checked", "Qualified", "check"]


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
    scope = CheckScope(project, snapshot, cache, hashes, schemas, unsure=set())
    resolutions: dict[str, Resolved | None] = {}
    analyses: dict[str, QueryAnalysis] = {}
    predicates: dict[str, FrozenPredicate] = {}
    backfills: dict[str, BackfillSource] = {}
    customs: dict[str, CustomCheck] = {}
    order = graph.order if only is None else graph.ordered(only)
    for name in order:
        table = project.tables[name]
        found = kind_of(table).check(scope, table)
        schemas[name], resolutions[name], analyses[name] = found.columns, found.resolved, found.analysis
        if found.cache_key is not None:
            keys[name] = found.cache_key
        if found.names_unsure:
            scope.unsure.add(name)
        if found.predicate is not None:
            predicates[name] = found.predicate
        if found.custom is not None:
            customs[name] = found.custom
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
