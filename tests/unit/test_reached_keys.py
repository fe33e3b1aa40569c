"""Affected keys named by the changes and the few inputs leading to a join column among the
GROUP BY keys (sql/incremental_rewrite/reached_keys.py), without Spark: which inputs the key
query reads, and which keys the DT's rows are then named by."""

from __future__ import annotations

from dtcli.sql.incremental_rewrite import Bindings, DeltaCompiler, KeySet

# TPC-H Q10's shape: customers' revenue over their orders' lines, grouped by the customer's
# columns and its nation's name
Q10 = ("SELECT c.ck, c.name, SUM(l.price) AS revenue, n.name AS nation, MAX(l.price) AS top "
       "FROM c AS c, o AS o, l AS l, n AS n "
       "WHERE c.ck = o.ck AND l.ok = o.ok AND o.day >= 3 AND l.flag = 'R' AND c.nk = n.nk "
       "GROUP BY c.ck, c.name, n.name")
INPUTS = ["c", "o", "l", "n"]       # views __dt_i0_* .. __dt_i3_*


def keyed(sql: str, changed: set[str]):
    queries: list[str] = []

    def materialize(query):
        queries.append(query.sql(dialect="spark"))
        return KeySet(f"__dt_ktest{len(queries)}")

    return DeltaCompiler(Bindings.for_inputs(INPUTS, changed), materialize).keyed(sql), queries


def test_a_changed_customer_or_order_names_its_customer_without_reading_the_lines():
    found, queries = keyed(Q10, {"c", "o"})
    assert found.positions == [0] and found.keys.of == (0,)      # the rows named by c.ck alone
    assert queries == ["SELECT c.ck AS __dt_c0 FROM __dt_i0_both AS c UNION ALL "
                       "SELECT o.ck AS __dt_c0 FROM __dt_i1_both AS o WHERE o.day >= 3"]
    # the recompute is restricted by that key only, at the new version
    text = found.query.sql(dialect="spark")
    assert "__dt_key.__dt_c0 IS NOT DISTINCT FROM c.ck" in text and "__dt_c1" not in text and "_old" not in text


def test_a_changed_line_reaches_its_customer_through_orders_only():
    found, queries = keyed(Q10, {"l"})
    assert found.keys.of == (0,)
    assert queries == ["SELECT o.ck AS __dt_c0 FROM __dt_i2_both AS l JOIN __dt_i1_new AS o "
                       "ON l.ok = o.ok WHERE l.flag = 'R' AND o.day >= 3"]


def test_a_changed_nation_reaches_customers_through_its_key():
    _, queries = keyed(Q10, {"n"})
    assert queries == ["SELECT c.ck AS __dt_c0 FROM __dt_i3_both AS n JOIN __dt_i0_new AS c ON n.nk = c.nk"]


def test_keys_of_an_input_standing_apart_keep_the_terms():
    # a line's flag is a key of an input two joins away from the customer: left out, the groups
    # could be far coarser, so the keys are found by the terms as before
    sql = ("SELECT c.ck, l.flag, MAX(l.price) AS top FROM c AS c, o AS o, l AS l "
           "WHERE c.ck = o.ck AND l.ok = o.ok GROUP BY c.ck, l.flag")
    found, queries = keyed(sql, {"c"})
    assert found.keys.of is None and found.positions == [0, 1]
    assert "__dt_i2_" in queries[0]             # the term, reading the lines
