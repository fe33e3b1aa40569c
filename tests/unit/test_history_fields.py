"""The refresh history gains Snowflake's newer columns without losing older entries (no JVM)."""

from __future__ import annotations

import pyarrow as pa
from deltalake import write_deltalake

from dtcli.model import SUCCEEDED, RefreshRecord
from dtcli.state import history, ledger

NEW = ("state_code", "query_id", "target_lag_sec", "completion_target")


def test_a_history_written_before_the_new_fields_takes_them_and_keeps_its_rows(tmp_path):
    warehouse = str(tmp_path / "wh")
    old = RefreshRecord("a", SUCCEEDED, "FULL", "CREATION", "2026-01-01T00:00:00+00:00",
                        "2026-01-01T00:00:01+00:00", "2026-01-01T00:00:02+00:00", "r0").to_dict()
    for key in NEW:
        old.pop(key)
    old["inputs_with_changed_data"], old["source_versions"] = "[]", "{}"
    schema = pa.schema([f for f in history.record_schema() if f.name not in NEW])
    path = history.history_path(warehouse)
    (tmp_path / "wh" / "_dt" / "refresh_history").mkdir(parents=True)
    write_deltalake(path, pa.Table.from_pylist([old], schema=schema))

    ledger.append(warehouse, [RefreshRecord(
        "a", SUCCEEDED, "NO_DATA", "SCHEDULED", "2026-01-01T01:00:00+00:00", "2026-01-01T01:00:00+00:00",
        "2026-01-01T01:00:00+00:00", "r1", state_code="SUCCESS", target_lag_sec=3600,
        completion_target="2026-01-01T01:00:00+00:00")])
    rows = history.read(warehouse)
    assert [(r.run_id, r.state_code, r.target_lag_sec, r.query_id) for r in rows] == [
        ("r1", "SUCCESS", 3600, None), ("r0", None, None, None)]
    assert {"state_code", "target_lag_sec", "completion_target", "query_id"} <= set(rows[1].to_row())
