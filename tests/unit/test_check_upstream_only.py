"""`explain NAME` and `show rows NAME` check only that DT and its upstream (issue 25 item 2): they
say what a whole-project check says about it, and a broken table elsewhere does not stop them
(validate and run still report it)."""

from __future__ import annotations

import pytest

from dtcli import api
from dtcli.artifacts.typed_json import to_json
from tests.helpers import dt, write_project
from tests.sched_helpers import write_source

TABLES = {
    "clean": "{{ config(target_lag='downstream') }}\nSELECT x FROM src WHERE x > 0",
    "totals": "SELECT x % 2 AS parity, COUNT(*) AS n\nFROM {{ ref('clean') }}\nGROUP BY x % 2",
    "ranked": "{{ config(target_lag='5 minutes') }}\n"
              "SELECT x, RANK() OVER (PARTITION BY x % 3 ORDER BY x) AS r FROM {{ ref('clean') }}",
    "other": "SELECT x + 1 AS y FROM src",
}


@pytest.fixture
def root(tmp_path):
    from dtcli.project import load_project

    root = write_project(tmp_path / "p", TABLES, config="sources:\n  src: {path: data/src}\n")
    write_source(load_project(root), [1, 2, 3])
    return root


@pytest.mark.parametrize("name", sorted(TABLES))
def test_explain_of_the_upstream_check_is_the_whole_checks(root, name):
    whole = api.explain(api.check(root, use_cache=False), name)
    assert api.explain(api.check(root, use_cache=False, upstream_of=name), name) == whole
    # clean's lag is `downstream`: it comes from its consumers, which are not upstream of it
    if name == "clean":
        assert to_json(whole)["effective_lag"] == 300


def test_checks_only_the_upstream(root):
    checked = api.check(root, upstream_of="ranked")
    assert set(checked.modes) == {"clean", "ranked"}
    assert set(checked.snapshot.tables) == {"clean", "ranked"}


def test_a_broken_table_elsewhere_does_not_stop_explain(root):
    (root / "tables" / "other.sql").write_text("SELECT no_such_column FROM src\n")
    assert dt("validate", "-p", str(root)).code != 0
    result = dt("explain", "ranked", "-p", str(root), "--format", "json")
    assert result.code == 0, result.err
    assert result.json()["name"] == "ranked"
    assert dt("explain", "other", "-p", str(root)).code != 0
