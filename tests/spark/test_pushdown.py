"""Joins of several changed inputs: a change's join values pushed into the other inputs' scans
(engine/runtime/narrowing.py) or not, old versions read as new rows and the change negated
(PRIOR: totals over four changed inputs, the affected keys of a keyed join), every refresh
equals the recompute. Whether values are pushed depends on the scanned table's size and file
statistics; tests' tables are tiny, so each run sets the limits to push everything it can, or
nothing."""

from __future__ import annotations

import pytest
from sqlglot import exp

from dtcli.engine.runtime import narrowing
from tests.spark.harness import Env

pytestmark = pytest.mark.spark

JOIN3 = """
SELECT a.k, a.g, b.w, c.label
FROM a JOIN b ON a.k = b.k JOIN c ON c.g = a.g
WHERE b.w IS NOT NULL OR a.g = 'x'
"""
GROUPED = """
SELECT c.label, COUNT(*) AS n, SUM(a.v) AS s
FROM a JOIN b ON a.k = b.k JOIN c ON c.g = a.g
GROUP BY c.label
"""
# four changed inputs: the totals' change summed over one term per input (own_rows.py, PRIOR)
GROUPED4 = """
SELECT c.label, COUNT(*) AS n, SUM(a.v) AS s, COUNT(d.x) AS nx
FROM a JOIN b ON a.k = b.k JOIN c ON c.g = a.g JOIN d ON d.x = a.x
GROUP BY c.label
"""
# MAX cannot be kept from the DT's rows: its affected keys (from two inputs) are recomputed
KEYED = """
SELECT c.label, b.w, MAX(a.v) AS top, COUNT(*) AS n
FROM a JOIN b ON a.k = b.k JOIN c ON c.g = a.g JOIN d ON d.x = a.x
GROUP BY c.label, b.w
"""
# the change of `a` pushed into a subquery item (no input table: always narrowed)
BY_DOUBLE = """
SELECT a.k, s.n
FROM a JOIN (SELECT x, COUNT(*) AS n FROM d GROUP BY x) AS s ON s.x = a.x
"""

BATCHES = [
    ["INSERT INTO {a} VALUES (1, 'x', 1.50, 2.5), (1, 'x', 1.50, 2.5), (NULL, 'y', 4.00, NULL), (3, NULL, 0.00, 1.0)",
     "INSERT INTO {b} VALUES (3, 'p'), (NULL, 'q')",
     "INSERT INTO {d} VALUES (2.5), (1.0)",
     "INSERT INTO {c} VALUES ('y', 'L1')"],
    ["UPDATE {a} SET g = 'z' WHERE k = 2",
     "DELETE FROM {b} WHERE k = 1",
     "UPDATE {c} SET label = 'L3' WHERE g = 'x'",
     "INSERT INTO {a} VALUES (4, 'z', 2.25, 7.0)",
     "DELETE FROM {d} WHERE x = 2.5"],
    ["UPDATE {b} SET k = 4 WHERE k = 3",
     "INSERT INTO {c} VALUES ('z', NULL), ('z', 'L1')",
     "DELETE FROM {a} WHERE k IS NULL",
     "UPDATE {a} SET x = NULL WHERE k = 1",
     "INSERT INTO {d} VALUES (7.0), (7.0), (NULL)"],
    ["DELETE FROM {c} WHERE g = 'y'",
     "UPDATE {d} SET x = 2.5 WHERE x = 7.0",
     "UPDATE {b} SET w = NULL WHERE k = 4",
     "INSERT INTO {a} VALUES (4, 'x', 9.00, 2.5)"],
]


# Both settings over the same sources and batches, two projects: every shape with everything
# pushed; with nothing pushed (what tests' tiny tables get by default, as every other join test
# does), the shapes whose change query is then another one. BY_DOUBLE's subquery item is narrowed
# either way, GROUPED is GROUPED4's change over one input fewer.
PUSHED = {"join3": JOIN3, "grouped": GROUPED, "grouped4": GROUPED4, "keyed": KEYED, "by_double": BY_DOUBLE}
WHOLE = {"join3_whole": JOIN3, "grouped4_whole": GROUPED4, "keyed_whole": KEYED}


def _sources(env: Env) -> Env:
    """The four sources every shape reads (NULLs in keys and values, a duplicate row)."""
    env.create_source("a", "k INT, g STRING, v DECIMAL(12,2), x DOUBLE",
                      [(1, "x", 1, 1.0), (2, "y", 2, 2.5), (2, "y", 2, 2.5), (None, "x", 3, None)])
    env.create_source("b", "k INT, w STRING", [(1, "p"), (2, None), (2, "q"), (None, "p")])
    env.create_source("c", "g STRING, label STRING", [("x", "L1"), ("y", "L2"), (None, "L1")])
    env.create_source("d", "x DOUBLE", [(1.0,), (2.5,), (None,)])
    return env


def test_a_join_of_changed_inputs_equals_its_recompute_pushed_or_not(spark, tmp_path, monkeypatch):
    env = _sources(Env(spark, tmp_path))
    env.write(PUSHED, folder="pushed")
    env.write(WHOLE, folder="whole")

    # how many scans each setting narrowed with the change's values (the setting does what it says)
    narrowed = {"pushed": 0, "whole": 0}
    setting = ["pushed"]
    real = narrowing.Narrowing.__call__

    def counting(self, *args, **kwargs):
        restrict = real(self, *args, **kwargs)

        def counted(expr):
            done = restrict(expr)
            narrowed[setting[0]] += isinstance(done, exp.Var)
            return done
        return counted if restrict is not None else None
    monkeypatch.setattr(narrowing.Narrowing, "__call__", counting)

    def refresh() -> dict:
        with monkeypatch.context() as patch:
            patch.setattr(narrowing, "SMALL_INPUT_BYTES", -1)
            patch.setattr(narrowing, "SKIP_WORTH_BYTES", -1)
            setting[0] = "pushed"
            records = env.refresh(list(PUSHED))
        with monkeypatch.context() as patch:
            patch.setattr(narrowing, "SMALL_INPUT_BYTES", 1 << 40)
            setting[0] = "whole"
            return records | env.refresh(list(WHOLE))
    runs = env.run_batches(BATCHES, check_created=False, no_data=False, refresh=refresh)
    assert set(runs[-1]) == set(PUSHED) | set(WHOLE)
    assert narrowed["pushed"] > 0 and narrowed["whole"] == 0, narrowed


# TPC-H Q9's shape: an aggregate over a derived table joining changed inputs to one hub (`a`)
DERIVED = """
SELECT p.label, COUNT(*) AS n, SUM(p.amount) AS s
FROM (SELECT c.label AS label, a.v * 2 AS amount
      FROM a JOIN b ON a.k = b.k JOIN c ON c.g = a.g JOIN d ON d.x = a.x) AS p
GROUP BY p.label
"""
HUBBED = {"join3_hub": JOIN3, "grouped4_hub": GROUPED4, "derived_hub": DERIVED}


def test_joins_reading_their_hubs_kept_rows_equal_their_recompute(spark, tmp_path, monkeypatch):
    """`a` is the hub (sql/incremental_rewrite/hub.py) of every shape: its rows the changes of
    b, c and d reach are kept once per refresh, and their join values narrow the other scans."""
    from dtcli.engine.runtime.strategies import incremental
    from dtcli.sql.incremental_rewrite import DeltaCompiler

    env = _sources(Env(spark, tmp_path))
    env.write(HUBBED, folder="hubbed")
    kept, by_kept, narrowed_by_kept = [], [], []
    real_keep, real_call = incremental.ChangeRefresh._keep, narrowing.Narrowing.__call__

    def keep(self, query):
        kept.append(real_keep(self, query))
        return kept[-1]

    def call(self, name, *args, **kwargs):
        by_kept.append(name in self.kept)
        restrict = real_call(self, name, *args, **kwargs)
        if restrict is None or name not in self.kept:
            return restrict

        def counted(expr):
            done = restrict(expr)
            narrowed_by_kept.append(done is not None)
            return done
        return counted
    monkeypatch.setattr(incremental.ChangeRefresh, "_keep", keep)
    monkeypatch.setattr(narrowing.Narrowing, "__call__", call)
    # every value pushed where it can be, yet the hub chosen: as if no change's values let Delta
    # skip the hub's files (tiny tables' files would all be skipped)
    monkeypatch.setattr(DeltaCompiler, "_skips", lambda self, sel: lambda h, k, links: False)
    monkeypatch.setattr(narrowing, "HUB_MIN_BYTES", -1)
    monkeypatch.setattr(narrowing, "SMALL_INPUT_BYTES", -1)
    monkeypatch.setattr(narrowing, "SKIP_WORTH_BYTES", -1)
    runs = env.run_batches(BATCHES, check_created=False, no_data=False,
                           refresh=lambda: env.refresh(list(HUBBED)))
    assert set(runs[-1]) == set(HUBBED)
    assert kept and any(by_kept), (len(kept), sum(by_kept))
    assert any(narrowed_by_kept), "no scan was narrowed by a hub's kept rows"
