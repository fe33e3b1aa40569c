"""Aggregates inside a query kept as running totals (sql/rules/kept_aggregates.py): differential
tests against the query recomputed at the same versions.

One project holds the shapes TPC-H writes with subqueries: a correlated scalar AVG (Q17, under
a global aggregate kept as totals itself), a correlated SUM nested in an IN (Q20), an IN over a
grouped HAVING (Q18, under a top-N), an uncorrelated scalar SUM read by a HAVING (Q11), a CTE
aggregated and read twice (Q15, one kept table for both), and an uncorrelated AVG (Q22). Each
batch inserts duplicates and NULLs, updates and deletes rows, empties groups and creates them
again; every refresh after the first two must read the kept aggregates as inputs, incrementally,
and every DT equal its recompute.
"""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from dtcli.state.delta_log import table_info
from tests.helpers import dt
from tests.spark.harness import Env, strategies_taken

pytestmark = pytest.mark.spark

TABLES = {
    "q17": "SELECT SUM(l.p) / 7.0 AS y FROM l, s WHERE s.k = l.k AND s.f = 'b' "
           "AND l.q < (SELECT 0.2 * AVG(l2.q) FROM l AS l2 WHERE l2.k = s.k)",
    "q20": "SELECT s.k, s.f FROM s WHERE s.k IN (SELECT ps.k FROM ps WHERE ps.a > "
           "(SELECT 0.5 * SUM(l.q) FROM l WHERE l.k = ps.k AND l.j = ps.j))",
    "q18": "SELECT l.j, SUM(l.q) AS total FROM l WHERE l.j IN (SELECT j FROM l GROUP BY j HAVING SUM(q) > 10) "
           "GROUP BY l.j ORDER BY total DESC, l.j LIMIT 3",
    "q11": "SELECT ps.k, SUM(ps.a * ps.c) AS v FROM ps GROUP BY ps.k "
           "HAVING SUM(ps.a * ps.c) > (SELECT SUM(ps.a * ps.c) * 0.1 FROM ps)",
    "q15": "WITH r AS (SELECT l.j AS no, SUM(l.p) AS rev FROM l WHERE l.q > 0 GROUP BY l.j) "
           "SELECT s.k, r.rev FROM s, r WHERE s.k = r.no AND r.rev = (SELECT MAX(rev) FROM r)",
    "q22": "SELECT s.f, COUNT(*) AS n FROM s WHERE s.b > (SELECT AVG(s2.b) FROM s AS s2 WHERE s2.b > 0) GROUP BY s.f",
    # as TPC-H's: a SUM of a nullable balance too, so its groups are recomputed, not kept from its rows
    "q22s": "SELECT s.f, COUNT(*) AS n, SUM(s.b) AS total FROM s "
            "WHERE s.b > (SELECT AVG(s2.b) FROM s AS s2 WHERE s2.b > 0) GROUP BY s.f",
}
L_ROWS = [(1, 1, Decimal("2.00"), Decimal("10.00")), (1, 2, Decimal("8.00"), Decimal("20.00")),
          (2, 1, Decimal("1.00"), Decimal("5.00")), (2, 2, Decimal("1.00"), Decimal("5.00")),
          (3, 3, None, Decimal("7.00")), (None, 3, Decimal("4.00"), Decimal("1.00")),
          (3, None, Decimal("6.00"), None), (4, 4, Decimal("12.00"), Decimal("3.00"))]
S_ROWS = [(1, "b", Decimal("10.5")), (2, "b", Decimal("-1")), (3, "c", None), (4, "b", Decimal("3")),
          (None, "c", Decimal("8"))]
PS_ROWS = [(1, 1, 2, Decimal("1.5")), (2, 2, 1, Decimal("2.0")), (3, 3, 9, None), (4, 4, 10, Decimal("0.5")),
           (1, 2, 7, Decimal("1.0"))]

BATCHES = [
    # duplicates, NULL keys and values, a new group
    ["INSERT INTO {l} VALUES (1, 1, 2.00, 10.00), (5, 5, 30.00, 2.00), (NULL, NULL, NULL, NULL), (2, 1, 0.50, 1.00)",
     "INSERT INTO {s} VALUES (5, 'b', 9), (6, 'c', NULL)", "INSERT INTO {ps} VALUES (5, 5, 20, 1.0)"],
    # a group emptied, rows deleted from the other inputs
    ["DELETE FROM {l} WHERE k = 4", "DELETE FROM {ps} WHERE k = 3", "DELETE FROM {s} WHERE k = 2"],
    # updates of grouped and filtered columns, a value to NULL, the emptied group back
    ["UPDATE {l} SET q = 40.00 WHERE k = 2 AND j = 2", "UPDATE {l} SET p = NULL WHERE k = 1 AND j = 2",
     "UPDATE {l} SET j = 4 WHERE k = 5", "INSERT INTO {l} VALUES (4, 4, 1.00, 1.00)",
     "UPDATE {s} SET b = 100 WHERE k = 3", "UPDATE {ps} SET a = 1 WHERE k = 1 AND j = 1"],
    # a change no kept group sees: only the outer inputs move
    ["UPDATE {s} SET f = 'c' WHERE k = 1"],
]


def _env(spark, tmp_path) -> Env:
    env = Env(spark, tmp_path)
    env.create_source("l", "k INT, j INT, q DECIMAL(12,2), p DECIMAL(12,2)", L_ROWS)
    env.create_source("s", "k INT, f STRING, b DECIMAL(10,2)", S_ROWS)
    env.create_source("ps", "k INT, j INT, a INT, c DECIMAL(8,1)", PS_ROWS)
    return env


@pytest.fixture
def kept_inputs(monkeypatch) -> dict[str, list[int]]:
    """How many kept aggregates each refresh read as inputs, by DT: a spy on dt's own function."""
    from dtcli.engine.runtime import kept_aggregates

    seen: dict[str, list[int]] = {}
    real = kept_aggregates._over_kept

    def spy(ctx, kept, *args):
        seen.setdefault(ctx.step.name, []).append(len(kept))
        return real(ctx, kept, *args)
    monkeypatch.setattr(kept_aggregates, "_over_kept", spy)
    return seen


def test_subquery_aggregates_kept_as_totals_equal_their_recompute(spark, tmp_path, kept_inputs, monkeypatch):
    from dtcli.sql.incremental_rewrite import compiler
    from dtcli.state import internal

    # Q22's one-row average, compared with every row: when it moves, every key is recomputed at
    # the new version (single_row.moves_every_row)
    moved: list[bool] = []
    real = compiler.moves_every_row

    def spy(*args):
        moved.append(real(*args))
        return moved[-1]
    monkeypatch.setattr(compiler, "moves_every_row", spy)
    env = _env(spark, tmp_path)
    env.write(TABLES)
    strategies = strategies_taken(env.run_batches(BATCHES))
    assert True in moved
    warehouse = env.project().warehouse
    expected = {"q17": 1, "q20": 1, "q18": 1, "q11": 2, "q15": 1, "q22": 1, "q22s": 1}
    for name, count in expected.items():
        roles = [r for r in internal.existing(warehouse, name) if r.startswith("kept_aggregate_")]
        assert len(roles) == count, (name, internal.existing(warehouse, name))
        # creation builds them; every later refresh that moved reads them as inputs
        assert kept_inputs.get(name) and set(kept_inputs[name]) == {count}, (name, kept_inputs.get(name))
        assert "FULL" not in str(strategies[name]), (name, strategies[name])
        info = table_info(env.project().table_path(name), with_stats=False)
        for role in roles:
            state = table_info(internal.path(warehouse, name, role), with_stats=False)
            assert info.frontier.state_versions[role] == state.version, (name, role)
    dropped = dt("drop", "q17", "--yes", "-p", str(env.root / "proj"))
    assert dropped.code == 0, dropped.err
    assert not Path(internal.folder(warehouse, "q17")).exists()


def test_a_float_aggregate_is_read_as_written(spark, tmp_path, kept_inputs):
    """A summed DOUBLE (not associative): its derived table is not replaced, the DT stays exact."""
    env = _env(spark, tmp_path)
    env.create_source("x", "k INT, f DOUBLE", [(1, 0.5), (1, 0.25), (2, None)])
    env.write({"fl": "SELECT s.k, s.f FROM s WHERE s.b > (SELECT SUM(x.f) FROM x WHERE x.k = s.k)"})
    env.run_batches([["INSERT INTO {x} VALUES (1, 1e300), (2, 3.5)", "INSERT INTO {s} VALUES (2, 'z', 50)"],
                     ["DELETE FROM {x} WHERE f > 1e10"]])
    assert "fl" not in kept_inputs


def test_kept_totals_ahead_of_their_dt_are_read_from_the_version_the_dt_recorded(spark, tmp_path, kept_inputs):
    """A refresh stopped between a kept aggregate's commit and the DT's: the next refresh reads
    the totals' change from the version the DT recorded, losing and doubling nothing."""
    from dtcli import api
    from dtcli.engine.runtime import internal_state
    from dtcli.engine.runtime.context import RefreshContext
    from dtcli.engine.runtime.executor import bind_inputs, unbind_inputs
    from dtcli.model import INCREMENTAL, Frontier
    from dtcli.state import internal

    env = _env(spark, tmp_path)
    env.write({"q17": TABLES["q17"]})
    env.refresh()
    project = env.project()
    role = "kept_aggregate_1"
    recorded = table_info(project.table_path("q17"), with_stats=False).frontier.state_versions[role]
    # lines that move part 1's average below a line of it, and a new part
    env.sql("INSERT INTO {l} VALUES (1, 1, 0.10, 100.00), (1, 7, 0.10, 100.00), (9, 9, 50.00, 1.00)")
    plan = api.plan_run(api.check(env.root / "proj", with_stats=True), None)
    step = next(s for s in plan.steps if s.name == "q17")
    versions = bind_inputs(spark, step, {})
    try:
        ctx = RefreshContext(spark, plan, step, versions, Frontier(versions, step.definition_hash))
        internal_state.bring_up(ctx, step.options.kept[0].state, recorded)
    finally:
        unbind_inputs(spark, step)
    assert table_info(internal.path(project.warehouse, "q17", role), with_stats=False).version > recorded
    record = env.refresh()["q17"]
    assert record.refresh_action == INCREMENTAL, record
    assert kept_inputs["q17"] == [1, 1], kept_inputs     # the creation, then this refresh
    env.check("q17")
