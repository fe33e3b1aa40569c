"""Table config keys do what they say on a real Delta table: cluster_by, comment, enabled,
columns; and a Spark error at refresh time is reported against the table's file."""

from __future__ import annotations

import pytest

from dtcli import api
from dtcli.model import FAILED, INCREMENTAL, SUCCEEDED
from dtcli.state.delta_log import table_info
from tests.helpers import assert_matches_recompute, write_project
from tests.sched_helpers import SRC_CONFIG, in_process, write_source

pytestmark = pytest.mark.spark


def _run(spark, root):
    result = api.run(api.check(root, with_stats=True), all_tables=True, launcher=in_process(spark))
    return {r.name: r for r in result.records}


def _detail(spark, path):
    return spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first()


def test_cluster_by_comment_enabled_and_columns(spark, tmp_path):
    root = write_project(tmp_path / "p", {
        "clustered": "SELECT x, x % 3 AS bucket FROM src",
        "renamed": "SELECT x, x * 2 FROM src",
        "off": "SELECT x FROM src",
    }, config=SRC_CONFIG + "defaults: {refresh_mode: incremental}\n", table_yml={
        "clustered": "cluster_by: bucket\ncomment: Buckets of x, for the dashboard\n",
        "renamed": "columns: [{name: id, type: bigint}, {name: doubled, type: 'decimal(10,1)'}]\n",
        "off": "enabled: false\n",
    })
    project = api.load(root)
    write_source(project, [1, 2, 3])
    records = _run(spark, root)
    assert set(records) == {"clustered", "renamed"}            # a disabled table is not planned
    assert table_info(project.table_path("off")) is None

    detail = _detail(spark, project.table_path("clustered"))
    assert detail.clusteringColumns == ["bucket"]
    assert detail.description == "Buckets of x, for the dashboard"
    renamed = spark.read.format("delta").load(project.table_path("renamed"))
    assert [(f.name, f.dataType.simpleString()) for f in renamed.schema.fields] == \
        [("id", "bigint"), ("doubled", "decimal(10,1)")]

    # Incremental refreshes keep the clustering; a comment edit reaches the table without
    # rebuilding it; show reports what the table holds.
    write_source(project, [4, 5])
    (root / "tables" / "clustered.yml").write_text("cluster_by: bucket\ncomment: Renamed comment\n")
    records = _run(spark, root)
    assert records["clustered"].refresh_action == INCREMENTAL
    assert records["renamed"].refresh_action == INCREMENTAL, records["renamed"].state_message
    detail = _detail(spark, project.table_path("clustered"))
    assert (detail.clusteringColumns, detail.description) == (["bucket"], "Renamed comment")
    assert sorted(r.id for r in spark.read.format("delta").load(project.table_path("renamed")).collect()) == \
        [1, 2, 3, 4, 5]
    assert_matches_recompute(spark, api.load(root), "clustered")
    rows = {r["name"]: r for r in api.show_tables(api.check(root, with_stats=True))}
    assert rows["clustered"]["comment"] == "Renamed comment" and rows["clustered"]["cluster_by"] == ["bucket"]
    assert rows["off"]["scheduling_state"] == "DISABLED"
    assert rows["renamed"]["columns"] == [{"name": "id", "type": "BIGINT"}, {"name": "doubled", "type": "DECIMAL(10,1)"}]


def test_a_spark_error_at_refresh_time_names_the_table_file(spark, tmp_path):
    # sqlglot cannot know that element_at needs an array or map: Spark finds out at run time.
    root = write_project(tmp_path / "p", {"bad": "SELECT x,\n       element_at(x, 1) AS first\nFROM src"},
                         config=SRC_CONFIG)
    write_source(api.load(root), [1])
    record = _run(spark, root)["bad"]
    assert record.state == FAILED
    assert record.state_message.startswith("tables/bad.sql: ")
    assert " line 2 pos " not in record.state_message and " pos " not in record.state_message
    assert record.state != SUCCEEDED


def _file_ranges(path: str) -> list[tuple[int, int]]:
    """(min, max) of x in each file of the table, from its Delta log."""
    import pyarrow as pa

    from dtcli.state.delta_log import open_table

    adds = pa.table(open_table(path).get_add_actions(flatten=True)).to_pylist()
    return sorted((a["min.x"], a["max.x"]) for a in adds)


def test_sort_by_key_writes_files_of_narrow_key_ranges_and_off_leaves_spark_order(spark, tmp_path):
    """Both sides of the layout settings: sorted gives files that each hold a narrow range of
    the key, so a change to a few keys touches one file; off (the default) leaves the rows in the
    order Spark computed them. Either way the DT equals its query after a change."""
    root = write_project(tmp_path / "p", {"sorted_": "SELECT x, x % 7 AS r FROM src",
                                          "unsorted": "SELECT x, x % 7 AS r FROM src"},
                         config=SRC_CONFIG, table_yml={
                             "sorted_": "sort_by_key: true\nmax_rows_per_file: 100\n",
                             "unsorted": "max_rows_per_file: 0\n"})
    project = api.load(root)
    import random

    keys = list(range(1000))
    random.Random(7).shuffle(keys)
    write_source(project, keys)
    records = _run(spark, root)
    assert all(r.state == SUCCEEDED for r in records.values())
    ranges = _file_ranges(project.table_path("sorted_"))
    assert len(ranges) >= 10 and all(hi - lo < 200 for lo, hi in ranges), ranges
    loose = _file_ranges(project.table_path("unsorted"))
    assert max(hi - lo for lo, hi in loose) > 900, loose      # shuffled input, shuffled files
    write_source(project, [5, 995])
    records = _run(spark, root)
    for name in ("sorted_", "unsorted"):
        assert records[name].state == SUCCEEDED, records[name].state_message
        assert_matches_recompute(spark, project, name)
