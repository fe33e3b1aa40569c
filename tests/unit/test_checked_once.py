"""Every command loads, parses and checks the project once, and the planning ones need no JVM."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timezone

import pytest
import sqlglot.parser

from tests.helpers import dt, dt_process, no_java_env, write_project
from tests.sched_helpers import fake_dt, write_source

TABLES = {
    "clean": "SELECT x FROM src WHERE x > 0",
    "totals": "SELECT x % 2 AS parity, COUNT(*) AS n\nFROM {{ ref('clean') }}\nGROUP BY x % 2",
    "ranked": "SELECT x, RANK() OVER (PARTITION BY x % 3 ORDER BY x) AS r FROM {{ ref('clean') }}",
}
COMMANDS = [("validate",), ("explain", "totals"), ("show", "dynamic", "tables"), ("run", "--all")]


@pytest.fixture
def project(tmp_path):
    from dtcli.project import load_project

    root = write_project(tmp_path / "p", TABLES, config="sources:\n  src: {path: data/src}\n")
    project = load_project(root)
    write_source(project, [1, 2, 3])
    for name in ("clean", "totals", "ranked"):      # as a run left them: current with their inputs
        fake_dt(project, name, datetime.now(timezone.utc))
    return project


@pytest.mark.parametrize("command", COMMANDS)
def test_each_table_file_is_parsed_once_per_command(project, command, monkeypatch):
    texts = {name: (project.root / "tables" / f"{name}.sql").read_text() for name in TABLES}
    parsed: Counter = Counter()
    original = sqlglot.parser.Parser.parse

    def counting(self, raw_tokens, sql=None):
        for name, text in texts.items():
            if sql is not None and sql.strip() and sql.strip() in text.replace("{{ ref('clean') }}", "`clean`"):
                parsed[name] += 1
        return original(self, raw_tokens, sql)

    monkeypatch.setattr(sqlglot.parser.Parser, "parse", counting)
    result = dt(*command, "-p", str(project.root))
    assert result.code == 0, result.err
    assert parsed == Counter(dict.fromkeys(TABLES, 1)), parsed


@pytest.mark.parametrize("command", COMMANDS)
def test_planning_commands_start_no_jvm(project, command):
    result = dt_process(*command, "-p", str(project.root), env=no_java_env())
    assert result.returncode == 0, result.stderr
    if command[0] == "run":
        assert "(no Spark needed)" in result.stdout
