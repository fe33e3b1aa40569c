"""`deletion_vectors`: with it off, readers without deletion-vector support (the `deltalake`
package's pyarrow reader) read every DT of the example shop after incremental refreshes; a DT
switched off is brought in line at its next refresh. Default stays on."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from deltalake.exceptions import DeltaProtocolError

from dtcli import api
from dtcli.model import INCREMENTAL, SUCCEEDED
from tests.helpers import REPO, assert_matches_recompute, checkpoint_blocks
from tests.sched_helpers import in_process

pytestmark = pytest.mark.spark


def _shop(tmp_path: Path) -> Path:
    """The example shop with deletion vectors off for the project, except order_items (which
    category_sales and customer_revenue read)."""
    root = tmp_path / "shop"
    shutil.copytree(REPO / "example_project", root, ignore=shutil.ignore_patterns("warehouse", "target"))
    text = (root / "dt_project.yml").read_text()
    # incremental (not auto, whose ADAPTIVE choice may recompute such tiny tables): the point is
    # what readers see after refreshes that removed rows
    # (and without `catalog:`: registering by name is tests/spark/test_catalog.py's subject)
    (root / "dt_project.yml").write_text(text.replace("defaults:\n", "defaults:\n  deletion_vectors: false\n")
                                         .replace("catalog:\n  schema: analytics\n", "")
                                         .replace("refresh_mode: auto", "refresh_mode: incremental"))
    (root / "tables" / "order_items.yml").write_text("deletion_vectors: true\n")
    api.seed(root)
    return root


def _run(spark, root: Path, names: list[str] | None = None) -> dict:
    blocks = checkpoint_blocks(spark)
    result = api.run(api.check(root, with_stats=True), names, all_tables=True, launcher=in_process(spark))
    assert checkpoint_blocks(spark, at_most=blocks) <= blocks, \
        "a refresh left checkpointed rows behind (a warm application keeps them)"
    assert all(r.state == SUCCEEDED for r in result.records), [(r.name, r.state_message) for r in result.records]
    return {r.name: r for r in result.records}


def _rows(table: pa.Table) -> Counter:
    return Counter(tuple(row.values()) for row in table.to_pylist())


def _same_as_spark(spark, path: str) -> bool:
    by_deltalake = DeltaTable(path).to_pyarrow_table()
    by_spark = spark.read.format("delta").load(path).toArrow()
    return _rows(by_deltalake.cast(by_spark.schema)) == _rows(by_spark)


def test_deltalake_reads_every_dt_written_without_deletion_vectors(spark, tmp_path, monkeypatch):
    from dtcli.engine.runtime import slice_commit
    from scripts.shop_changes import main as change_shop

    # slices replaced in place, where deletion vectors mark the rows removed (the shop's DTs are
    # small enough to be written whole by default)
    monkeypatch.setattr(slice_commit, "WHOLE_BYTES", 0)

    root = _shop(tmp_path)
    project = api.load(root)
    names = list(project.tables)
    _run(spark, root)
    change_shop(root)
    records = _run(spark, root)
    assert {r.refresh_action for r in records.values()} == {INCREMENTAL}
    assert sum(r.num_deleted_rows > 0 for r in records.values()) >= 5     # rows removed, rewritten
    for name in names:
        if name == "order_items":
            continue
        path = project.table_path(name)
        assert "deletionVectors" not in (DeltaTable(path).protocol().reader_features or []), name
        assert _same_as_spark(spark, path), name
        if project.tables[name].kind == "query":      # a custom table has no query to recompute
            assert_matches_recompute(spark, project, name)
    # left on (dt's default): the incremental refresh marked removed rows with deletion vectors,
    # which this reader refuses
    items = project.table_path("order_items")
    assert records["order_items"].num_deleted_rows > 0
    assert DeltaTable(items).deletion_vectors().read_all().num_rows > 0
    with pytest.raises(DeltaProtocolError, match="deletionVectors"):
        DeltaTable(items).to_pyarrow_table()
    shown = {r["name"]: r for r in api.show_tables(api.check(root))}
    assert shown["order_items"]["deletion_vectors"] is True and shown["valid_orders"]["deletion_vectors"] is False

    # Turned off: its next refresh rewrites the files that carry deletion vectors and drops the
    # feature; no row changes, so the DT reading it (across those commits) stays right too.
    (root / "tables" / "order_items.yml").unlink()
    change_shop(root)
    records = _run(spark, root, ["category_sales"])
    assert (records["order_items"].refresh_action, records["category_sales"].refresh_action) == \
        (INCREMENTAL, INCREMENTAL)
    assert "deletionVectors" not in (DeltaTable(items).protocol().reader_features or [])
    for name in ("order_items", "category_sales"):
        assert _same_as_spark(spark, project.table_path(name)), name
        assert_matches_recompute(spark, project, name)
    steps = api.plan_run(api.check(root), ["category_sales"]).steps
    assert not any(s.options.layout.deletion_vectors_outdated for s in steps)
