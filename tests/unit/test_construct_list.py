"""docs/configuration.md's list of constructs ("Every construct and how it refreshes") is true to
the code (no JVM).

Each row of its two tables has example queries here; one project holds them all, checked once,
and `dt explain` must give each row's verdict: FULL for the FULL table; for the incremental
table an incremental mode, the row's rule among the rules that rewrote the query (no rule for
"—"), and the internal tables the row names. The other way round, the tests fail when code
gains a construct the list does not have: a rule module of dtcli/sql/rules/ no row names, a
shape the change compiler refuses (incremental_rewrite/shapes.py) or an advice explain gives
for a FULL construct (analysis/strategies.ADVICE) that no FULL example meets.
"""

from __future__ import annotations

import ast
import pkgutil
import re
from pathlib import Path

import pytest

from tests.helpers import dt, write_project

ROOT = Path(__file__).resolve().parents[2]
SECTION = "### Every construct and how it refreshes"
NONE = "—"
KEPT = "kept_aggregate_"

# Per row of the incremental table (its Construct cell, as written): example queries over the
# seeds a, b, c (columns id, v).
INCREMENTAL: dict[str, tuple[str, ...]] = {
    "`SELECT` list expressions, `WHERE`, a source or DT in `FROM`":
        ("SELECT a.id, a.v * 2 AS w FROM a WHERE a.v > 0",),
    "`UNION ALL`": ("SELECT id, v FROM a UNION ALL SELECT id, v FROM b",),
    "`WITH` (a CTE read once or several times)":
        ("WITH t AS (SELECT id, v FROM a WHERE v > 0) SELECT x.id, y.v FROM t AS x JOIN t AS y ON x.id = y.id",),
    "Inner join, comma join with its condition in `WHERE`":
        ("SELECT a.id, b.v FROM a JOIN b ON a.id = b.id", "SELECT a.id, b.v FROM a, b WHERE a.id = b.id"),
    "`LEFT` / `RIGHT` / `FULL OUTER JOIN` with an equality between both sides (`=` or `<=>`, in "
    "parentheses or not, `USING`), also after comma joins":
        ("SELECT a.id, b.v FROM a LEFT JOIN b ON (a.id = b.id)",
         "SELECT a.id, c.v FROM a, b LEFT JOIN c ON b.id = c.id WHERE a.id = b.id",
         "SELECT a.id, b.v FROM a FULL OUTER JOIN b ON a.id <=> b.id",
         "SELECT id, b.v FROM a RIGHT JOIN b USING (id)"),
    "`LEFT` / `RIGHT OUTER JOIN` without such an equality":
        ("SELECT a.id, b.v FROM a LEFT JOIN b ON a.v < b.v",),
    "Several outer, semi or anti joins in one `SELECT`":
        ("SELECT a.id, b.v AS bv, c.v AS cv FROM a LEFT JOIN b ON a.id = b.id LEFT JOIN c ON a.id = c.id",),
    "`LEFT SEMI JOIN`, `LEFT ANTI JOIN`":
        ("SELECT a.id FROM a LEFT SEMI JOIN b ON a.id = b.id", "SELECT a.id FROM a LEFT ANTI JOIN b ON a.id = b.id"),
    "`GROUP BY` with its keys selected":
        ("SELECT id, COUNT(*) AS n, SUM(v) AS s FROM a GROUP BY id",
         "SELECT id, MIN(v) AS lo, COUNT(DISTINCT v) AS d FROM a GROUP BY id HAVING COUNT(*) > 1"),
    "`GROUP BY` a key that is not selected": ("SELECT MAX(v) AS m FROM a GROUP BY id",),
    "Aggregate without `GROUP BY` (one row)": ("SELECT MAX(v) AS m, COUNT(*) AS n FROM a",
                                               ("SELECT COUNT(*) AS n, SUM(v) AS s FROM a",
                                                "aggregate_totals: false\n")),
    "Outermost `GROUP BY`, or aggregate without `GROUP BY`, whose aggregates are `COUNT(*)`, `COUNT`, `SUM` and "
    "`AVG` (outputs any expression over them and the keys, keys selected or not, `HAVING`; TPC-H Q1, Q5-Q9, Q12, "
    "Q14, Q17, Q19), unless its outputs are its keys, `COUNT(*)`, `COUNT` and `SUM` (own rows)":
        ("SELECT id, SUM(v) AS s FROM a GROUP BY id", "SELECT SUM(v) AS s FROM a GROUP BY id",
         "SELECT id, AVG(v) AS m, COUNT(*) AS n FROM a GROUP BY id HAVING SUM(v) > 1",
         "SELECT COUNT(*) AS n, SUM(v) AS s FROM a",
         "SELECT 100.0 * SUM(CASE WHEN id > 1 THEN v ELSE 0 END) / SUM(v) AS r FROM a"),
    "An aggregate of `COUNT(*)`, `COUNT`, `SUM` and `AVG` inside the query, with no query nested in it: a grouped "
    "(or one-row) derived table in `FROM`, or a subquery the rules made one (TPC-H Q11, Q15, Q17, Q18, Q20, Q22)":
        ("SELECT a.id, t.s FROM a JOIN (SELECT b.id, SUM(b.v) AS s FROM b GROUP BY b.id) AS t ON t.id = a.id",
         "SELECT a.id FROM a, (SELECT AVG(b.v) AS m FROM b) AS t WHERE a.v > t.m"),
    "`SELECT DISTINCT`": ("SELECT DISTINCT v FROM a",),
    "Window function with `PARTITION BY`": ("SELECT id, v, RANK() OVER (PARTITION BY id ORDER BY v) AS r FROM a",),
    "Window function without `PARTITION BY`":
        ("SELECT id, v, SUM(v) OVER (ORDER BY v) AS running FROM a",
         "SELECT id, LAG(v) OVER (ORDER BY id) AS previous FROM a"),
    "`LATERAL VIEW [OUTER]` and generators in `FROM` (`explode`, `posexplode`, `stack`, ...)":
        ("SELECT a.id, x FROM a LATERAL VIEW explode(sequence(1, a.v)) t AS x",
         "SELECT a.id, x.col FROM a, explode(sequence(1, a.v)) AS x"),
    "`UNION` (distinct)": ("SELECT id FROM a UNION SELECT id FROM b",),
    "`INTERSECT`, `EXCEPT` / `MINUS` (distinct)":
        ("SELECT id, v FROM a EXCEPT SELECT id, v FROM b", "SELECT id FROM a INTERSECT SELECT id FROM b",
         "SELECT id FROM a MINUS SELECT id FROM b"),
    "`INTERSECT ALL`, `EXCEPT ALL`":
        ("SELECT id FROM a INTERSECT ALL SELECT id FROM b", "SELECT id FROM a EXCEPT ALL SELECT id FROM b"),
    "`GROUP BY ROLLUP` / `CUBE` / `GROUPING SETS`, `WITH ROLLUP` / `WITH CUBE`":
        ("SELECT id, v, SUM(v) AS s, GROUPING(v) AS g FROM a GROUP BY ROLLUP (id, v)",
         "SELECT id, v, COUNT(*) AS n FROM a GROUP BY CUBE (id, v)",
         "SELECT id, v, COUNT(*) AS n FROM a GROUP BY GROUPING SETS ((id), (v), ())",
         "SELECT id, COUNT(*) AS n FROM a GROUP BY id WITH ROLLUP"),
    "Window function over a grouping-sets block (TPC-DS q36, q70, q86)":
        ("SELECT id, SUM(v) AS s, RANK() OVER (PARTITION BY GROUPING(id) ORDER BY SUM(v)) AS r "
         "FROM a GROUP BY ROLLUP (id)",),
    "`EXISTS` / `NOT EXISTS` as a `WHERE` conjunct, correlated in the subquery's `WHERE` by any comparisons":
        ("SELECT a.id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE b.id = a.id AND b.v <> a.v)",
         "SELECT a.id FROM a WHERE NOT EXISTS (SELECT 1 FROM b WHERE b.id = a.id)"),
    "`EXISTS` / `NOT EXISTS` under `OR` or in the `SELECT` list, correlated by equalities":
        ("SELECT a.id FROM a WHERE a.v > 5 OR EXISTS (SELECT 1 FROM b WHERE b.id = a.id)",
         "SELECT a.id, NOT EXISTS (SELECT 1 FROM b WHERE b.id = a.id) AS no_b FROM a"),
    "`EXISTS` / `NOT EXISTS` under `OR`, correlated by other comparisons (TPC-H Q21's `<>`)":
        ("SELECT a.id FROM a WHERE a.v > 5 OR EXISTS (SELECT 1 FROM b WHERE b.id = a.id AND b.v <> a.v)",),
    "Uncorrelated `EXISTS` / `NOT EXISTS` outside a `WHERE` conjunct":
        ("SELECT a.id FROM a WHERE a.v > 5 OR EXISTS (SELECT 1 FROM b WHERE b.v > 3)",),
    "`IN (SELECT …)` as a `WHERE` conjunct (also spelled `= ANY (SELECT …)`), over one or several columns, nested "
    "(TPC-H Q20)":
        ("SELECT a.id FROM a WHERE a.v = ANY (SELECT b.v FROM b)",
         "SELECT a.id FROM a WHERE a.id IN (SELECT b.id FROM b GROUP BY b.id HAVING SUM(b.v) > 3)",
         "SELECT a.id FROM a WHERE (a.id, a.v) IN (SELECT b.id, b.v FROM b)",
         "SELECT a.id FROM a WHERE a.id IN (SELECT b.id FROM b WHERE b.v IN (SELECT c.v FROM c WHERE c.id = b.id))"),
    "`IN (SELECT …)` over one column under `OR` or in the `SELECT` list":
        ("SELECT a.id FROM a WHERE a.v > 5 OR a.id IN (SELECT b.id FROM b)",
         "SELECT a.id, a.id IN (SELECT b.id FROM b) AS in_b FROM a"),
    "`NOT IN (SELECT …)` over one column (also spelled `<> ALL (SELECT …)` as a `WHERE` conjunct), uncorrelated or "
    "correlated by equalities (a NULL `x`, or a NULL in a non-empty set, keeps no row)":
        ("SELECT a.id FROM a WHERE a.v <> ALL (SELECT b.v FROM b)",
         "SELECT a.id FROM a WHERE a.id NOT IN (SELECT b.id FROM b)",
         "SELECT a.id FROM a WHERE a.id NOT IN (SELECT b.id FROM b WHERE b.v = a.v)"),
    "Uncorrelated scalar subquery of one aggregate (TPC-H Q11, Q15, Q22)":
        ("SELECT a.id FROM a WHERE a.v > (SELECT AVG(b.v) FROM b)",),
    "Correlated scalar subquery of one aggregate, correlated by equalities (TPC-H Q2, Q17, Q20)":
        ("SELECT a.id FROM a WHERE a.v > (SELECT 0.5 * AVG(b.v) FROM b WHERE b.id = a.id)",
         "SELECT a.id, (SELECT COUNT(*) FROM b WHERE b.id = a.id) AS n FROM a"),
    "Scalar subquery in `HAVING` or in a grouped `SELECT` list":
        ("SELECT a.id, SUM(a.v) AS s FROM a GROUP BY a.id HAVING SUM(a.v) > (SELECT AVG(b.v) FROM b)",),
    "Scalar subquery that is not one aggregate (a `GROUP BY` of one group, ...), correlated by equalities or not":
        ("SELECT a.id, (SELECT b.v FROM b WHERE b.id = a.id GROUP BY b.v) AS bv FROM a",
         "SELECT a.id, (SELECT MAX(b.v) FROM b GROUP BY b.id HAVING b.id = 1) AS bv FROM a"),
    "Subqueries in a block with a `LATERAL VIEW`":
        ("SELECT a.id, x FROM a LATERAL VIEW explode(sequence(1, a.v)) t AS x "
         "WHERE EXISTS (SELECT 1 FROM b WHERE b.id = a.id)",),
    "`ORDER BY … LIMIT n` (top-N) over a filter of one input":
        ("SELECT id, v FROM a WHERE v > 0 ORDER BY v DESC LIMIT 3",),
    "`ORDER BY … LIMIT n` over anything else (a join, an aggregate, a set operation, ...)":
        ("SELECT id, SUM(v) AS s FROM a GROUP BY id ORDER BY s DESC LIMIT 3",
         "SELECT a.id, b.v FROM a JOIN b ON a.id = b.id ORDER BY b.v LIMIT 2",
         "SELECT id FROM a UNION SELECT id FROM b ORDER BY id LIMIT 2"),
    "Top-N with `OFFSET`, or sorted by an expression that is not an output":
        ("SELECT id FROM a GROUP BY id ORDER BY SUM(v) DESC LIMIT 2",
         "SELECT id, COUNT(*) AS n FROM a GROUP BY id ORDER BY n LIMIT 2 OFFSET 1"),
    "`LIMIT` without `ORDER BY`": ("SELECT id, COUNT(*) AS n FROM a GROUP BY id LIMIT 2",),
    "`ORDER BY` without `LIMIT`, `SORT BY`, `DISTRIBUTE BY`, `CLUSTER BY`":
        ("SELECT id, v FROM a ORDER BY v", "SELECT id FROM a SORT BY id",
         "SELECT id FROM a DISTRIBUTE BY id", "SELECT id FROM a CLUSTER BY id"),
}

# Per row of the FULL table: example queries (a (query, table YAML) pair where the config matters).
FULL: dict[str, tuple] = {
    "Nondeterministic functions: `rand()`, `uuid()`, `shuffle()`, ...":
        ("SELECT id, rand() AS r FROM a", "SELECT id, uuid() AS u FROM a",
         "SELECT id, shuffle(array(id, v)) AS s FROM a"),
    "Time functions: `current_timestamp()`, `current_date()`, `now()`, `unix_timestamp()` without an argument, ...":
        ("SELECT id, current_timestamp() AS t FROM a", "SELECT id FROM a WHERE id > year(current_date())",
         "SELECT id, now() AS t FROM a", "SELECT id, unix_timestamp() AS t FROM a"),
    "User-defined functions": ("SELECT id, my_udf(v) AS u FROM a",),
    "`LATERAL` subqueries (`FROM a, LATERAL (SELECT …)`)":
        ("SELECT a.id, s.m FROM a, LATERAL (SELECT MAX(b.v) AS m FROM b WHERE b.id = a.id) AS s",),
    "`WITH RECURSIVE`":
        ("WITH RECURSIVE r(n) AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r",),
    "`TABLESAMPLE`": ("SELECT id FROM a TABLESAMPLE (10 PERCENT)",),
    "`PIVOT`, `UNPIVOT`":
        ("SELECT * FROM a PIVOT (SUM(v) FOR id IN (1, 2))", "SELECT * FROM a UNPIVOT (val FOR col IN (v))"),
    "Table functions that read data (`read_files(...)`, ...)": ("SELECT * FROM read_files('/tmp/x')",),
    "`LIMIT` or `OFFSET` inside a subquery":
        ("SELECT id FROM (SELECT id FROM a ORDER BY id LIMIT 1) AS s",
         "SELECT s.id FROM (SELECT id FROM a ORDER BY id OFFSET 1) AS s"),
    "`LIMIT` that is not a number": ("SELECT id FROM a ORDER BY id LIMIT (SELECT 1)",),
    "`SELECT DISTINCT … ORDER BY` an expression over columns it does not select, with `LIMIT`":
        ("SELECT DISTINCT id FROM a ORDER BY v LIMIT 2",),
    "Top-N with `frozen_where`":
        (("SELECT id, SUM(v) AS s FROM a GROUP BY id ORDER BY s LIMIT 2", 'frozen_where: "id < 0"\n'),),
    "`FULL OUTER JOIN` without an equality between both sides":
        ("SELECT a.id, b.v FROM a FULL OUTER JOIN b ON a.v < b.v",),
    "`LEFT` / `RIGHT OUTER JOIN` without an equality, whose preserved side's columns the query does not read":
        ("SELECT b.v FROM a LEFT JOIN b ON b.v > 1",),
    "`DISTINCT` over an aggregation or over window functions":
        ("SELECT DISTINCT id, SUM(v) AS s FROM a GROUP BY id",
         "SELECT DISTINCT id, RANK() OVER (PARTITION BY id ORDER BY v) AS r FROM a"),
    "A window over an aggregate without `GROUP BY`, or partitioned by other than the `GROUP BY` keys":
        ("SELECT SUM(v) AS s, RANK() OVER (ORDER BY SUM(v)) AS r FROM a",
         "SELECT id, SUM(SUM(v)) OVER (PARTITION BY MAX(v)) AS t FROM a GROUP BY id"),
    "A generator (`explode(...)`) in the `SELECT` list of an aggregation, a window or `DISTINCT`":
        ("SELECT DISTINCT explode(array(id, v)) AS x FROM a",),
    "`QUALIFY` without a window function": ("SELECT id FROM a QUALIFY id > 1",),
    "`QUALIFY` or `DISTINCT` over grouping sets; a window with `IGNORE NULLS`, `FILTER` or `DISTINCT` over them":
        ("SELECT id, SUM(v) AS s FROM a GROUP BY ROLLUP (id) QUALIFY RANK() OVER (ORDER BY SUM(v)) = 1",
         "SELECT DISTINCT id, SUM(v) AS s FROM a GROUP BY ROLLUP (id)",
         "SELECT id, SUM(v) AS s, FIRST_VALUE(SUM(v)) IGNORE NULLS OVER (ORDER BY id) AS f FROM a GROUP BY ROLLUP (id)"),
    "`UNION` / `INTERSECT` / `EXCEPT` whose branch columns dt cannot bind (a `*` over an input it cannot read, "
    "`BY NAME`)":
        ("SELECT id, v FROM a UNION BY NAME SELECT v, id FROM b",),
    "Subqueries dt does not turn into joins: correlated outside the subquery's `WHERE` or to a query two levels "
    "out; an `EXISTS` / `IN` over a correlated subquery that aggregates without `GROUP BY`; a correlated `NOT IN` "
    "or scalar subquery whose correlation is not equalities; a correlated scalar subquery with `DISTINCT`; `NOT "
    "IN` over several columns; `IN` over several columns under `OR` or in the `SELECT` list; a comparison with "
    "`ANY` or `ALL (SELECT …)` other than a `WHERE` conjunct `x = ANY (…)` or `x <> ALL (…)` (which are `IN` and "
    "`NOT IN`); a subquery in a list of `IN` values":
        ("SELECT a.id FROM a WHERE EXISTS (SELECT a.v FROM b WHERE b.id = 1 GROUP BY a.v)",
         "SELECT a.id FROM a WHERE EXISTS (SELECT 1 FROM b WHERE EXISTS "
         "(SELECT 1 FROM c WHERE c.id = a.id AND c.v = b.v))",
         "SELECT a.id FROM a WHERE EXISTS (SELECT COUNT(*) FROM b WHERE b.id = a.id)",
         "SELECT a.id FROM a WHERE a.id NOT IN (SELECT b.id FROM b WHERE b.v < a.v)",
         "SELECT a.id, (SELECT MAX(b.v) FROM b WHERE b.id < a.id) AS m FROM a",
         "SELECT a.id, (SELECT DISTINCT b.v FROM b WHERE b.id = a.id) AS bv FROM a",
         "SELECT a.id FROM a WHERE (a.id, a.v) NOT IN (SELECT b.id, b.v FROM b)",
         "SELECT a.id FROM a WHERE a.v > 5 OR (a.id, a.v) IN (SELECT b.id, b.v FROM b)",
         "SELECT a.id FROM a WHERE a.v > ALL (SELECT b.v FROM b)",
         "SELECT a.id FROM a WHERE a.v > ANY (SELECT b.v FROM b)",
         "SELECT a.id FROM a WHERE a.id > 3 OR a.v = ANY (SELECT b.v FROM b)",
         "SELECT a.id FROM a WHERE a.id IN (1, (SELECT MAX(b.id) FROM b))"),
}

# Refusals of incremental_rewrite/shapes.py no query reaches, and why: the checked query they
# would see is always written otherwise, or Spark itself rejects the query
UNREACHED = {
    "more than one outer, semi or anti join in one SELECT is refreshed FULL; split it into dynamic tables of one "
    "such join each": "rules/keyed_joins.py nests every keyed join after the first",
    "NATURAL JOIN is refreshed FULL": "qualifying the query writes a NATURAL JOIN's ON condition",
    "with USING after other joins is refreshed FULL; write ON with qualified columns":
        "qualifying the query writes USING as ON over qualified columns",
    "join between FROM items without names is refreshed FULL": "qualifying the query names every FROM item",
    "JOIN is refreshed FULL": "a join method (ASOF, POSITIONAL, ...): Spark has none",
    "DISTINCT ON is refreshed FULL": "Spark has no DISTINCT ON",
    "SELECT DISTINCT * is refreshed FULL; name the columns": "qualifying the query expands the star",
    "does not name an output column": "Spark rejects a GROUP BY position past the outputs",
    "an aggregate in GROUP BY cannot be refreshed incrementally": "Spark rejects an aggregate in GROUP BY",
}

# ADVICE entries no FULL example meets, and why: explain gives them only for a query it could not
# bind to its inputs' columns (the rules, which rewrite subqueries and split top-Ns, need them)
UNBOUND_ONLY = {"EXISTS", "scalar", "LIMIT", "OFFSET"}


def _rows() -> tuple[list[list[str]], list[list[str]]]:
    """The section's two tables, as their rows' cells (header and rule lines left out)."""
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    assert SECTION in text
    body = text.split(SECTION, 1)[1].split("\n#", 1)[0]
    tables, current = [], None
    for line in body.splitlines():
        if line.startswith("|"):
            if current is None:
                current = []
                tables.append(current)
            current.append([c.strip() for c in line.strip().strip("|").split(" | ")])
        else:
            current = None
    assert len(tables) == 2, f"{len(tables)} tables under {SECTION!r}"
    return tables[0][2:], tables[1][2:]


def _examples() -> dict[str, tuple[str, str | None, str]]:
    """name -> (query, table YAML, the row it is an example of)."""
    out = {}
    for kind, rows in (("inc", INCREMENTAL), ("full", FULL)):
        for r, (construct, examples) in enumerate(rows.items()):
            for k, ex in enumerate(examples):
                sql, yml = ex if isinstance(ex, tuple) else (ex, None)
                out[f"{kind}{r}_{k}"] = (sql, yml, construct)
    return out


@pytest.fixture(scope="module")
def explained(tmp_path_factory) -> dict[str, dict]:
    """`dt explain`'s JSON of every example, from one project checked once."""
    from dtcli import api
    from dtcli.artifacts.typed_json import to_json
    from dtcli.planning.explain import explain
    from dtcli.project import load_project

    examples = _examples()
    root = write_project(tmp_path_factory.mktemp("constructs") / "p", {n: e[0] for n, e in examples.items()},
                         table_yml={n: e[1] for n, e in examples.items() if e[1]},
                         seeds={s: "id,v\n1,2\n" for s in ("a", "b", "c")})
    assert dt("seed", "-p", str(root)).code == 0
    checked = api.check(load_project(root))
    return {n: to_json(explain(checked, n)) for n in examples}


def _by_row(explained: dict[str, dict], construct: str) -> list[tuple[str, dict]]:
    return [(sql, explained[n]) for n, (sql, _, row) in _examples().items() if row == construct]


def test_the_list_has_a_row_for_every_construct_tried_here_and_no_other():
    incremental, full = _rows()
    assert all(len(r) == 4 for r in incremental), [r for r in incremental if len(r) != 4]
    assert all(len(r) == 2 for r in full), [r for r in full if len(r) != 2]
    assert [r[0] for r in incremental] == list(INCREMENTAL)
    assert [r[0] for r in full] == list(FULL)


@pytest.mark.parametrize("row", range(len(INCREMENTAL)))
def test_an_incremental_row_refreshes_as_it_says(explained, row):
    construct, _, state, rule = _rows()[0][row]
    for sql, doc in _by_row(explained, construct):
        said = f"{construct}: {sql}\n  {doc['refresh_mode']} {doc['refresh_mode_reason']}"
        assert doc["refresh_mode"] != "FULL", said
        roles = [t["role"] for t in doc["internal_tables"]]
        kept = [r for r in roles if r.startswith(KEPT)]
        rules = {w["rule"] for w in doc["rewrites"]} | ({"top_n"} if doc["top_n"] else set()) | \
            {r for r in roles if r == "aggregate_totals"} | ({"kept_aggregates"} if kept else set())
        if rule == NONE:
            assert not rules, (said, rules)
        else:
            assert rule.strip("`") in rules, (said, rules)
        # a subquery's aggregate kept as totals (`kept_aggregate_<n>`) beside the row's own state
        expected = re.match(r"`(\w+)`", state)
        own = [expected.group(1)] if expected and not expected.group(1).startswith(KEPT) else []
        assert [r for r in roles if r not in kept] == own, (said, roles, state)
        assert not kept or f"`{KEPT}<n>`" in state, (said, roles, state)


@pytest.mark.parametrize("row", range(len(FULL)))
def test_a_full_row_is_full(explained, row):
    construct = _rows()[1][row][0]
    for sql, doc in _by_row(explained, construct):
        assert doc["refresh_mode"] == "FULL", f"{construct}: {sql} is {doc['refresh_mode']}"


def test_every_rule_of_the_rules_package_has_a_row():
    import dtcli.sql.rules as rules

    modules = {m.name for m in pkgutil.iter_modules(rules.__path__) if not m.name.startswith("_")}
    assert {r.__module__.rsplit(".", 1)[1] for r in rules.RULES} | \
        {m.__name__.rsplit(".", 1)[1] for m in rules.SPLITS} == modules
    named = {r[3].strip("`") for r in _rows()[0]} - {NONE}
    assert named == modules


def _full_reasons(explained: dict[str, dict]) -> str:
    """Every reason and advice explain gives for the FULL examples, one text."""
    out = []
    for name, doc in explained.items():
        if name.startswith("full"):
            out.append(doc["refresh_mode_reason"] or "")
            out += [c for op in doc["operators"] if not op["incremental"] for c in op["considerations"]]
    return "\n".join(out)


def test_every_shape_the_change_compiler_refuses_has_a_full_example(explained):
    """The messages of incremental_rewrite/shapes.py's refusals (their fixed text) each appear in
    what explain says of some FULL example."""
    path = ROOT / "dtcli" / "sql" / "incremental_rewrite" / "shapes.py"
    said = _full_reasons(explained)
    missing = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Unsupported" and node.args:
            arg = node.args[0]
            parts = [arg.value] if isinstance(arg, ast.Constant) else [
                v.value for v in getattr(arg, "values", []) if isinstance(v, ast.Constant)]
            fixed = max(parts, key=len, default="").strip()
            if fixed and fixed not in said and fixed not in UNREACHED:
                missing.append(fixed)
    assert not missing, missing


def test_every_advice_for_a_full_construct_has_a_full_example(explained):
    from dtcli.sql.analysis.strategies import ADVICE

    said = _full_reasons(explained)
    assert set(ADVICE) >= UNBOUND_ONLY
    assert [k for k, advice in ADVICE.items() if k not in UNBOUND_ONLY and advice not in said] == []
