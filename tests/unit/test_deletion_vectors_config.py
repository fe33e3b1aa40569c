"""`deletion_vectors` per project (defaults), target and table: precedence and errors (no JVM)."""

from __future__ import annotations

import pyarrow as pa
from deltalake import write_deltalake

from dtcli import api
from tests.helpers import dt, write_project
from tests.sched_helpers import SRC_CONFIG

CONFIG = SRC_CONFIG + """defaults:
  target_lag: 2 hours
targets:
  readers:
    defaults: {deletion_vectors: false}
"""


def _project(tmp_path, table_yml=None, config=CONFIG):
    root = write_project(tmp_path / "p", {"a": "SELECT x FROM src", "b": "SELECT x FROM src"},
                         config=config, table_yml=table_yml)
    write_deltalake(str(root / "data" / "src"), pa.table({"x": pa.array([1], pa.int64())}),
                    configuration={"delta.enableChangeDataFeed": "true"})
    return root


def _setting(root, target=None):
    project = api.load(root, target)
    return {n: (t.config.get("deletion_vectors", True), t.target_lag) for n, t in project.tables.items()}


def test_a_target_overrides_the_project_defaults_and_a_table_overrides_both(tmp_path):
    root = _project(tmp_path, {"b": "deletion_vectors: true\n"})
    assert _setting(root) == {"a": (True, "2 hours"), "b": (True, "2 hours")}            # default: on
    assert _setting(root, "readers") == {"a": (False, "2 hours"), "b": (True, "2 hours")}
    steps = {s.name: s.options.layout for s in api.plan_run(api.check(root, "readers"), ["a", "b"]).steps}
    assert (steps["a"].deletion_vectors, steps["b"].deletion_vectors) == (False, True)
    assert not steps["a"].deletion_vectors_outdated       # not created yet: nothing to align


def test_bad_values_and_misplaced_keys_name_the_file_and_line(tmp_path):
    root = _project(tmp_path, {"a": "deletion_vectors: sometimes\n"})
    result = dt("validate", "-p", str(root))
    assert result.code == 2 and "tables/a.yml:1: deletion_vectors must be true or false, not 'sometimes'" in result.err

    root = _project(tmp_path / "2", config=SRC_CONFIG + "targets:\n  prod:\n    deletion_vectors: false\n")
    result = dt("validate", "-p", str(root), "--target", "prod")
    assert result.code == 2
    assert "dt_project.yml:11: unknown target 'prod' key 'deletion_vectors'" in result.err
    assert "table config keys go under defaults, e.g. defaults: {deletion_vectors: ...}" in result.err
