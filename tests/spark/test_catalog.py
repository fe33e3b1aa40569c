"""DTs registered as tables by name (`catalog:`), in-process on the shared SparkSession: its
session catalog stands in for the metastore (the registration is the same SQL; the Derby and
remote metastores are exercised through spark-submit in tests/e2e/test_catalog_submit.py)."""

from __future__ import annotations

import pytest
from deltalake import DeltaTable

from dtcli import api
from dtcli.data_tests import TEST_FAILED
from dtcli.engine.runtime.catalog import location
from dtcli.events import to_wire
from dtcli.model import FAILED, SUCCEEDED
from dtcli.project import load_project
from dtcli.state import catalog as catalog_state
from tests.helpers import write_project
from tests.sched_helpers import SRC_CONFIG, in_process, write_source

pytestmark = pytest.mark.spark


def _project(tmp_path, schema, tables, yml=None):
    root = write_project(tmp_path / "proj", tables, table_yml=yml,
                         config=SRC_CONFIG + f"catalog: {{schema: {schema}}}\n")
    project = load_project(root)
    write_source(project, [1, 2, 3])
    return project


def _run(spark, root, events=None, launcher=None, **kw):
    checked = api.check(root, with_stats=True)
    return api.run(checked, launcher=launcher or in_process(spark),
                   on_event=((lambda e: events.append(to_wire(e))) if events is not None else lambda e: None), **kw)


def _no_spark(project, plan, on_event, lock=None):
    raise AssertionError(f"no Spark application expected, plan: {plan.to_json()}")


def _comment(spark, qualified):
    rows = spark.sql(f"DESCRIBE TABLE EXTENDED {qualified}").collect()
    return next((r[1] for r in rows if (r[0] or "").strip() == "Comment"), None)


def _same(found, path):
    return found.removeprefix("file:").rstrip("/") == path.rstrip("/")


def test_a_dt_is_a_table_by_name_through_creation_reinitialize_config_change_and_drop(spark, tmp_path):
    project = _project(tmp_path, "cat_life", {"d": "SELECT x FROM src", "o": "SELECT x FROM src"},
                       {"d": "comment: first\n"})
    events = []
    result = _run(spark, project.root, events, all_tables=True)
    assert {r.state for r in result.records} == {SUCCEEDED}
    assert sorted(r.x for r in spark.table("cat_life.d").collect()) == [1, 2, 3]
    assert _same(location(spark, "cat_life.d"), project.table_path("d"))
    assert _comment(spark, "cat_life.d") == "first"
    said = {e["name"]: e["outcome"] for e in events if e.get("event") == "catalog"}
    assert said == {"d": "REGISTERED", "o": "REGISTERED"}

    # registered and current: a run with nothing due starts no Spark application
    assert not _run(spark, project.root, launcher=_no_spark).launched

    # REINITIALIZE (new query, new columns) and a comment change: the name reads the new table
    (project.root / "tables" / "d.sql").write_text("SELECT x, x * 2 AS y FROM src\n")
    (project.root / "tables" / "d.yml").write_text("comment: second\n")
    write_source(project, [4])
    _run(spark, project.root, all_tables=True)
    assert spark.table("cat_life.d").columns == ["x", "y"]
    assert sorted(r.y for r in spark.table("cat_life.d").collect()) == [2, 4, 6, 8]
    assert _comment(spark, "cat_life.d") == "second"

    # a comment edited while no input changed: NO_DATA, and the name shows the new comment
    (project.root / "tables" / "d.yml").write_text("comment: third\n")
    quiet = _run(spark, project.root, all_tables=True)
    assert {r.name: r.refresh_action for r in quiet.records}["d"] == "NO_DATA"
    assert _comment(spark, "cat_life.d") == "third"

    # a refresh whose rows break a data test commits nothing: the name reads the last good rows
    (project.root / "tables" / "d.yml").write_text(
        "comment: third\ndata_tests:\n  - expression_is_true: {expression: 'x < 10'}\n")
    write_source(project, [50])
    failed = {r.name: r for r in _run(spark, project.root, all_tables=True).records}
    assert (failed["d"].state, failed["d"].state_code) == (FAILED, TEST_FAILED), failed["d"].state_message
    assert sorted(r.y for r in spark.table("cat_life.d").collect()) == [2, 4, 6, 8]
    DeltaTable(project.sources["src"].path).delete("x = 50")      # fixed: d's next refresh passes

    # an orphan (its file removed) stays registered until it is dropped
    (project.root / "tables" / "o.sql").unlink()
    _run(spark, project.root, all_tables=True)
    assert spark.catalog.tableExists("cat_life.o")

    said = []
    for name in ("d", "o"):
        api.drop(load_project(project.root), name, launcher=in_process(spark),
                 on_event=lambda e: said.append(to_wire(e)))
    assert not spark.catalog.tableExists("cat_life.d") and not spark.catalog.tableExists("cat_life.o")
    assert [e["outcome"] for e in said if e["event"] == "catalog"] == ["UNREGISTERED", "UNREGISTERED"]
    assert {e.event for e in catalog_state.current(project.warehouse).values()} == {"UNREGISTERED"}

    # the next run creates d anew, and registers it again
    _run(spark, project.root, all_tables=True)
    assert sorted(r.x for r in spark.table("cat_life.d").collect()) == [1, 2, 3, 4]


def test_a_failed_registration_keeps_the_refresh_and_the_next_run_retries_and_says_so(spark, tmp_path):
    project = _project(tmp_path, "cat_fail", {"d": "SELECT x FROM src"})
    other = str(tmp_path / "other")
    spark.range(1).write.format("delta").save(other)
    spark.sql("CREATE SCHEMA IF NOT EXISTS cat_fail")
    spark.sql(f"CREATE TABLE cat_fail.d USING delta LOCATION '{other}'")      # somebody else's

    events = []
    result = _run(spark, project.root, events, all_tables=True)
    assert [r.state for r in result.records] == [SUCCEEDED]
    failure = next(e for e in events if e.get("event") == "catalog")
    assert failure["outcome"] == "FAILED"
    assert "cat_fail.d already exists at" in failure["message"]
    assert "Spark's session catalog" in failure["message"] and "the next dt run retries" in failure["message"]
    assert spark.table("cat_fail.d").count() == 1          # the other table is left alone

    spark.sql("DROP TABLE cat_fail.d")
    events = []
    again = _run(spark, project.root, events)              # nothing due: Spark only to register
    assert again.launched and again.records == []
    registered = next(e for e in events if e.get("event") == "catalog")
    assert registered["outcome"] == "REGISTERED" and registered["retried"]
    assert sorted(r.x for r in spark.table("cat_fail.d").collect()) == [1, 2, 3]


def test_moving_dts_to_another_schema_removes_them_from_the_old_one(spark, tmp_path):
    project = _project(tmp_path, "cat_old", {"d": "SELECT x FROM src"})
    _run(spark, project.root, all_tables=True)
    yml = project.root / "dt_project.yml"
    yml.write_text(yml.read_text().replace("cat_old", "cat_new"))
    _run(spark, project.root)
    assert spark.catalog.tableExists("cat_new.d") and not spark.catalog.tableExists("cat_old.d")
