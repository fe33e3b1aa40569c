"""Differential harness: random source changes, incremental refresh, compare with a recompute.

One project holds a DT per query shape over three sources; each step commits a random batch
(inserts with duplicates and NULLs, updates of values and keys, deletes, overwrites) in one to
three commits, refreshes, and checks every DT against its query recomputed at the versions its
frontier records, that every refresh with changed inputs ran INCREMENTAL (no silent FULL), and
that a second run finds NO_DATA.

`DT_HYPOTHESIS_PROFILE=long` runs a deeper search than the default `make test` budget.
"""

from __future__ import annotations

import itertools
import os
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from dtcli.model import INCREMENTAL, NO_DATA, SUCCEEDED
from tests.harness_shapes import FROM_OWN_ROWS, IN_PLACE, ONE_ROW, SHAPES, SNOWFLAKE_SHAPES, SOURCES
from tests.spark.harness import Env

pytestmark = pytest.mark.spark

PROFILES = {
    "default": dict(max_examples=1, stateful_step_count=2),
    "long": dict(max_examples=4, stateful_step_count=5),
}
PROFILE = PROFILES[os.environ.get("DT_HYPOTHESIS_PROFILE", "default")]

keys = st.one_of(st.none(), st.integers(1, 4))
groups = st.sampled_from([None, "x", "y", "z"])
values = st.one_of(st.none(), st.sampled_from([Decimal(s) for s in ("0.00", "1.50", "2.25", "4.00")]))
arrays = st.one_of(st.none(), st.lists(st.integers(0, 3), max_size=2))
words = st.sampled_from([None, "p", "q"])
present_keys = st.integers(1, 4)
present_values = st.sampled_from([Decimal(s) for s in ("0.00", "1.50", "2.25", "4.00")])
ROWS = {
    "a": st.tuples(keys, groups, values, arrays),
    "b": st.tuples(keys, words),
    "c": st.tuples(groups, st.sampled_from(["L1", "L2", None])),
    "d": st.tuples(keys, words),
    "e": st.tuples(present_keys, groups, present_values),
}
KEY_COLUMN = {"a": "k", "b": "k", "c": "g", "d": "dk", "e": "ek"}
VALUE_SET = {"a": ("v", values), "b": ("w", words), "c": ("label", st.sampled_from(["L1", "L3"])),
             "d": ("dc", words), "e": ("ev", present_values)}


def rows_of(name: str, min_size: int = 1):
    """Rows with deliberate duplicates: some drawn rows are repeated."""
    return st.lists(st.tuples(ROWS[name], st.integers(1, 2)), min_size=min_size, max_size=4).map(
        lambda pairs: [r for r, n in pairs for _ in range(n)])


@st.composite
def operations(draw):
    name = draw(st.sampled_from(sorted(SOURCES)))
    kind = draw(st.sampled_from(["insert", "insert", "update", "rekey", "delete", "overwrite",
                                 "same_overwrite"]))
    key_col = KEY_COLUMN[name]
    key_strategy = {"c": groups, "e": present_keys}.get(name, keys)
    if kind == "insert":
        return name, kind, draw(rows_of(name))
    if kind == "update":
        col, strat = VALUE_SET[name]
        return name, kind, (col, draw(strat), key_col, draw(key_strategy))
    if kind == "rekey":
        return name, kind, (key_col, draw(key_strategy), draw(key_strategy))
    if kind == "delete":
        return name, kind, (key_col, draw(key_strategy))
    if kind == "overwrite":
        return name, kind, draw(rows_of(name, min_size=0))
    return name, kind, None


class RefreshMachine(RuleBasedStateMachine):
    spark = None
    base = None
    counter = itertools.count()

    @initialize(a=rows_of("a"), b=rows_of("b"), c=rows_of("c"), d=rows_of("d"), e=rows_of("e"))
    def create(self, a, b, c, d, e):
        self.env = Env(self.spark, self.base / f"ex{next(self.counter)}")
        for name, rows in (("a", a), ("b", b), ("c", c), ("d", d), ("e", e)):
            self.env.create_source(name, SOURCES[name], rows)
        self.env.write(SHAPES, table_yml={name: "small_table_rows: 50000\n" for name in SHAPES
                                          if name not in IN_PLACE})
        self.env.write(SNOWFLAKE_SHAPES, dialect="snowflake", folder="snowflake")
        records = self.env.refresh()
        for name, record in records.items():
            assert record.state == SUCCEEDED, f"{name}: {record.state_message}"
        self.check_all()

    @rule(batch=st.lists(operations(), min_size=1, max_size=3))
    def change_and_refresh(self, batch):
        for op in batch:
            self.apply(*op)
        records = self.env.refresh()
        for name, record in records.items():
            assert record.state == SUCCEEDED, f"{name}: {record.state_message}"
            if record.inputs_with_changed_data:
                assert record.refresh_action == INCREMENTAL, \
                    f"{name} refreshed {record.refresh_action}: {record.state_message}"
                if name in FROM_OWN_ROWS:     # the fast path was taken, not a recompute
                    assert record.refresh_strategy in (FROM_OWN_ROWS[name], "no_row_changed"), \
                        f"{name}: {record.refresh_strategy}"
                if name in ONE_ROW:     # recomputed, unless no changed row passes its conditions
                    assert record.refresh_strategy in ("single_row_recomputed", "no_row_changed"), \
                        f"{name}: {record.refresh_strategy}"
        self.check_all()
        again = self.env.refresh()
        assert {r.refresh_action for r in again.values()} == {NO_DATA}

    def check_all(self):
        for name in [*SHAPES, *SNOWFLAKE_SHAPES]:
            self.env.check(name)

    def apply(self, name, kind, arg):
        env = self.env
        if kind == "insert":
            env.insert(name, arg)
        elif kind == "update":
            col, value, key_col, key = arg
            env.sql(f"UPDATE {{{name}}} SET {col} = {_sql(value)} WHERE {key_col} <=> {_sql(key)}")
        elif kind == "rekey":
            key_col, old, new = arg
            env.sql(f"UPDATE {{{name}}} SET {key_col} = {_sql(new)} WHERE {key_col} <=> {_sql(old)}")
        elif kind == "delete":
            key_col, key = arg
            env.sql(f"DELETE FROM {{{name}}} WHERE {key_col} <=> {_sql(key)}")
        elif kind == "overwrite":
            if arg:
                env.sql(f"INSERT OVERWRITE {{{name}}} VALUES " + ", ".join(_row(r) for r in arg))
            else:
                env.sql(f"DELETE FROM {{{name}}}")
        else:   # rewrite every row unchanged: the change feed reports each as delete + insert
            env.sql(f"INSERT OVERWRITE {{{name}}} SELECT * FROM {{{name}}} VERSION AS OF "
                    f"{env.version(name)}")


def _sql(value) -> str:
    from tests.spark.harness import _lit

    return _lit(value)


def _row(r) -> str:
    from tests.spark.harness import _row as row

    return row(r)


def test_incremental_refresh_matches_recompute(spark, tmp_path):
    RefreshMachine.spark, RefreshMachine.base = spark, tmp_path
    run_state_machine_as_test(RefreshMachine, settings=settings(
        deadline=None, database=None, suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate],     # shrinking a Spark run takes too long
        **PROFILE))


def test_adaptive_refreshes_reach_both_choices_and_match_the_recompute(spark, tmp_path):
    """ADAPTIVE picks INCREMENTAL for a small change and FULL for one the size of the table,
    from Delta commit metrics and its own measured refreshes; either way the DT is exact."""
    env = Env(spark, tmp_path)
    env.create_source("a", SOURCES["a"])
    env.sql("INSERT INTO {a} SELECT id % 997, CAST(id % 5 AS STRING), CAST(id AS DECIMAL(12,2)), NULL "
            "FROM range(30000)")
    tables = {"ad_filtered": SHAPES["filtered"], "ad_grouped": SHAPES["grouped"]}
    env.write(tables, table_yml=dict.fromkeys(tables, "refresh_mode: adaptive\n"))
    env.refresh()
    chosen: list[str] = []
    for change in ("UPDATE {a} SET v = v + 1 WHERE k = 3",                # 0.1 % of the rows
                   "UPDATE {a} SET v = v + 1 WHERE k % 2 = 0",            # half of them: 2 change rows each
                   "DELETE FROM {a} WHERE k = 5"):
        env.sql(change)
        for name, record in env.refresh().items():
            assert record.state == SUCCEEDED, record.state_message
            assert record.refresh_action_reason.startswith("adaptive: "), record.refresh_action_reason
            assert record.change_rows and record.input_rows
            chosen.append(record.refresh_action)
            env.check(name)
    assert chosen[:2] == [INCREMENTAL, INCREMENTAL] and chosen[2:4] == ["FULL", "FULL"], chosen
