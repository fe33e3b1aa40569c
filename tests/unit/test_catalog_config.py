"""`catalog:` without a JVM: settings, qualified names in show/explain, what a run plans to
register or remove, and the Spark settings of the default (Derby) metastore."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from dtcli.engine.launch.spark_conf import catalog_conf
from dtcli.errors import ConfigError
from dtcli.model import Plan, RefreshStep, StepOptions
from dtcli.model.definitions import CatalogSpec
from dtcli.plan_parts import Layout
from dtcli.planning.catalog import catalog_work
from dtcli.project import load_project
from dtcli.state import catalog as state
from tests.helpers import dt, write_project
from tests.sched_helpers import write_source

SOURCES = "sources:\n  src: {path: data/src}\n"


def _project(tmp_path, config="catalog: {schema: analytics}\n"):
    root = write_project(tmp_path / "proj", {"d": "SELECT x FROM src", "e": "SELECT x FROM d"},
                         config=SOURCES + config)
    return load_project(root)


def test_catalog_schema_names_each_dt_and_a_target_may_publish_elsewhere(tmp_path):
    project = _project(tmp_path, "catalog: {schema: Analytics}\n"
                                 "targets:\n  prod: {catalog: {name: lake, schema: gold}}\n"
                                 "  dev: {catalog: null}\n")
    assert project.catalog == CatalogSpec("analytics")
    assert project.qualified_name("d") == "analytics.d"
    prod = load_project(project.root, target="prod")
    assert prod.qualified_name("d") == "lake.gold.d"
    assert load_project(project.root, target="dev").qualified_name("d") is None


@pytest.mark.parametrize("catalog, wrong", [
    ("{schema: 'my-schema'}", "catalog schema 'my-schema' is not an identifier"),
    ("{schema: analytics, name: '1x'}", "catalog name '1x' is not an identifier"),
    ("{name: lake}", "catalog needs a schema"),
    ("{schema: a, database: b}", "unknown catalog key 'database'"),
])
def test_bad_catalog_settings_exit_2_with_file_and_line_and_write_nothing(tmp_path, catalog, wrong):
    root = write_project(tmp_path / "proj", {"d": "SELECT x FROM src"},
                         config=SOURCES + f"catalog: {catalog}\n")
    with pytest.raises(ConfigError) as err:
        load_project(root)
    assert wrong in str(err.value) and str(err.value.file).endswith("dt_project.yml") and err.value.line == 9
    result = dt("validate", "-p", str(root))
    assert result.code == 2 and wrong in result.err
    assert not (root / "warehouse").exists()


def test_show_and_explain_json_carry_the_qualified_name_only_with_catalog(tmp_path):
    project = _project(tmp_path)
    write_source(project, [1])
    shown = dt("show", "dynamic", "tables", "-p", str(project.root), "--format", "json")
    assert shown.code == 0, shown.err
    assert {r["name"]: r["qualified_name"] for r in shown.json()} == {"d": "analytics.d", "e": "analytics.e"}
    explained = dt("explain", "e", "-p", str(project.root), "--format", "json")
    assert explained.json()["qualified_name"] == "analytics.e"

    plain = _project(tmp_path / "plain", "")
    write_source(plain, [1])
    assert "qualified_name" not in dt("show", "dynamic", "tables", "-p", str(plain.root),
                                      "--format", "json").json()[0]
    assert "qualified_name" not in dt("explain", "d", "-p", str(plain.root), "--format", "json").json()


def _plan(project, creating=()):
    steps = [RefreshStep(name=n, path=project.table_path(n), action="REINITIALIZE", trigger="CREATION",
                         sql="", inputs=[], definition_hash="h", refresh_mode="FULL") for n in creating]
    return Plan(run_id="r", project=project.name, warehouse=project.warehouse, data_timestamp="t",
                source_versions={}, steps=steps)


def test_a_run_registers_what_is_not_registered_where_it_should_be(tmp_path):
    project = _project(tmp_path)
    path = project.table_path
    # d exists, e is created by this run: both registered; a DT neither existing nor created is not
    regs, unregs = catalog_work(project, _plan(project, ["e"]), {"d"}, {})
    assert [(r.name, r.qualified_name, r.path, r.previous) for r in regs] == [
        ("d", "analytics.d", path("d"), None), ("e", "analytics.e", path("e"), None)]
    assert unregs == []
    assert catalog_work(project, _plan(project), set(), {}) == ([], [])

    done = {n: state.Event(n, state.REGISTERED, f"analytics.{n}", path(n)) for n in "de"}
    assert catalog_work(project, _plan(project), {"d", "e"}, done) == ([], [])   # nothing to do: no JVM

    # the last attempt failed: retried, with what went wrong before
    failed = {**done, "d": state.Event("d", state.FAILED, "analytics.d", path("d"), "unreachable")}
    regs, _ = catalog_work(project, _plan(project), {"d", "e"}, failed)
    assert [(r.name, r.retry) for r in regs] == [("d", "unreachable")]

    # moved to another schema: registered there, the old entry named for removal
    moved = {n: state.Event(n, state.REGISTERED, f"old.{n}", path(n)) for n in "de"}
    regs, _ = catalog_work(project, _plan(project), {"d", "e"}, moved)
    assert [(r.qualified_name, r.previous) for r in regs] == [("analytics.d", "old.d"),
                                                                    ("analytics.e", "old.e")]


def test_a_comment_edited_with_no_new_data_is_brought_to_the_table_by_the_catalog_work(tmp_path):
    project = _project(tmp_path)
    path = project.table_path
    done = {n: state.Event(n, state.REGISTERED, f"analytics.{n}", path(n)) for n in "de"}
    plan = _plan(project)
    options = StepOptions(layout=Layout(comment="second", comment_outdated=True))
    plan.steps = [RefreshStep(name="d", path=path("d"), action="NO_DATA", trigger="SCHEDULED", sql="", inputs=[],
                              definition_hash="h", refresh_mode="FULL", options=options)]
    regs, _ = catalog_work(project, plan, {"d", "e"}, done)
    assert [(r.name, r.qualified_name, r.comment) for r in regs] == [("d", "analytics.d", "second")]
    plan.steps[0].options = StepOptions(layout=Layout(comment="second", comment_outdated=False))
    assert catalog_work(project, plan, {"d", "e"}, done) == ([], [])


def test_a_dropped_dt_is_removed_from_the_metastore_and_without_catalog_nothing_happens(tmp_path):
    project = _project(tmp_path)
    events = {"gone": state.Event("gone", state.DROPPING, "analytics.gone", "/w/gone")}
    regs, unregs = catalog_work(project, _plan(project), set(), events)
    unregs = [asdict(u) for u in unregs]
    assert regs == [] and unregs == [{"name": "gone", "qualified_name": "analytics.gone", "path": "/w/gone"}]
    plain = _project(tmp_path / "plain", "")
    assert catalog_work(plain, _plan(plain, ["d"]), {"e"}, events) == ([], [])
    assert catalog_conf(plain) == {}


def test_catalog_events_are_kept_in_the_warehouse_without_a_jvm(tmp_path):
    warehouse = str(tmp_path / "wh")
    state.append(warehouse, [state.Event("d", state.FAILED, "a.d", "/p", "boom", "old.d")])
    state.append(warehouse, [state.Event("d", state.REGISTERED, "a.d", "/p")])
    assert state.current(warehouse)["d"].event == state.REGISTERED
    assert state.registered_as(state.Event("d", state.FAILED, "a.d", "/p", "x", "old.d")) == "old.d"


def test_the_default_metastore_is_derby_under_the_warehouse_and_a_team_s_own_is_left_alone(tmp_path):
    project = _project(tmp_path)
    conf = catalog_conf(project)
    home = f"{project.warehouse}/_dt/metastore"
    assert conf["spark.sql.catalogImplementation"] == "hive"
    assert conf["spark.hadoop.javax.jdo.option.ConnectionURL"] == \
        f"jdbc:derby:;databaseName={home}/metastore_db;create=true"
    assert conf["spark.sql.warehouse.dir"] == f"{home}/schemas"
    assert f"-Dderby.system.home={home}" in conf["spark.driver.extraJavaOptions"]

    remote = _project(tmp_path / "remote", "catalog: {schema: analytics}\ntargets:\n  team:\n"
                      "    spark: {conf: {spark.sql.catalogImplementation: hive,\n"
                      "                   spark.hadoop.hive.metastore.uris: 'thrift://metastore:9083'}}\n")
    assert catalog_conf(load_project(remote.root, target="team")) == {}
    plugin = _project(tmp_path / "uc", "catalog: {name: unity, schema: analytics}\n")
    assert catalog_conf(plugin) == {}


def test_commands_that_read_or_plan_stay_jvm_free_with_catalog_set(tmp_path):
    from datetime import datetime, timezone

    from tests.helpers import dt_process, no_java_env
    from tests.sched_helpers import fake_dt

    project = _project(tmp_path)
    write_source(project, [1])
    now = datetime.now(timezone.utc)
    for name in ("d", "e"):
        fake_dt(project, name, now)
    state.append(project.warehouse, [state.Event(n, state.REGISTERED, f"analytics.{n}", project.table_path(n))
                                     for n in ("d", "e")])
    for command in (["validate"], ["show", "dynamic", "tables"], ["explain", "e"], ["run"],
                    ["run", "--dry-run"]):
        result = dt_process(*command, "-p", str(project.root), env=no_java_env())
        assert result.returncode == 0, (command, result.stderr)
    assert "analytics.e" in dt_process("explain", "e", "-p", str(project.root), env=no_java_env()).stdout
