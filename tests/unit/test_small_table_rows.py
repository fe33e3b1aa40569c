"""When an incremental refresh writes a DT whole (engine/runtime/rewrite.py `applies`): only when the
user set `small_table_rows`, the DT holds at most that many rows, and nothing makes a rewrite
wrong or visible to a reader dt knows of. JVM-free: the decision reads the step's options only."""

from __future__ import annotations

import pytest

from dtcli.config_keys import TableConfig
from dtcli.engine.runtime.rewrite import applies
from dtcli.model import StepOptions
from dtcli.plan_parts import Layout, Regions

SMALL_TABLE_ROWS = TableConfig.small_table_rows


def test_off_by_default_even_for_an_empty_dt():
    assert SMALL_TABLE_ROWS == 0
    assert not applies(StepOptions(previous_rows=0))
    assert not applies(StepOptions(previous_rows=10))


@pytest.mark.parametrize("options, whole", [
    (StepOptions(previous_rows=10, layout=Layout(small_table_rows=100)), True),
    (StepOptions(previous_rows=100, layout=Layout(small_table_rows=100)), True),
    (StepOptions(previous_rows=101, layout=Layout(small_table_rows=100)), False),
    (StepOptions(previous_rows=None, layout=Layout(small_table_rows=100)), False),          # rows unknown
    (StepOptions(previous_rows=10, layout=Layout(small_table_rows=100), read_by_tables=True), False),
    (StepOptions(previous_rows=10, layout=Layout(small_table_rows=100, partition_by=["g"])), False),
    (StepOptions(previous_rows=10, layout=Layout(small_table_rows=100, cluster_by=["g"])), False),
    (StepOptions(previous_rows=10, layout=Layout(small_table_rows=100), regions=Regions(active="d >= \'2026-01-01\'")), False),
])
def test_a_small_dt_is_written_whole_only_where_nothing_forbids_it(options, whole):
    assert applies(options) is whole
