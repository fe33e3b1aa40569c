"""GROUP BY over inner joins whose affected keys are named by a join column among the keys
(sql/incremental_rewrite/reached_keys.py), refreshed on Spark against the query recomputed at the
same versions: customers' lines through their orders (TPC-H Q10's shape) under changes of every
input, orders moved to another customer, NULL join keys, duplicates, deletes; a top-N over it;
and keys read through a column of another type (INT orders joined to BIGINT customers), which
the engine then matches row by row."""

from __future__ import annotations

import pytest

from dtcli.model import INCREMENTAL, SUCCEEDED
from tests.spark.harness import Env

pytestmark = pytest.mark.spark

SHAPE = ("FROM c, o, l, n WHERE c.ck = o.ck AND l.ok = o.ok AND o.day >= 3 AND l.flag = 'R' "
         "AND c.nk = n.nk GROUP BY c.ck, c.name, n.name")
DTS = {
    # MAX and COUNT(DISTINCT) are not kept from the DT's own rows: the groups are recomputed
    "revenue": f"SELECT c.ck, c.name, n.name AS nation, MAX(l.price) AS top, "
               f"COUNT(DISTINCT l.price) AS prices, SUM(l.price) AS total {SHAPE}",
    "top2": f"SELECT c.ck, c.name, SUM(l.price) AS total, n.name AS nation {SHAPE} "
            f"ORDER BY total DESC, c.ck LIMIT 2",
}


def test_groups_named_by_a_joined_key_refresh_exactly(spark, tmp_path, monkeypatch):
    from dtcli.sql.incremental_rewrite import affected_keys

    reached: list[int] = []          # changed items whose keys were named the new way, per refresh
    original = affected_keys.key_parts

    def spy(compiler, sel, plan, changed):
        reached.extend(changed)
        return original(compiler, sel, plan, changed)
    monkeypatch.setattr(affected_keys, "key_parts", spy)
    env = Env(spark, tmp_path)
    env.create_source("c", "ck BIGINT, name STRING, nk INT",
                      [(1, "ann", 1), (2, "bob", 1), (3, "cy", 2), (None, "nil", 2), (5, "dee", None)])
    env.create_source("o", "ok INT, ck INT, day INT",
                      [(10, 1, 5), (11, 1, 1), (12, 2, 4), (13, 3, 9), (14, None, 5), (15, 5, 5), (16, 3, 3)])
    env.create_source("l", "ok INT, price INT, flag STRING",
                      [(10, 5, "R"), (10, 5, "R"), (10, 7, "N"), (11, 3, "R"), (12, 4, "R"), (13, 8, "R"),
                       (14, 1, "R"), (15, 2, "R"), (16, None, "R"), (None, 9, "R")])
    env.create_source("n", "nk INT, name STRING", [(1, "north"), (2, "south"), (None, "none")])
    env.write(DTS)
    assert all(r.state == SUCCEEDED for r in env.refresh().values())

    def incremental() -> None:
        records = env.refresh()
        for name in DTS:
            record = records[name]
            assert record.state == SUCCEEDED, (name, record.state_message)
            assert record.refresh_action == INCREMENTAL, (name, record.refresh_action, record.state_message)
            env.check(name)

    # every input changes: a customer renamed, an order moved to another customer, lines added,
    # deleted and repriced, a nation renamed
    env.sql("UPDATE {c} SET name = 'bo' WHERE ck = 2")
    env.sql("UPDATE {o} SET ck = 2 WHERE ok = 13")
    env.sql("INSERT INTO {l} VALUES (12, 6, 'R'), (12, 6, 'R'), (13, NULL, 'R'), (17, 1, 'R')")
    env.sql("DELETE FROM {l} WHERE ok = 10 AND flag = 'N'")
    env.sql("UPDATE {l} SET price = price + 10 WHERE ok = 15")
    env.sql("UPDATE {n} SET name = 'southern' WHERE nk = 2")
    incremental()
    assert reached, "the keys were not named by the joined key"
    # lines only: each reaches its customer through its order
    env.sql("UPDATE {l} SET flag = 'N' WHERE ok = 12 AND price = 6")
    env.sql("INSERT INTO {l} VALUES (16, 20, 'R')")
    incremental()
    # orders only, keys read through o.ck (INT) where the DT holds c.ck (BIGINT): found row by row
    env.sql("UPDATE {o} SET day = 0 WHERE ok = 12")
    env.sql("INSERT INTO {o} VALUES (17, 1, 4), (18, NULL, 4)")
    env.sql("DELETE FROM {o} WHERE ok = 16")
    incremental()
    # customers deleted and added, a customer's nation changed, a NULL customer key
    env.sql("DELETE FROM {c} WHERE ck = 1")
    env.sql("INSERT INTO {c} VALUES (1, 'ann2', 2), (NULL, 'nil2', 1)")
    env.sql("UPDATE {c} SET nk = 1 WHERE ck = 3")
    incremental()


def test_keys_read_through_a_column_of_another_type_replace_the_stored_rows(spark, tmp_path):
    # '01' = 1 holds (the string is read as a number): the key read through o.ck is 1, an INT,
    # where the DT stores '01'; the engine finds the change row by row then (strategies/
    # incremental.py `_named_as_stored`), and the old row must not stay beside the new
    env = Env(spark, tmp_path)
    env.create_source("c", "ck STRING, name STRING", [("01", "ann"), ("2", "bob")])
    env.create_source("o", "ok INT, ck INT, v INT", [(10, 1, 5), (11, 2, 3)])
    env.write({"best": "SELECT c.ck, c.name, MAX(o.v) AS top FROM c, o WHERE c.ck = o.ck GROUP BY c.ck, c.name"})
    assert env.refresh()["best"].state == SUCCEEDED
    env.sql("UPDATE {o} SET v = 9 WHERE ok = 10")
    record = env.refresh()["best"]
    assert (record.state, record.refresh_action) == (SUCCEEDED, INCREMENTAL), record.state_message
    env.check("best")
