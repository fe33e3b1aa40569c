"""A DT's definition hash is what dt compares to decide a REINITIALIZE: a change in how dt
computes it (not in what the user wrote) would reinitialize every DT of every project. These
figures were taken from the code before the table config became typed (TableConfig), and must
not move while the tables' SQL and config stay the same."""

from __future__ import annotations

from dtcli.planning.definition import definition_hash
from dtcli.project import load_project
from tests.helpers import write_project

TABLES = {
    "plain": "SELECT x, y FROM src",
    "laid_out": "SELECT x, y FROM src",
    "clustered": "SELECT x, count(*) AS n FROM src GROUP BY x",
    "checked": "SELECT x, y FROM src",
    "custom": "INSERT INTO SELF SELECT x, y FROM src CHANGES(INFORMATION => APPEND_ONLY)",
}
YML = {
    "laid_out": "refresh_mode: full\npartition_by: x\ncolumns:\n  - {name: a, type: BIGINT}\n  - b\n",
    "clustered": "cluster_by: [x]\ntarget_lag: 5 minutes\ncomment: later keys only\n",
    "checked": ("expectations:\n  pos: {expect: 'x > 0', on_violation: drop}\n"
                "  small: {expect: 'y < 9', on_violation: warn}\n"),
    "custom": "columns: [{name: x, type: BIGINT}, {name: y, type: STRING}]\n",
}
# computed on main at e521e07, before TableConfig
BEFORE = {'checked': '8077827cab7e1b75', 'clustered': '35c4e41a05729f3a', 'custom': 'f5645cbea5f626a9',
          'laid_out': '76413e1f8808f66e', 'plain': 'cd10d9a93708c559'}


def test_the_definition_hash_of_a_fixed_project_does_not_move(tmp_path):
    root = write_project(tmp_path / "p", TABLES, table_yml=YML,
                         config="sources:\n  src: {path: data/src}\n")
    project = load_project(root)
    hashes = {name: definition_hash(table) for name, table in sorted(project.tables.items())}
    assert hashes == BEFORE
