"""Frozen regions, differentially: after every refresh the frozen rows are exactly those kept from
before and the active region equals the query recomputed at the same versions, restricted to it.

Four shapes (filter, join, GROUP BY, window) each carry a frozen predicate, one of them aging
with a simulated clock (`order_date < CURRENT_DATE - 5`). Each step commits random changes to
both regions, may edit the predicates (expand, shrink, remove, add back), advances the clock a
day and refreshes. The expected table is computed independently of the engine:
(rows before AND frozen now) + (query now AND NOT frozen now), or the whole query at creation
and once the predicate is removed. An edit that only expands the frozen region, and the aging
predicate, must keep the refresh INCREMENTAL.

`DT_HYPOTHESIS_PROFILE=long` runs a deeper search than the default `make test` budget.
"""

from __future__ import annotations

import itertools
import os
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from dtcli.model import FULL, INCREMENTAL, NO_DATA, REINITIALIZE, SUCCEEDED
from dtcli.sql.frozen import at_time, parse_predicate
from tests.helpers import multiset, recompute
from tests.spark.harness import Env

pytestmark = pytest.mark.spark

PROFILES = {"default": dict(max_examples=1, stateful_step_count=4),
            "long": dict(max_examples=4, stateful_step_count=6)}
PROFILE = PROFILES[os.environ.get("DT_HYPOTHESIS_PROFILE", "default")]

SHAPES = {
    "f_filter": "SELECT order_id, customer_id, order_date, amount FROM orders WHERE status <> 'returned'",
    "f_join": """SELECT o.order_id, o.order_date, c.region, o.amount
                 FROM orders AS o JOIN customers AS c ON o.customer_id = c.customer_id""",
    "f_grouped": "SELECT order_date, COUNT(*) AS n, SUM(amount) AS total FROM orders GROUP BY order_date",
    "f_window": """SELECT order_id, customer_id, amount,
                          RANK() OVER (PARTITION BY customer_id ORDER BY amount) AS r FROM orders""",
}
# Predicates per shape, in the order a user might edit them; None: no frozen region.
PREDICATES = {
    "f_filter": ["order_date < DATE'2025-01-08'", "order_date < DATE'2025-01-11'",
                 "order_date < DATE'2025-01-06' OR customer_id = 3", None],
    "f_join": ["order_date < CURRENT_DATE - 5", "order_date < CURRENT_DATE - 3", None],
    "f_grouped": ["order_date <= DATE'2025-01-08'", "order_date BETWEEN DATE'2025-01-05' AND DATE'2025-01-09'", None],
    "f_window": ["customer_id IN (1, 2)", "customer_id = 1", "customer_id IN (1, 2, 3)", None],
}
SOURCES = {"orders": "order_id INT, customer_id INT, order_date DATE, status STRING, amount DECIMAL(10,2)",
           "customers": "customer_id INT, region STRING"}
START = datetime(2025, 1, 12, 6, 0, tzinfo=timezone.utc)

order_ids = st.integers(1, 12)
customers = st.one_of(st.none(), st.integers(1, 4))
days = st.one_of(st.none(), st.integers(2, 16).map(lambda d: date(2025, 1, d)))
statuses = st.sampled_from(["open", "shipped", "returned", None])
amounts = st.sampled_from([Decimal("1.00"), Decimal("2.50"), Decimal("9.99"), None])
ORDER = st.tuples(order_ids, customers, days, statuses, amounts)
CUSTOMER = st.tuples(customers, st.sampled_from(["north", "south", None]))


def rows(strategy, min_size=1):
    return st.lists(strategy, min_size=min_size, max_size=5)


class FrozenMachine(RuleBasedStateMachine):
    spark = None
    base = None
    counter = itertools.count()

    @initialize(orders=rows(ORDER, min_size=0), people=rows(CUSTOMER))
    def create(self, orders, people):
        self.env = Env(self.spark, self.base / f"ex{next(self.counter)}")
        # a base that spans both regions of every predicate, plus random rows
        base = [(k, k % 4 + 1, date(2025, 1, k + 2), ["open", "shipped", "returned"][k % 3], Decimal("1.00"))
                for k in range(1, 13)]
        self.env.create_source("orders", SOURCES["orders"], base + orders)
        self.env.create_source("customers", SOURCES["customers"],
                               [(c, "north" if c % 2 else "south") for c in range(1, 5)] + people)
        self.now = START
        self.predicates = {name: options[0] for name, options in PREDICATES.items()}
        self.env.write(SHAPES)
        self.write_predicates()
        self.refresh(initial=True)

    def write_predicates(self):
        root = self.env.root / "proj" / "tables"
        for name, predicate in self.predicates.items():
            yml = root / f"{name}.yml"
            yml.write_text(f'frozen_where: "{predicate}"\n' if predicate else "comment: no frozen region\n")

    @rule(batch=st.lists(st.tuples(st.sampled_from(["insert", "update", "delete"]), rows(ORDER),
                                   st.integers(1, 12)), min_size=1, max_size=2),
          people=rows(CUSTOMER, min_size=0), edits=st.dictionaries(st.sampled_from(sorted(PREDICATES)),
                                                                   st.integers(0, 3), max_size=2))
    def change_and_refresh(self, batch, people, edits):
        step = self.step = getattr(self, "step", 0) + 1
        # every step changes rows in both regions of every predicate, whatever was drawn ...
        self.env.sql(f"UPDATE {{orders}} SET amount = amount + 1 WHERE order_id % 3 = {step % 3}")
        self.env.sql(f"DELETE FROM {{orders}} WHERE order_id = {step * 2}")
        self.env.insert("orders", [(20 + step, step % 4 + 1, date(2025, 1, 3), "open", Decimal("5.00")),
                                   (30 + step, step % 4 + 1, date(2025, 1, 14), "open", Decimal("6.00"))])
        # ... and edits one predicate in turn (each shape walks through its list)
        cycle = sorted(PREDICATES)[step % len(PREDICATES)]
        edits = {cycle: PREDICATES[cycle].index(self.predicates[cycle]) + 1, **edits}
        for kind, new_rows, key in batch:
            if kind == "insert":
                self.env.insert("orders", new_rows)
            elif kind == "update":        # in both regions: dates and amounts move
                self.env.sql(f"UPDATE {{orders}} SET amount = amount + 1, order_date = date_add(order_date, 1) "
                             f"WHERE order_id % 3 = {key % 3}")
            else:
                self.env.sql(f"DELETE FROM {{orders}} WHERE order_id = {key}")
        self.env.insert("customers", people)
        for name, k in edits.items():
            options = PREDICATES[name]
            self.predicates[name] = options[k % len(options)]
        self.write_predicates()
        self.now += timedelta(days=1)
        self.refresh()

    def refresh(self, initial: bool = False):
        before = {name: self.table(name, pinned=True) for name in SHAPES} if not initial else {}
        recorded = {name: self.recorded_predicate(name) for name in SHAPES} if not initial else {}
        records = self.env.refresh(now=self.now)
        for name, record in records.items():
            assert record.state == SUCCEEDED, f"{name}: {record.state_message}"
        for name in SHAPES:
            self.check(name, before.get(name), recorded.get(name), records[name], initial)

    def table(self, name, pinned: bool = False):
        """The DT's rows; `pinned`: as of now, even when read after the next refresh."""
        path = self.env.project(name).table_path(name)
        reader = self.spark.read.format("delta")
        if pinned:
            reader = reader.option("versionAsOf", self.env.version(name))
        return reader.load(path)

    def recorded_predicate(self, name):
        from dtcli.state.delta_log import table_info

        info = table_info(self.env.project(name).table_path(name), with_stats=False)
        return info.frontier.frozen_where

    def check(self, name, before, old_predicate, record, initial):
        from dtcli.state.delta_log import table_info

        project = self.env.project(name)
        info = table_info(project.table_path(name), with_stats=False)
        query = recompute(self.spark, project, name, info.frontier.source_versions)
        predicate = self.predicates[name]
        actual = multiset(self.table(name))
        if initial or predicate is None:
            expected = multiset(query)             # creation, or the predicate was removed
        else:
            frozen = f"coalesce(({_at(predicate, self.now)}), false)"
            expected = multiset(before.filter(frozen)) + multiset(query.filter(f"NOT {frozen}"))
        assert actual == expected, (f"{name} with frozen_where {predicate!r} at {self.now}:\n"
                                    f"  only in table: {dict(actual - expected)}\n"
                                    f"  only expected: {dict(expected - actual)}")
        if initial or not record.inputs_with_changed_data:
            return
        if old_predicate is not None and predicate is None:
            assert record.refresh_action == REINITIALIZE and "removed" in record.reinit_reason
        elif _expands(old_predicate, predicate, self.now):
            assert record.refresh_action == INCREMENTAL, f"{name}: {record.refresh_action} {record.state_message}"
        else:
            assert record.refresh_action in (INCREMENTAL, REINITIALIZE), record.refresh_action
            assert record.refresh_action != FULL


def _at(predicate: str, when: datetime) -> str:
    return at_time(parse_predicate(predicate, "spark"), when).sql(dialect="spark")


def _expands(old: str | None, new: str | None, when: datetime) -> bool:
    """Edits this test knows to expand the frozen region (or keep it, aging with time)."""
    if old is None or old == new:
        return new is not None or old is None
    known = {("order_date < DATE'2025-01-08'", "order_date < DATE'2025-01-11'"),
             ("order_date < CURRENT_DATE - 3", "order_date < CURRENT_DATE - 5"),  # older rows: no
             ("customer_id = 1", "customer_id IN (1, 2)"), ("customer_id IN (1, 2)", "customer_id IN (1, 2, 3)"),
             ("customer_id = 1", "customer_id IN (1, 2, 3)")}
    return (old, new) in known and "CURRENT_DATE - 5" not in new


def test_frozen_regions_match_their_definition(spark, tmp_path):
    FrozenMachine.spark, FrozenMachine.base = spark, tmp_path
    run_state_machine_as_test(FrozenMachine, settings=settings(
        deadline=None, database=None, suppress_health_check=list(HealthCheck),
        phases=[Phase.explicit, Phase.generate], **PROFILE))


def test_an_aging_predicate_freezes_rows_as_time_passes_without_reinitializing(spark, tmp_path):
    env = Env(spark, tmp_path)
    env.create_source("orders", SOURCES["orders"],
                      [(k, 1, date(2025, 1, k), "open", Decimal("1.00")) for k in range(1, 11)])
    env.write({"recent": "SELECT order_id, order_date, amount FROM orders"},
              table_yml={"recent": "frozen_where: order_date < CURRENT_DATE - 5\n"})
    now = datetime(2025, 1, 8, tzinfo=timezone.utc)
    assert env.refresh(now=now)["recent"].refresh_action == FULL
    for step in range(1, 4):
        now += timedelta(days=1)
        # every order is repriced: only the active ones may change
        env.sql("UPDATE {orders} SET amount = amount + 1")
        record = env.refresh(now=now)["recent"]
        assert record.refresh_action == INCREMENTAL, record.state_message
        table = {r.order_id: r.amount for r in spark.read.format("delta").load(
            env.project("recent").table_path("recent")).collect()}
        # order k is active at refresh s while Jan k >= Jan 8+s - 5: it takes every repricing
        # until then and keeps the amount it had when it froze
        assert table == {k: Decimal("1.00") + min(step, max(0, k - 3)) for k in range(1, 11)}, (step, table)
    assert env.refresh(now=now)["recent"].refresh_action == NO_DATA
