"""A DT with a MAP column (also inside an ARRAY) cannot take changes: Spark has no equality on
MAPs and a change is applied by comparing rows. The planner says so (no JVM): FULL with the
reason under `auto`, a validation error under `refresh_mode: incremental`, before any refresh
(was: validate passed and every refresh failed in the engine)."""

from __future__ import annotations

import pyarrow as pa
from deltalake import write_deltalake

from dtcli.sql.types import map_reason
from tests.helpers import dt, write_project


def _project(tmp_path, mode: str):
    root = write_project(tmp_path / mode, {"tagged": "SELECT id, tags FROM src",
                                           "nested": "SELECT id, array(tags) AS many FROM src",
                                           "plain": "SELECT id, tags['a'] AS a FROM src"},
                         config="sources:\n  src: data/src\n",
                         table_yml={n: f"refresh_mode: {mode}\n" for n in ("tagged", "nested")})
    tags = pa.array([[("a", 1)], None], pa.map_(pa.string(), pa.int32()))
    write_deltalake(str(root / "data/src"), pa.table({"id": pa.array([1, 2], pa.int32()), "tags": tags}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    return root


def test_auto_refreshes_a_map_column_full_and_explain_says_why(tmp_path):
    root = _project(tmp_path, "auto")
    modes = {n: dt("explain", n, "-p", str(root), "--format", "json").json() for n in ("tagged", "nested", "plain")}
    assert modes["tagged"]["refresh_mode"] == "FULL"
    assert modes["tagged"]["refresh_mode_reason"] == "column tags holds a MAP, which rows cannot be compared on"
    assert [r["considerations"] for r in modes["tagged"]["operators"] if not r["incremental"]] == \
        [["column tags holds a MAP, which rows cannot be compared on"]]
    assert modes["nested"]["refresh_mode"] == "FULL" and "column many holds a MAP" in modes["nested"]["refresh_mode_reason"]
    assert modes["plain"]["refresh_mode"] != "FULL"        # a value read out of a MAP is fine


def test_refresh_mode_incremental_on_a_map_column_is_a_validation_error(tmp_path):
    root = _project(tmp_path, "incremental")
    done = dt("validate", "-p", str(root))
    assert done.code == 2
    assert "refresh_mode is incremental but column" in done.err and "holds a MAP" in done.err
    assert "tables/" in done.err


def test_the_engine_and_the_planner_say_it_alike():
    assert map_reason("m", "map<string,int>") == map_reason("m", "MAP<STRING, INT>") is not None
    assert map_reason("m", "array<struct<k:map<int,int>>>") is not None
    assert map_reason("m", "ARRAY<INT>") is None and map_reason("m", None) is None
