"""OpenLineage events of real runs (refreshes in the shared session, events from this process as
`dt` sends them): the example shop created with an HTTP backend started here, refreshed
incrementally into the file transport, then NO_DATA runs against a backend that is down and one
that hangs; a failing refresh, its downstream, and a secret in both."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from dtcli import api
from dtcli.api import lineage_emitter
from dtcli.api.lineage_ids import refresh_uuid
from dtcli.model import SUCCEEDED
from dtcli.planning.column_lineage import column_lineage
from dtcli.state import history
from dtcli.state.delta_log import table_info
from tests.helpers import REPO, dt, write_project
from tests.openlineage_events import Receiver, by_job, free_port, problems, read_file_events
from tests.sched_helpers import SRC_CONFIG, in_process, write_source

pytestmark = pytest.mark.spark


def _shop(tmp_path: Path, backend: Receiver, slow: Receiver) -> Path:
    """The example shop with a target per destination (no `catalog:`: tests/spark/test_catalog.py's
    subject), refreshed incrementally where it can."""
    root = tmp_path / "shop"
    shutil.copytree(REPO / "example_project", root, ignore=shutil.ignore_patterns("warehouse", "target"))
    text = (root / "dt_project.yml").read_text().replace("catalog:\n  schema: analytics\n", "")
    text = text.replace("refresh_mode: auto", "refresh_mode: incremental") + f"""
targets:
  http: {{openlineage: {{namespace: shop_ns, transport: {{type: http, url: '{backend.url}'}}}}}}
  file: {{openlineage: {{namespace: shop_ns, transport: {{type: file, log_file_path: target/openlineage.jsonl}}}}}}
  down: {{openlineage: {{timeout: 1, transport: {{type: http, url: 'http://127.0.0.1:{free_port()}'}}}}}}
  slow: {{openlineage: {{timeout: 1, transport: {{type: http, url: '{slow.url}'}}}}}}
"""
    (root / "dt_project.yml").write_text(text)
    api.seed(root)
    return root


def _run(spark, root: Path, target: str):
    checked = api.check(root, target, with_stats=True)
    result = api.run(checked, all_tables=True, launcher=in_process(spark))
    assert all(r.state == SUCCEEDED for r in result.records), [(r.name, r.state_message) for r in result.records]
    return checked, {r.name: r for r in result.records}


def _check_run(events, checked, records, action: str | None = None):
    """START + COMPLETE per refresh (and for the run), valid events; each COMPLETE carries the
    versions its refresh recorded and the DT's columns."""
    project = checked.project
    assert [problems(e) for e in events] == [[]] * len(events)
    assert by_job(events) == {project.name: ["START", "COMPLETE"],
                              **{n: ["START", "COMPLETE"] for n in project.tables}}
    paths = {project.input_path(n): n for n in [*project.tables, *project.sources]}
    for event in events:
        if event["eventType"] != "COMPLETE" or event["job"]["name"] == project.name:
            continue
        record = records[event["job"]["name"]]
        facet = event["run"]["facets"]["dt_refresh"]
        assert facet["action"] == record.refresh_action and facet["dt_run_id"] == record.run_id
        assert action is None or facet["action"] == action
        read = {paths[i["name"]]: int(i["facets"]["version"]["datasetVersion"]) for i in event["inputs"]}
        assert read == record.source_versions, record.name          # as refresh history has them
        out = event["outputs"][0]
        assert paths[out["name"]] == record.name
        info = table_info(project.table_path(record.name))
        assert [f["name"] for f in out["facets"]["schema"]["fields"]] == list(info.columns)
        assert int(out["facets"]["version"]["datasetVersion"]) == info.version
        written = out["outputFacets"]["outputStatistics"]["rowCount"]
        assert written == record.num_inserted_rows + record.num_updated_rows


def test_the_shop_created_then_refreshed_incrementally_then_no_data_with_backends_down(spark, tmp_path, monkeypatch):
    from scripts.shop_changes import main as change_shop

    with Receiver() as backend, Receiver(hang=10.0) as slow:
        root = _shop(tmp_path, backend, slow)
        checked, created = _run(spark, root, "http")
        _check_run(backend.events, checked, created)
        assert {r.refresh_trigger for r in created.values()} == {"CREATION"}

        change_shop(root)
        checked, refreshed = _run(spark, root, "file")
        events = read_file_events(root / "target" / "openlineage.jsonl")
        _check_run(events, checked, refreshed, "INCREMENTAL")
        recorded = {r.name: r for r in history.read(checked.project.warehouse)
                    if r.run_id == refreshed["valid_orders"].run_id}
        assert {n: r.source_versions for n, r in recorded.items()} == \
            {n: r.source_versions for n, r in refreshed.items()}          # what _check_run compared with

        # the column lineage the events carry is the DT's, in OpenLineage's names
        complete = {e["job"]["name"]: e for e in events if e["eventType"] == "COMPLETE"}
        facet = complete["customer_revenue"]["outputs"][0]["facets"]["columnLineage"]
        wh = str(root / "warehouse")
        assert facet["fields"]["revenue"]["inputFields"] == [
            {"namespace": "file", "name": f"{wh}/order_items", "field": "amount",
             "transformations": [{"type": "DIRECT", "subtype": "AGGREGATION", "masking": False}]}]
        assert facet["fields"]["name"]["inputFields"][0]["name"] == f"{wh}/customers"
        assert sorted((f["name"].rsplit("/", 1)[1], f["field"], t["subtype"]) for f in facet["dataset"]
                      for t in f["transformations"]) == [
            ("customers", "country", "GROUP_BY"), ("customers", "customer_id", "GROUP_BY"),
            ("customers", "customer_id", "JOIN"), ("customers", "name", "GROUP_BY"),
            ("order_items", "customer_id", "JOIN")]
        for name in ("order_items", "customer_rank", "customer_revenue"):
            lineage = column_lineage(checked, name)
            carried = complete[name]["outputs"][0]["facets"]["columnLineage"]["fields"]
            assert {c: sorted((f["name"].rsplit("/", 1)[1], f["field"]) for f in v["inputFields"])
                    for c, v in carried.items()} == \
                {c: sorted((f.input, f.column) for f in deps) for c, deps in lineage.columns.items()}

        # NO_DATA: no Spark, and START + COMPLETE per refresh all the same (docs/configuration.md)
        checked, quiet = _run(spark, root, "file")
        events = read_file_events(root / "target" / "openlineage.jsonl")[len(events):]
        _check_run(events, checked, quiet, "NO_DATA")

        # a backend that is down, then one that hangs: the run succeeds, says so once, tried once
        senders = []

        class Counted(lineage_emitter.Sender):
            def __init__(self, dest):
                super().__init__(dest)
                senders.append(self)

        monkeypatch.setattr(lineage_emitter, "Sender", Counted)
        for target in ("down", "slow"):
            result = dt("run", "--all", "-p", str(root), "-t", target)
            assert result.code == 0, result.err
            assert result.err.count("warning: OpenLineage events (http transport") == 1, result.err
            sender = senders[-1]
            assert (sender.attempts, sender.sent, sender.timeout) == (1, 0, 1.0)
        assert slow.requests == 1
        results = json.loads((root / "target" / "run_results.json").read_text())
        assert {r["openlineage_run_id"] for r in results["results"]} == {
            refresh_uuid(results["run_id"], n) for n in checked.project.tables}


def test_a_failed_refresh_fails_its_run_aborts_its_downstream_and_leaks_no_secret(spark, tmp_path):
    secret = "s3cr3t-lineage-7d2c41"
    root = write_project(tmp_path / "p", {
        "good": "SELECT x, x * 2 AS doubled FROM src",
        # ANSI: a cast that cannot be made, whose message quotes the value: the secret
        "bad": f"SELECT x, CAST(concat('{secret}', x) AS INT) AS boom FROM src",
        "after_bad": "SELECT x FROM bad",
    }, config=f"    spark.hadoop.fs.s3a.secret.key: {secret}\n" + SRC_CONFIG + """\
openlineage:
  transport: {type: file, log_file_path: target/ol.jsonl}
""")
    write_source(api.load(root), [1, 2, 3])
    result = api.run(api.check(root), all_tables=True, launcher=in_process(spark))
    assert {r.name: r.state for r in result.records} == {"good": "SUCCEEDED", "bad": "FAILED",
                                                         "after_bad": "UPSTREAM_FAILED"}
    text = (root / "target" / "ol.jsonl").read_text()
    assert secret not in text
    events = read_file_events(root / "target" / "ol.jsonl")
    assert [problems(e) for e in events] == [[]] * len(events)
    assert by_job(events) == {"proj": ["START", "FAIL"], "good": ["START", "COMPLETE"], "bad": ["START", "FAIL"],
                              "after_bad": ["ABORT"]}
    fail = next(e for e in events if e["job"]["name"] == "bad" and e["eventType"] == "FAIL")
    error = fail["run"]["facets"]["errorMessage"]
    assert error["message"].startswith("tables/bad.sql: [CAST_INVALID_INPUT] The value '****1'"), error["message"]
    assert fail["run"]["facets"]["dt_refresh"]["state"] == "FAILED"
    assert "concat('****', x)" in fail["job"]["facets"]["sql"]["query"]
    abort = next(e for e in events if e["job"]["name"] == "after_bad")
    assert abort["run"]["facets"]["dt_refresh"]["state"] == "UPSTREAM_FAILED"
    json.dumps(events)
