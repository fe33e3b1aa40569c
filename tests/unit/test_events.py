"""The events of a run cross the driver's stdout as JSON and come back as the same objects."""

from __future__ import annotations

import io
import json

from dtcli import events
from dtcli.engine.launch.launcher import LaunchResult, handle
from dtcli.engine.protocol import EVENT_PREFIX
from dtcli.model import RefreshRecord


def _record() -> RefreshRecord:
    return RefreshRecord(name="d", state="SUCCEEDED", refresh_action="INCREMENTAL", refresh_trigger="SCHEDULED", data_timestamp=None,
                         refresh_start_time="2026-11-25T00:00:00+00:00",
                         refresh_end_time="2026-11-25T00:00:01+00:00", run_id="r1", num_inserted_rows=3)


EXAMPLES = [
    events.Started(), events.NotStarted("[INVALID_CONF_VALUE.TYPE_MISMATCH] bad"),
    events.PlanStarted(["a", "b"], "local-1", "r1"), events.RefreshStarted("a", "INCREMENTAL"),
    events.RefreshProgress("a", 1.5, 2, 1, 3, 10, 24), events.RefreshFinished(_record()),
    events.CatalogChanged("d", "REGISTERED", "analytics.d", "/wh/d", None, None, True),
    events.NameResolved("db.t", "/data/t", "id-1"), events.LookingUp(["db.t"]),
    events.Suspended("d", "failed 5 times", ["e"]), events.Stopping(), events.Done("r1"),
    events.Exited("idle"), events.Warned("OpenLineage events are not sent for the rest of this run"),
]


def test_every_kind_is_known_once():
    assert len(events.KINDS) == len(EXAMPLES) == len({type(e) for e in EXAMPLES})


def test_each_event_comes_back_from_the_wire_as_it_went():
    for event in EXAMPLES:
        wire = json.loads(json.dumps(events.to_wire(event), default=str))
        assert wire["event"] == event.kind
        assert events.from_wire(wire) == event


def test_the_launcher_reads_lines_into_events_and_its_result():
    out = [events.Started(), events.RefreshFinished(_record()), events.Done("r1")]
    lines = [EVENT_PREFIX + json.dumps(events.to_wire(e)) + "\n" for e in out]
    lines.insert(1, "a line of Spark's own\n")
    lines.insert(2, EVENT_PREFIX + json.dumps({"event": "from_a_newer_dt", "x": 1}) + "\n")
    result, log, seen = LaunchResult(returncode=-1, log_path=None), io.StringIO(), []
    for line in lines:
        handle(line, result, log, seen.append)
    assert seen == out                         # an unknown kind is passed over
    assert result.started and result.done and [r.name for r in result.records] == ["d"]
    assert log.getvalue() == "a line of Spark's own\n"
