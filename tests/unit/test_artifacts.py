"""The files dt writes for other tools (dtcli/artifacts): the JSON Schemas published in docs/schemas/
are the classes', real outputs validate against them, and a file of another schema_version is
upgraded or refused with a message that says which (no JVM)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

import pytest

from dtcli import artifacts
from dtcli.api import run_results, testing
from dtcli.api.runs import RunResult, no_data_records
from dtcli.api.unit_tests import UnitResult
from dtcli.artifacts.run_results import RUN_RESULTS, DataTestResults, RunResults, UnitTestResults
from dtcli.artifacts.typed_json import JSON, from_json, optional_field, to_json
from dtcli.artifacts.versions import ArtifactKind, ArtifactVersionError, set_version
from dtcli.model import FAILED, FULL, INCREMENTAL, SKIPPED, SUCCEEDED, Plan, RefreshRecord, RefreshStep, StepOptions
from dtcli.plan_parts import LagTarget
from dtcli.planning.scheduler import Decision
from dtcli.unit_tests import UnitTest
from tests.artifact_helpers import SCHEMAS, published_schema, schema_errors
from tests.helpers import write_project

START = datetime(2026, 11, 26, 10, tzinfo=timezone.utc)
CHECK = {"name": "not_null_orders_id", "unique_id": "test.p.not_null_orders_id.ab12", "status": "warn",
         "failures": 2, "message": "data test not_null_orders_id failed: 2 rows", "kind": "test",
         "test": "not_null", "table": "orders", "column": "id", "action": "warn", "samples": [{"id": None}]}


@pytest.mark.parametrize("kind", artifacts.KINDS, ids=lambda k: k.name)
def test_the_published_schema_is_the_classes(kind):
    """A field changed in a class changes the file in docs/schemas/ (python -m dtcli.artifacts):
    a consumer's contract never drifts from what dt writes."""
    from dtcli.artifacts.__main__ import schema_text

    path = SCHEMAS / kind.schema_file
    assert path.is_file(), f"run: python -m dtcli.artifacts docs/schemas ({path} is missing)"
    assert path.read_text(encoding="utf-8") == schema_text(kind), "run: python -m dtcli.artifacts docs/schemas"
    assert published_schema(kind.name)["$id"].endswith(f"{kind.name}:v{kind.version}")
    from jsonschema import Draft202012Validator

    Draft202012Validator.check_schema(published_schema(kind.name))      # a schema a validator accepts


def _record(name, state, action, *, tests=None, message=None):
    return RefreshRecord(name=name, state=state, refresh_action=action, refresh_trigger="SCHEDULED",
                         data_timestamp="2026-11-26T10:00:00+00:00", refresh_start_time="2026-11-26T10:00:00+00:00",
                         refresh_end_time="2026-11-26T10:00:02.5+00:00", run_id="r1", state_message=message,
                         num_inserted_rows=3, source_versions={"src": 4}, table_version=7, target_lag_sec=60,
                         data_tests=tests)


def _plan(project, names=("orders", "customers")):
    steps = [RefreshStep(name=n, path=project.table_path(n), action="NO_DATA", trigger="SCHEDULED", sql="",
                         inputs=[], definition_hash="h", refresh_mode=INCREMENTAL,
                         options=StepOptions(lag=LagTarget(target_lag_sec=60))) for n in names]
    return Plan(run_id="r1", project=project.name, warehouse=project.warehouse,
                data_timestamp="2026-11-26T10:00:00+00:00", source_versions={"src": 4}, steps=steps)


@pytest.fixture
def project(tmp_path):
    from dtcli import api

    root = write_project(tmp_path / "p", {"orders": "SELECT id FROM src", "customers": "SELECT id FROM orders"},
                         seeds={"src": "id\n1\n"})
    return api.load(root)


def _valid(doc) -> dict:
    data = json.loads(json.dumps(to_json(doc), default=str))     # as the file holds it
    assert schema_errors("run_results", data) == []
    return data


def test_a_run_s_results_validate_and_keep_their_names(project):
    plan = _plan(project)
    records = [_record("orders", SUCCEEDED, INCREMENTAL, tests=[CHECK, {**CHECK, "status": "pass", "failures": 0}]),
               _record("customers", FAILED, FULL, message="boom"), _record("late", SKIPPED, INCREMENTAL),
               *no_data_records(plan)]
    result = RunResult(plan=plan, records=records, decision=Decision(skipped={"other": "not due"}),
                       suspended=[{"name": "customers", "reason": "failed 5 times", "downstream": []}],
                       log_path="target/spark.log")
    doc = run_results.document(project, result, command="run", args={"select": [], "all": False},
                               started_at=START, finished_at=START + timedelta(seconds=3))
    data = _valid(doc)
    assert list(data) == ["metadata", "run_id", "data_timestamp", "success", "interrupted", "elapsed_time", "args",
                          "results", "summary", "not_refreshed", "suspended", "spark_log"]
    assert list(data["results"][0]) == [
        "name", "state", "refresh_action", "refresh_trigger", "timing", "execution_time", "statistics",
        "state_message", "state_code", "reinit_reason", "data_timestamp", "query_id", "openlineage_run_id",
        "table_version", "inputs_with_changed_data", "source_versions", "target_lag_sec", "completion_target",
        "data_tests"]
    assert data["metadata"]["schema_version"] == RUN_RESULTS.version
    assert data["summary"] == {"succeeded": 3, "failed": 1, "skipped": 1, "not_refreshed": 1,
                               "data_tests": {"pass": 1, "warn": 1}}
    assert [r["refresh_action"] for r in data["results"]][-2:] == ["NO_DATA", "NO_DATA"]
    assert data["results"][0]["execution_time"] == 2.5 and data["results"][0]["data_tests"][0]["samples"] == [{"id": None}]
    assert RUN_RESULTS.read(data) == doc                    # read back: the same typed document

    doc.data_tests = run_results.tested_entries([records[0], records[1]])     # `dt build` adds its tests
    built = _valid(doc)
    assert [t["status"] for t in built["data_tests"]] == ["warn", "pass", "error"]
    assert built["data_tests"][2]["unique_id"] is None and built["data_tests"][2]["message"] == "boom"


def test_dt_test_and_unit_test_results_validate(project):
    tested = testing.TestResult(plan=_plan(project), records=[_record("orders", SUCCEEDED, "TEST", tests=[CHECK]),
                                                      _record("customers", FAILED, "TEST", message="no table")],
                        not_created=["late"])
    doc = run_results.test_document(project, tested, command="test", args={"select": []}, started_at=START,
                                    finished_at=START)
    data = _valid(doc)
    assert data["summary"] == {"data_tests": {"error": 1, "warn": 1}} and data["not_created"] == ["late"]
    assert isinstance(RUN_RESULTS.read(data), DataTestResults)

    case = UnitTest(name="adds_up", table="orders", given=[], expect=[])
    unit = [UnitResult(test=case, status="fail", message="1 row missing", columns=["id", "n"],
                       expected=[(1, 2)], actual=[], missing=[(1, 2)]),
            UnitResult(test=case, status="pass", columns=["id"])]
    doc = run_results.unit_document(project, unit, args={"unit": True}, started_at=START, finished_at=START)
    data = _valid(doc)
    assert data["results"][0]["missing"] == [{"id": 1, "n": 2}] and data["success"] is False
    assert isinstance(RUN_RESULTS.read(data), UnitTestResults)


def test_a_key_the_schema_does_not_declare_fails_validation(project):
    """The schema is strict: a key added to a document without a new schema_version is caught."""
    result = RunResult(plan=_plan(project), records=[_record("orders", SUCCEEDED, FULL)])
    data = json.loads(json.dumps(to_json(run_results.document(project, result, command="run", args={},
                                                               started_at=START))))
    data["results"][0]["surprise"] = 1
    assert any("surprise" in e for e in schema_errors("run_results", data))


def test_run_results_of_another_version_are_refused_or_read(project, tmp_path):
    result = RunResult(plan=_plan(project), records=[_record("orders", SUCCEEDED, FULL)])
    data = to_json(run_results.document(project, result, command="refresh", args={}, started_at=START))
    newer = set_version(data, ("metadata", "schema_version"), RUN_RESULTS.version + 1)
    with pytest.raises(ArtifactVersionError, match="schema_version 2 was written by a newer dt; this dt reads "
                                                   "versions up to 1.*upgrade dt"):
        RUN_RESULTS.read(newer, "target/run_results.json")
    unversioned = {**data, "metadata": {k: v for k, v in data["metadata"].items() if k != "schema_version"}}
    with pytest.raises(ArtifactVersionError, match="not a dt run_results document: it has no metadata.schema_version"):
        RUN_RESULTS.read(unversioned)
    # a file an earlier dt wrote with version 1, before results carried data_tests and lineage ids
    older = json.loads(json.dumps(data))
    for entry in older["results"]:
        del entry["data_tests"], entry["openlineage_run_id"]
    path = tmp_path / "run_results.json"
    path.write_text(json.dumps(older))
    read = RUN_RESULTS.load(path)
    assert isinstance(read, RunResults) and read.results[0].data_tests == [] and read.results[0].openlineage_run_id is None
    path.write_text("{not json")
    with pytest.raises(ArtifactVersionError, match="cannot read run_results document"):
        RUN_RESULTS.load(path)


@dataclass
class _Part:
    label: str
    count: int = 0


@dataclass
class _Doc:
    schema_version: int
    parts: list[_Part]
    extra: dict[str, JSON] = field(default_factory=dict)
    note: str | None = optional_field()


def test_an_older_version_is_upgraded_step_by_step():
    """The machinery every kind uses: version 1 -> 2 -> 3, each step a function of the document."""
    kind = ArtifactKind(name="toy", version=3, root=_Doc, version_at=("schema_version",), description="a toy",
                        legacy_version=lambda doc: 1 if "items" in doc else None,
                        upgrades={1: lambda d: {"schema_version": 2, "parts": [{"label": i} for i in d["items"]]},
                                  2: lambda d: {**d, "schema_version": 3}})
    assert kind.read({"items": ["a", "b"]}) == _Doc(3, [_Part("a"), _Part("b")])     # no version: legacy
    assert kind.read({"schema_version": 2, "parts": [{"label": "c", "count": 2}]}).parts == [_Part("c", 2)]
    with pytest.raises(ArtifactVersionError, match="not a dt toy document"):
        kind.read({"rows": []})
    assert to_json(_Doc(3, [_Part("a")])) == {"schema_version": 3, "parts": [{"label": "a", "count": 0}], "extra": {}}
    assert "note" not in kind.schema()["$defs"]["_Doc"]["required"]
    assert from_json(float | None, 2) == 2.0 and isinstance(from_json(float | None, 2), float)


SECTIONS = ("qualified_name", "refresh_mode_reason", "rewritten_sql", "column_lineage", "adaptive", "custom", "top_n",
            "internal_tables", "frozen", "cluster_by", "partition_by", "ignored_properties", "data_tests", "warnings")


def _sections_project(root):
    from dtcli import api

    root = write_project(root, {
        "top_grouped": "SELECT id, SUM(v) AS s FROM a GROUP BY id ORDER BY s DESC LIMIT 2",
        "filtered": "SELECT id, v FROM a WHERE id IN (SELECT id FROM b)",
        "ddl": "CREATE DYNAMIC TABLE ddl\n  TARGET_LAG = '1 hour'\n  WAREHOUSE = transform_wh\nAS SELECT id FROM a",
    }, seeds={s: "id,v\n1,2\n" for s in ("a", "b")}, config="dialect: snowflake\n",
        table_yml={"filtered": "partition_by: [id]\ncolumns:\n  - {name: id, data_tests: [not_null]}\n  - v\n",
                   "top_grouped": "cluster_by: [id]\nscheduler: disable\ntarget_lag: 5 minutes\n"})
    api.seed(root)
    return root


def test_explain_reports_validate_with_every_section(tmp_path):
    """`dt explain --format json` of the example project (custom tables, ADAPTIVE, catalog names),
    the docs test shop (frozen regions, history) and a project with the remaining sections
    validates; every optional section appears in one of them, so each part of the schema is used."""
    import shutil

    from dtcli import api
    from dtcli.artifacts.explain import EXPLAIN
    from tests.docs_projects import shop_project

    example = tmp_path / "example"
    shutil.copytree(SCHEMAS.parents[1] / "example_project", example)
    api.seed(example)
    seen = set()
    for root in (example, shop_project(tmp_path / "shop"), _sections_project(tmp_path / "more")):
        checked = api.check(root, use_cache=False)
        for name in checked.graph.order:
            report = api.explain(checked, name)
            data = json.loads(json.dumps(to_json(report)))
            assert schema_errors("explain", data) == [], name
            assert data["schema_version"] == EXPLAIN.version and EXPLAIN.read(data) == report
            seen |= {k for k in SECTIONS if data.get(k) not in (None, [], "")}
    assert seen == set(SECTIONS)


def test_an_explain_report_of_another_version_is_read_or_refused(tmp_path):
    from dtcli import api
    from dtcli.artifacts.explain import EXPLAIN

    root = _sections_project(tmp_path / "p")
    data = to_json(api.explain(api.check(root, use_cache=False), "filtered"))
    older = {k: v for k, v in data.items() if k != "schema_version"}      # a project.json of an earlier dt
    assert EXPLAIN.read(older) == EXPLAIN.read(data)
    with pytest.raises(ArtifactVersionError, match="explain schema_version 2 was written by a newer dt"):
        EXPLAIN.read({**data, "schema_version": 2})


def test_the_docs_manifest_validates_and_carries_show_s_rows_whole(tmp_path):
    """project.json of the docs test shop (every state, action, check result and markup) validates
    against manifest.v1; each DT's `status` is its `dt show dynamic tables` row with no key lost."""
    from dtcli import api
    from dtcli.api.docs import facts, generate
    from dtcli.api.show import show_tables
    from dtcli.artifacts.manifest import MANIFEST
    from tests.docs_projects import shop_project

    root = shop_project(tmp_path / "shop")
    checked = api.check(root, use_cache=False)
    generate(checked)
    data = json.loads((root / "target" / "docs" / "project.json").read_text())
    assert schema_errors("manifest", data) == []
    assert data["metadata"]["schema_version"] == data["metadata"]["format_version"] == MANIFEST.version
    shown = {r["name"]: r for r in json.loads(json.dumps(show_tables(checked), default=str))}
    assert {n: t["status"] for n, t in data["dynamic_tables"].items()} == {n: shown[n] for n in data["dynamic_tables"]}
    assert {t["state"] for t in data["dynamic_tables"].values()} >= {"ACTIVE", "SUSPENDED", "FAILED", "ORPHANED"}
    assert any(t["data_tests"]["last"] for t in data["dynamic_tables"].values())
    read = MANIFEST.load(root / "target" / "docs" / "project.json")
    assert read == facts(checked)               # the file read back is the typed document it was written from
    assert read.dynamic_tables["order_audit"].explain.refresh_mode == "CUSTOM_INCREMENTAL"

    # a project.json of an earlier dt: format_version only, explain without schema_version
    older = json.loads(json.dumps(data))
    del older["metadata"]["schema_version"]
    for table in older["dynamic_tables"].values():
        if table["explain"]:
            del table["explain"]["schema_version"]
    assert MANIFEST.read(older) == read                  # upgraded: the schema_version fields added
    newer = {**data, "metadata": {**data["metadata"], "schema_version": 2, "format_version": 2}}
    with pytest.raises(ArtifactVersionError, match="manifest schema_version 2 was written by a newer dt"):
        MANIFEST.read(newer, "target/docs/project.json")


def test_a_history_row_is_a_refresh_record_as_show_prints_it():
    """HistoryRow (project.json) lists RefreshRecord's fields, its statistics nested: a field added
    to the record must be added to the manifest (and its schema_version raised)."""
    import dataclasses

    from dtcli.artifacts.manifest import HistoryRow

    record = {f.name for f in dataclasses.fields(RefreshRecord)}
    row = {f.name for f in dataclasses.fields(HistoryRow)}
    assert row == record - {"num_inserted_rows", "num_deleted_rows", "num_copied_rows"} | {"statistics"}
    assert set(_record("a", SUCCEEDED, FULL).to_row()) == row
