"""OpenLineage events without a JVM: what dt builds from a plan and the records of its refreshes
(valid against OpenLineage's JSON Schema of the client version used), and how it sends them: in
order, off the run's path, one warning and at most one timeout's wait per run when the backend
is down or slow. (A real run's events: tests/spark/test_openlineage.py.)"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone

import pytest

from dtcli import api
from dtcli.api.lineage_emitter import lineage_run
from dtcli.api.lineage_events import PRODUCER
from dtcli.api.lineage_ids import refresh_uuid, run_uuid
from dtcli.api.lineage_transport import destination
from dtcli.events import RefreshFinished, RefreshStarted, Warned
from dtcli.model import FAILED, SKIPPED, SUCCEEDED, UPSTREAM_FAILED, LineageSpec, RefreshRecord
from dtcli.state import ledger
from tests.helpers import REPO
from tests.openlineage_events import Receiver, by_job, free_port, problems, read_file_events


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    root = tmp_path_factory.mktemp("ol") / "shop"
    shutil.copytree(REPO / "example_project", root, ignore=shutil.ignore_patterns("warehouse", "target"))
    api.seed(root)
    return root


def _checked(root, transport, **spec):
    checked = api.check(root)
    checked.project.openlineage = LineageSpec(transport=transport, file=str(root / "dt_project.yml"), line=20,
                                              **spec)
    return checked


def _record(step, plan, state, **kw) -> RefreshRecord:
    at = datetime.now(timezone.utc).isoformat()
    return ledger.planned(step, plan.run_id, state, at, data_timestamp=plan.data_timestamp if state == SUCCEEDED
                                 else None, source_versions={i.name: i.version or 0 for i in step.inputs}, **kw)


def _drive(checked, plan, outcome=lambda step: SUCCEEDED):
    """The events a run would stream back, refresh by refresh; returns what reached `on_event`."""
    seen = []
    lineage = lineage_run(checked, plan, seen.append, destination(checked.project))
    records = []
    for step in plan.steps:
        state = outcome(step)
        if state in (SUCCEEDED, FAILED):
            lineage(RefreshStarted(step.name, step.action))
        record = _record(step, plan, state, table_version=0 if state == SUCCEEDED else None,
                         num_inserted_rows=3 if state == SUCCEEDED else 0,
                         message="[DIVIDE_BY_ZERO] Division by zero" if state == FAILED else None)
        records.append(record)
        lineage(RefreshFinished(record))
    lineage.finish(records)
    return lineage, seen


def test_every_refresh_is_a_run_with_start_and_end_valid_against_the_spec(shop, tmp_path):
    log = tmp_path / "ol.jsonl"
    checked = _checked(shop, {"type": "file", "log_file_path": str(log), "append": True}, namespace="shop_ns")
    plan = api.plan_run(checked)
    failing = {"customer_revenue": FAILED, "customer_rank": UPSTREAM_FAILED, "daily_activity": SKIPPED}
    lineage, seen = _drive(checked, plan, lambda step: failing.get(step.name, SUCCEEDED))
    assert not [e for e in seen if isinstance(e, Warned)]
    events = read_file_events(log)
    for event in events:
        assert problems(event) == [], event["job"]["name"]
    jobs = by_job(events)
    assert jobs["shop"] == ["START", "FAIL"]                       # the dt run itself, the parent
    assert jobs["analytics.valid_orders"] == ["START", "COMPLETE"]  # catalog: the metastore name
    assert jobs["analytics.customer_revenue"] == ["START", "FAIL"]
    assert jobs["analytics.customer_rank"] == ["ABORT"] and jobs["analytics.daily_activity"] == ["ABORT"]
    assert {e["job"]["namespace"] for e in events} == {"shop_ns"}
    assert all(e["producer"] == PRODUCER for e in events)
    revenue = [e for e in events if e["job"]["name"] == "analytics.customer_revenue"]
    assert revenue[0]["run"]["runId"] == revenue[1]["run"]["runId"] == refresh_uuid(plan.run_id, "customer_revenue")
    parent = revenue[0]["run"]["facets"]["parent"]
    assert parent["run"]["runId"] == run_uuid(plan.run_id) and (parent["job"]["namespace"], parent["job"]["name"]) == ("shop_ns", "shop")
    error = revenue[1]["run"]["facets"]["errorMessage"]
    assert error["message"] == "[DIVIDE_BY_ZERO] Division by zero"
    facet = revenue[1]["run"]["facets"]["dt_refresh"]
    assert (facet["action"], facet["trigger"], facet["state"], facet["dt_run_id"]) == (
        "FULL", "CREATION", FAILED, plan.run_id)
    sql = revenue[0]["job"]["facets"]["sql"]
    assert sql["query"] == checked.project.tables["customer_revenue"].sql and sql["dialect"] == "spark"
    # inputs by storage path, output with schema, column lineage, version and statistics
    items = next(e for e in events if e["job"]["name"] == "analytics.order_items" and e["eventType"] == "COMPLETE")
    assert {(i["namespace"], i["name"]) for i in items["inputs"]} == {
        ("file", checked.project.input_path(n)) for n in ("valid_orders", "order_lines", "products")}
    out = items["outputs"][0]
    assert (out["namespace"], out["name"]) == ("file", checked.project.table_path("order_items"))
    assert [f["name"] for f in out["facets"]["schema"]["fields"]] == [c.name for c in checked.schemas["order_items"]]
    assert out["facets"]["symlinks"]["identifiers"] == [{"namespace": "file", "name": "analytics.order_items",
                                                         "type": "TABLE"}]
    assert out["outputFacets"]["outputStatistics"]["rowCount"] == 3
    assert out["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "CREATE"
    amount = out["facets"]["columnLineage"]["fields"]["amount"]["inputFields"]
    assert {(f["name"].rsplit("/", 1)[-1], f["field"], f["transformations"][0]["subtype"]) for f in amount} == {
        ("order_lines", "quantity", "TRANSFORMATION"), ("products", "unit_price", "TRANSFORMATION")}


def test_the_client_stamps_the_vendored_spec_versions(shop, tmp_path):
    """Every facet the installed client builds names a schema vendored in tests/openlineage_spec
    (problems() fails on any other): a client upgrade that moves a version fails here."""
    log = tmp_path / "ol.jsonl"
    checked = _checked(shop, {"type": "file", "log_file_path": str(log), "append": True})
    _drive(checked, api.plan_run(checked, ["valid_orders"]), lambda step: FAILED)
    assert [problems(e) for e in read_file_events(log)] == [[], [], [], []]


def test_an_http_backend_gets_each_event_in_order_with_the_api_key_from_the_environment(shop, monkeypatch):
    monkeypatch.setenv("SHOP_LINEAGE_KEY", "k3y-from-the-environment")
    with Receiver() as backend:
        checked = _checked(shop, {"type": "http", "url": backend.url, "api_key_env": "SHOP_LINEAGE_KEY"})
        plan = api.plan_run(checked, ["order_items"])
        _drive(checked, plan)
    assert by_job(backend.events) == {"shop": ["START", "COMPLETE"],
                                      "analytics.valid_orders": ["START", "COMPLETE"],
                                      "analytics.order_items": ["START", "COMPLETE"]}
    assert {h["Authorization"] for h in backend.headers} == {"Bearer k3y-from-the-environment"}
    assert not any(b"k3y-from-the-environment" in body for body in backend.bodies)
    # what the upstream DT committed in the run is the version its reader's START names
    start = next(e for e in backend.events if e["job"]["name"] == "analytics.order_items")
    versions = {i["name"].rsplit("/", 1)[-1]: i["facets"].get("version", {}).get("datasetVersion")
                for i in start["inputs"]}
    assert versions["valid_orders"] == "0"


@pytest.mark.parametrize("backend", ["refused", "hanging"])
def test_a_backend_down_or_hanging_costs_one_attempt_and_one_warning(shop, backend):
    """After the first failure nothing more is sent in the run, and its end waits at most the
    configured timeout (the HTTP request's own bound too); the run is never failed by it."""
    with Receiver(hang=10.0) as slow:
        url = slow.url if backend == "hanging" else f"http://127.0.0.1:{free_port()}"
        checked = _checked(shop, {"type": "http", "url": url}, timeout=0.5)
        dest = destination(checked.project)
        assert dest.timeout == 0.5 and dest.transport["timeout"] == 0.5 and dest.transport["retry"]["total"] == 0
        plan = api.plan_run(checked)
        lineage, seen = _drive(checked, plan)
        assert lineage.sender.attempts == 1 and lineage.sender.sent == 0
        assert lineage.sender.dropped == 2 * len(plan.steps) + 2            # every event, the one tried too
        if backend == "hanging":
            assert slow.requests == 1
    warnings = [e.message for e in seen if isinstance(e, Warned)]
    assert len(warnings) == 1, warnings
    assert warnings[0].startswith("OpenLineage events (http transport, ") and "not sent for the rest" in warnings[0]


def test_an_api_key_variable_that_is_not_set_sends_nothing_and_says_so(shop, monkeypatch):
    monkeypatch.delenv("NOT_SET_LINEAGE_KEY", raising=False)
    with Receiver() as backend:
        checked = _checked(shop, {"type": "http", "url": backend.url, "api_key_env": "NOT_SET_LINEAGE_KEY"})
        lineage, seen = _drive(checked, api.plan_run(checked, ["valid_orders"]))
    assert backend.requests == 0 and lineage.sender.attempts == 0
    assert [e.message for e in seen if isinstance(e, Warned)] == [
        "OpenLineage events (http transport, " + f"{shop / 'dt_project.yml'}:20) are not sent for the rest of this "
        "run: the environment variable NOT_SET_LINEAGE_KEY (api_key_env) is not set, so no lineage event was sent"]


def test_off_without_a_block_or_the_clients_variables(shop, monkeypatch):
    for name in ("OPENLINEAGE_URL", "OPENLINEAGE_CONFIG", "OPENLINEAGE_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    checked = api.check(shop)
    assert destination(checked.project) is None
    assert lineage_run(checked, api.plan_run(checked), lambda e: None, None) is None
    monkeypatch.setenv("OPENLINEAGE_URL", "http://127.0.0.1:9")
    assert destination(checked.project).transport["url"] == "http://127.0.0.1:9"
    monkeypatch.setenv("OPENLINEAGE_DISABLED", "true")      # the client's off switch wins over everything
    assert destination(_checked(shop, {"type": "console"}).project) is None


def test_the_console_transport_prints_each_event_on_stderr(shop, capfd):
    from dtcli.ui.quiet import library_noise

    with library_noise(debug=False):        # as the CLI runs: the client's own log lines silenced
        checked = _checked(shop, {"type": "console"})
        _drive(checked, api.plan_run(checked, ["valid_orders"]))
    out, err = capfd.readouterr()
    lines = [line for line in err.splitlines() if line.startswith("{")]
    assert out == "" and len(lines) == 4 and all(problems(json.loads(line)) == [] for line in lines)


def test_a_backend_slower_than_the_run_gets_what_the_timeout_allows_and_the_run_says_how_many_were_left(shop):
    """Each request answered (in 1 s) within the timeout (2 s): nothing failed, but the run ends
    with events queued; it waits the timeout once, then leaves them, saying so."""
    with Receiver(hang=1.0) as slow:
        checked = _checked(shop, {"type": "http", "url": slow.url}, timeout=2.0)
        lineage, seen = _drive(checked, api.plan_run(checked))
        sender = lineage.sender
        assert sender.sent >= 1 and sender.dropped >= 1 and sender.attempts == sender.sent + 1  # one in flight
    warnings = [e.message for e in seen if isinstance(e, Warned)]
    assert len(warnings) == 1 and "still unsent when the run ended (waited the configured timeout, 2 s;" in warnings[0]


def test_events_counted_once_when_the_run_ends_before_a_hanging_send_gives_up():
    """close() stops waiting, counts the event in flight and the queued ones as dropped; when the
    hanging send fails afterwards, the sender's thread must not count them a second time (CI saw
    19 dropped for 18 events when the request's timeout and the run's wait ended together)."""
    import threading

    from dtcli.api.lineage_emitter import Sender
    from dtcli.api.lineage_transport import Destination

    release = threading.Event()

    class Hanging:
        transport = type("T", (), {"close": lambda self, timeout: None})()

        def emit(self, event):
            release.wait(5)
            raise TimeoutError("read timed out")

    sender = Sender(Destination({"type": "console"}, "ns", 0.2, "test"))
    sender._client = Hanging()
    for n in range(4):
        sender.send(n)
    sender.close()
    assert (sender.attempts, sender.dropped) == (1, 4)
    release.set()
    sender._thread.join(5)
    assert not sender._thread.is_alive()
    assert (sender.attempts, sender.sent, sender.dropped) == (1, 0, 4)
