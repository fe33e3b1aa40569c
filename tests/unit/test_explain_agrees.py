"""Explain's operator table and the refresh mode tell one story: a DT refreshes incrementally
exactly when every row of its operator table does (no JVM)."""

from __future__ import annotations

import json

import pytest

from tests.helpers import dt, write_project

QUERIES = {
    "two_outer": "SELECT a.id, b.v AS bv, c.v AS cv FROM a LEFT JOIN b ON a.id = b.id LEFT JOIN c ON a.id = c.id",
    "one_outer": "SELECT a.id, b.v AS bv FROM a LEFT JOIN b ON a.id = b.id",
    "full_outer": "SELECT a.id, b.v AS bv FROM a FULL OUTER JOIN b ON a.id = b.id",
    "agg": "SELECT id, SUM(v) AS s, COUNT(*) AS n FROM a GROUP BY id",
    "distinct": "SELECT DISTINCT v FROM a",
    "window": "SELECT id, v, RANK() OVER (PARTITION BY id ORDER BY v) AS r FROM a",
    "union": "SELECT id, v FROM a UNION ALL SELECT id, v FROM b",
    "limit": "SELECT id FROM a ORDER BY id LIMIT 1",
    "nondeterministic": "SELECT id, rand() AS r FROM a",
    "scalar_agg": "SELECT COUNT(*) AS n FROM a",
    "except": "SELECT id, v FROM a EXCEPT SELECT id, v FROM b",
    "intersect_all": "SELECT id FROM a INTERSECT ALL SELECT id FROM b",
    "union_distinct": "SELECT id FROM a UNION SELECT id FROM b",
    "rollup": "SELECT id, SUM(v) AS s FROM a GROUP BY ROLLUP (id)",
    "hidden_key": "SELECT SUM(v) AS s FROM a GROUP BY id",
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = write_project(tmp_path_factory.mktemp("agree") / "p", QUERIES,
                         seeds={s: "id,v\n1,2\n" for s in ("a", "b", "c")})
    assert dt("seed", "-p", str(root)).code == 0
    return root


@pytest.mark.parametrize("name", sorted(QUERIES))
def test_the_mode_is_incremental_exactly_when_every_operator_is(project, name):
    result = dt("explain", name, "-p", str(project), "--format", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    operators = doc["operators"]
    assert operators
    every = all(op["incremental"] for op in operators)
    assert every == (doc["refresh_mode"] != "FULL"), (doc["refresh_mode"], doc["refresh_mode_reason"], operators)
