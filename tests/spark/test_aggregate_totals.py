"""Aggregates refreshed over running totals (sql/rules/aggregate_totals.py): differential tests
against the query recomputed at the same versions, exact to the last digit (AVG of decimals and
integers as Spark computes it).

One project holds an aggregate per shape: grouped with NULL keys and NULL summed values, keys
not selected (equal rows from several groups), HAVING, an expression over aggregates (TPC-H
Q14's `100.00 * sum(case …) / sum(…)`), over a join (Q5) and over a derived table (Q9), and
global aggregates (Q6, Q14, a HAVING without GROUP BY). Each batch inserts duplicates and
NULLs, updates and deletes rows, empties groups and creates them again, crosses the HAVING
threshold, and takes a global aggregate's input to no rows and back; every refresh must be
INCREMENTAL over the totals and every DT equal to its recompute.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from dtcli.model import INCREMENTAL, SUCCEEDED
from dtcli.state.delta_log import table_info
from tests.helpers import dt
from tests.spark.harness import Env, strategies_taken

pytestmark = pytest.mark.spark

GROUPED = {
    "per_g": "SELECT g, SUM(d) AS s, AVG(d) AS ad, AVG(v) AS av, COUNT(*) AS n, COUNT(v) AS cv "
             "FROM a GROUP BY g",
    "hidden_key": "SELECT SUM(v) AS s, COUNT(*) AS n FROM a GROUP BY g",
    "having": "SELECT g, SUM(v) AS s FROM a GROUP BY g HAVING SUM(v) > 20",
    "share": "SELECT upper(g) AS ug, 100.00 * SUM(CASE WHEN v > 5 THEN d ELSE 0 END) / SUM(d) AS pct, "
             "AVG(d * 2) + 1 AS m FROM a GROUP BY g",
    "joined": "SELECT a.g, SUM(a.d * b.w) AS s, AVG(b.w) AS aw FROM a JOIN b ON a.k = b.k GROUP BY a.g",
    "derived": "SELECT y, SUM(amt) AS s FROM (SELECT a.g AS y, a.d - b.w AS amt FROM a JOIN b ON a.k = b.k) AS t "
               "GROUP BY y ORDER BY y",
}
GLOBAL = {
    "total": "SELECT COUNT(*) AS n, SUM(d) AS s, AVG(v) AS av, AVG(d) AS ad FROM a WHERE v > 0",
    "promo": "SELECT 100.00 * SUM(CASE WHEN a.g = 'x' THEN a.d * b.w ELSE 0 END) / SUM(a.d * b.w) AS pct "
             "FROM a JOIN b ON a.k = b.k",
    "few": "SELECT SUM(v) AS s FROM a HAVING COUNT(*) > 6",
}
A_ROWS = [(1, "x", 10, Decimal("1.10")), (2, "x", 20, Decimal("2.25")), (3, "y", 5, None), (4, "y", None, Decimal("4.00")),
          (5, "z", 20, Decimal("0.01")), (6, "z", 20, Decimal("0.01")), (None, "w", 1, Decimal("9.99")),
          (7, None, 3, Decimal("3.33")), (8, "x", 20, Decimal("8.88"))]
B_ROWS = [(1, Decimal("0.5")), (2, Decimal("1.25")), (5, None), (8, Decimal("3"))]

BATCHES = [
    # duplicates, NULL keys and NULL values, a new group
    ["INSERT INTO {a} VALUES (9, 'v', 100, 1.00), (10, 'v', 1, NULL), (2, 'x', 20, 2.25), (11, NULL, NULL, NULL)",
     "INSERT INTO {b} VALUES (9, 2.5), (2, 1.25)"],
    # a change that reaches no group: a joined row no row of a matches
    ["INSERT INTO {b} VALUES (99, 1.5)"],
    # a group emptied (v), rows deleted from the joined side, HAVING crossed downwards (x)
    ["DELETE FROM {a} WHERE g = 'v'", "DELETE FROM {b} WHERE k = 8", "DELETE FROM {a} WHERE k = 8"],
    # updates: a value to NULL, a NULL to a value, a row between groups, a key to NULL; the
    # emptied group back, a group whose values are all NULL (one run: each DT's change holds
    # both, and the totals' groups they touch are disjoint)
    ["UPDATE {a} SET d = NULL WHERE k = 1", "UPDATE {a} SET v = 50 WHERE k = 3",
     "UPDATE {a} SET g = 'y' WHERE k = 5", "UPDATE {b} SET w = NULL WHERE k = 1",
     "INSERT INTO {a} VALUES (12, 'v', 7, 7.77), (13, 'n', NULL, NULL), (14, 'n', NULL, NULL)"],
    # (almost) every row gone: the global aggregates over no row (NULL sums, COUNT 0)
    ["DELETE FROM {a} WHERE k IS NULL OR k > 1 OR v IS NULL", "UPDATE {a} SET v = -1 WHERE k = 1"],
    # and back
    ["INSERT INTO {a} VALUES (20, 'x', 3, 1.50), (21, 'x', 4, 2.50), (22, 'y', 5, NULL), (23, NULL, 6, 3.00), "
     "(24, 'z', 7, 4.00), (25, 'z', 8, 5.00), (26, 'q', 9, 6.00)",
     "INSERT INTO {b} VALUES (20, 1.5), (21, NULL), (23, 0.25), (24, 2)"],
]


def _env(spark, tmp_path) -> Env:
    env = Env(spark, tmp_path)
    env.create_source("a", "k INT, g STRING, v INT, d DECIMAL(12,2)", A_ROWS)
    env.create_source("b", "k INT, w DECIMAL(10,3)", B_ROWS)
    return env


@pytest.fixture
def totals_refreshed(monkeypatch) -> dict[str, list[str]]:
    """How each bring-up of a DT's totals table applied its change, by DT (the DT's history
    records the DT's strategy only): a spy on dt's own function, Spark untouched."""
    from dtcli.engine.runtime import internal_state

    seen: dict[str, list[str]] = {}
    real = internal_state.bring_up

    def spy(ctx, table, recorded):
        done = real(ctx, table, recorded)
        seen.setdefault(ctx.step.name, []).append(done.strategy)
        return done
    monkeypatch.setattr(internal_state, "bring_up", spy)
    return seen


def test_aggregates_equal_their_recompute_after_each_batch(spark, tmp_path, totals_refreshed, feed_reads):
    """The grouped and the global shapes in one project: one run per batch refreshes them all."""
    from dtcli.state import internal

    env = _env(spark, tmp_path)
    env.write({**GROUPED, **GLOBAL})
    strategies = strategies_taken(env.run_batches(BATCHES))
    # a bring-up of the totals from their own rows hands its change to the DT (the run's change
    # cache): the totals' change feed is read only after one that recomputed keys instead
    warehouse = env.project().warehouse
    for name in {**GROUPED, **GLOBAL}:
        reads = feed_reads.count(internal.path(warehouse, name, "aggregate_totals"))
        other = [s for s in totals_refreshed.get(name, []) if s not in ("own_rows_aggregate", "no_row_changed")]
        assert reads <= len(other), (name, reads, totals_refreshed.get(name))
    assert any(s == "own_rows_aggregate" for name in GLOBAL for s in totals_refreshed.get(name, []))
    for name in {**GROUPED, **GLOBAL}:
        assert strategies[name] <= {"aggregate_totals", "no_row_changed"}, (name, strategies[name])
        assert "aggregate_totals" in strategies[name], (name, strategies[name])
    # the totals follow the change from their own rows, NULL sums included; a change that
    # reaches no group commits the frontier alone (it once recomputed the groups' keys instead)
    grouped = [s for name in GROUPED for s in totals_refreshed.get(name, [])]
    assert "own_rows_aggregate" in grouped, totals_refreshed
    for name in {**GROUPED, **GLOBAL}:
        assert set(totals_refreshed.get(name, [])) <= {"own_rows_aggregate", "no_row_changed", None}, \
            (name, totals_refreshed)
    assert all(internal.existing(warehouse, n) == ["aggregate_totals"] for n in GROUPED)
    info = table_info(env.project().table_path("per_g"), with_stats=False)
    state = table_info(internal.path(warehouse, "per_g", "aggregate_totals"))
    assert info.frontier.state_versions == {"aggregate_totals": state.version}
    assert state.frontier.source_versions == info.frontier.source_versions
    # `dt drop` deletes the totals with the DT
    dropped = dt("drop", "per_g", "--yes", "-p", str(env.root / "proj"))
    assert dropped.code == 0, dropped.err
    assert not Path(internal.folder(warehouse, "per_g")).exists()


def test_off_by_config_or_by_a_float_argument_no_totals_are_kept(spark, tmp_path):
    """`aggregate_totals: false`, or a DOUBLE summed (not associative): the groups are recomputed
    and no internal table is made; turning the setting on reinitializes the DT with its totals."""
    from dtcli.state import internal

    env = _env(spark, tmp_path)
    env.create_source("c", "g STRING, f DOUBLE, v INT", [("x", 0.1, 1), ("x", 0.2, None), ("y", None, 3)])
    tables = {"off": GROUPED["per_g"], "floats": "SELECT g, SUM(f) AS s, AVG(v) AS av FROM c GROUP BY g"}
    env.write(tables, table_yml={"off": "aggregate_totals: false\n"})
    batches = [["INSERT INTO {a} VALUES (30, 'x', 1, 1.00)", "INSERT INTO {c} VALUES ('x', 0.3, 4), ('z', 1e300, 5)"],
               ["DELETE FROM {a} WHERE g = 'y'", "UPDATE {c} SET f = NULL WHERE g = 'z'"]]
    strategies = strategies_taken(env.run_batches(batches))
    assert strategies == {"off": {"keys_recomputed"}, "floats": {"keys_recomputed"}}, strategies
    warehouse = env.project().warehouse
    assert internal.existing(warehouse, "off") == [] == internal.existing(warehouse, "floats")
    # on again: the DT has recorded no totals, so its next refresh builds them (REINITIALIZE)
    env.write(tables, table_yml={"off": "aggregate_totals: true\n"})
    env.sql("INSERT INTO {a} VALUES (31, 'y', 2, 2.00)")
    record = env.refresh(["off"])["off"]
    assert record.state == SUCCEEDED and record.refresh_action == "REINITIALIZE", record
    assert internal.existing(warehouse, "off") == ["aggregate_totals"]
    env.check("off")
    env.sql("DELETE FROM {a} WHERE k = 31")
    record = env.refresh(["off"])["off"]
    assert (record.refresh_action, record.refresh_strategy) == (INCREMENTAL, "aggregate_totals"), record
    env.check("off")


def test_totals_ahead_of_their_dt_are_read_from_the_version_the_dt_recorded(spark, tmp_path):
    """A refresh stopped between the totals' commit and the DT's: the next refresh neither loses
    nor doubles the change the totals already hold."""
    from dtcli import api
    from dtcli.engine.runtime import internal_state
    from dtcli.engine.runtime.context import RefreshContext
    from dtcli.engine.runtime.executor import bind_inputs, unbind_inputs
    from dtcli.model import Frontier
    from dtcli.state import internal

    env = _env(spark, tmp_path)
    env.write({"per_g": GROUPED["per_g"]})
    env.refresh()
    project = env.project()
    path = internal.path(project.warehouse, "per_g", "aggregate_totals")
    before = table_info(project.table_path("per_g"), with_stats=False)
    env.sql("INSERT INTO {a} VALUES (40, 'q', 1000, 10.00), (41, 'x', NULL, 0.50)")
    plan = api.plan_run(api.check(env.root / "proj", with_stats=True), None)
    step = next(s for s in plan.steps if s.name == "per_g")
    versions = bind_inputs(spark, step, {})
    try:
        ctx = RefreshContext(spark, plan, step, versions, Frontier(versions, step.definition_hash))
        internal_state.bring_up(ctx, step.options.totals.state, before.frontier.state_versions["aggregate_totals"])
    finally:
        unbind_inputs(spark, step)
    assert table_info(path, with_stats=False).version > before.frontier.state_versions["aggregate_totals"]
    record = env.refresh()["per_g"]
    assert (record.refresh_action, record.refresh_strategy) == (INCREMENTAL, "aggregate_totals"), record
    env.check("per_g")
    rows = {r["g"]: r["s"] for r in spark.read.format("delta").load(project.table_path("per_g")).collect()}
    assert rows.get("q") == Decimal("10.00"), rows


def test_a_full_refresh_rewrites_the_totals_in_place_keeping_the_table(spark, tmp_path):
    """A FULL of a DT rebuilds its totals by a commit of every row (engine/runtime/slice_commit.py),
    not by `CREATE OR REPLACE`: the totals keep their Delta table id (readers of it by id, the
    watch's carried reads, see the same table) and the DT equals its recompute after it, and
    after the incremental refresh that follows."""
    from dtcli import api
    from dtcli.engine.runtime.executor import execute_plan
    from dtcli.state import internal

    env = _env(spark, tmp_path)
    env.write({"joined": GROUPED["joined"]})
    env.refresh()
    path = internal.path(env.project().warehouse, "joined", "aggregate_totals")
    before = table_info(path, with_stats=False)
    env.sql("INSERT INTO {a} VALUES (50, 'x', 3, 1.50), (51, NULL, NULL, NULL)")
    plan = api.plan_run(api.check(env.root / "proj", with_stats=True), ["joined"], full_refresh=True)
    record = execute_plan(spark, plan, write_history=False)[0]
    assert (record.state, record.refresh_action) == (SUCCEEDED, "FULL"), record
    env.check("joined")
    after = table_info(path, with_stats=False)
    assert after.table_id == before.table_id and after.version > before.version
    last = spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]
    assert last["operation"] == "WRITE", last["operation"]
    env.sql("DELETE FROM {b} WHERE k = 2")
    record = env.refresh(["joined"])["joined"]
    assert (record.refresh_action, record.refresh_strategy) == (INCREMENTAL, "aggregate_totals"), record
    env.check("joined")
