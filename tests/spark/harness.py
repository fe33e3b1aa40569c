"""A small in-process environment for differential tests of refreshes.

Sources are Delta tables created with Spark (change data feed on) and declared in a tmp
project; refreshes run planner + executor in this process on the shared SparkSession.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

from tests.helpers import frontier_mismatch, write_project


class Env:
    def __init__(self, spark, root: Path):
        self.spark, self.root = spark, root
        self.sources: dict[str, str] = {}
        self.projects: dict[str, dict[str, str]] = {}     # project folder -> its tables

    def path(self, name: str) -> str:
        return str(self.root / "src" / name)

    def create_source(self, name: str, ddl: str, rows: list[tuple] | None = None) -> None:
        path = self.path(name)
        self.spark.sql(f"CREATE TABLE delta.`{path}` ({ddl}) USING delta "
                       "TBLPROPERTIES (delta.enableChangeDataFeed = true)")
        self.sources[name] = path
        if rows:
            self.insert(name, rows)

    def sql(self, statement: str) -> None:
        for name, path in self.sources.items():
            statement = statement.replace("{" + name + "}", f"delta.`{path}`")
        self.spark.sql(statement)

    def insert(self, name: str, rows: list[tuple]) -> None:
        if not rows:
            return
        self.sql(f"INSERT INTO {{{name}}} VALUES " + ", ".join(_row(r) for r in rows))

    def write(self, tables: dict[str, str], dialect: str = "spark", folder: str = "proj",
              table_yml: dict[str, str] | None = None, threads: int | None = None) -> None:
        """A project over the sources (one per dialect; table names unique across them);
        `threads`: refreshes a run executes side by side (dt's default when None)."""
        self.projects[folder] = tables
        sources = "".join(f"  {n}: {{path: '{p}'}}\n" for n, p in self.sources.items())
        # the incremental engine is what these tests check: no per-refresh choice of FULL
        write_project(self.root / folder, tables, table_yml=table_yml,
                      config=f"dialect: {dialect}\ndefaults: {{refresh_mode: incremental}}\n"
                      + (f"threads: {threads}\n" if threads else "") + "sources:\n" + sources)

    def project(self, name: str | None = None):
        from dtcli import api

        folder = next((f for f, tables in self.projects.items() if name in tables), "proj")
        return api.load(self.root / folder)

    def refresh(self, names: list[str] | None = None, now=None):
        """Plan and execute one run of every project in process (its snapshot taken at `now`);
        records by table name."""
        from dtcli import api
        from dtcli.engine.runtime.executor import execute_plan

        records = []
        for folder, tables in self.projects.items():
            wanted = [n for n in names if n in tables] if names else None
            if names and not wanted:
                continue
            plan = api.plan_run(api.check(self.root / folder, with_stats=True, now=now), wanted)
            records += api.no_data_records(plan) + execute_plan(self.spark, plan, write_history=False)
        return {r.name: r for r in records}

    def run_batches(self, batches: list[list[str]], *, check_created: bool = True, no_data: bool = True,
                    refresh: Callable[[], dict] | None = None) -> list[dict]:
        """The differential loop: a run creating every DT (each checked against its recompute
        unless `check_created` is false), then per batch its statements committed, a run, every
        refresh SUCCEEDED and INCREMENTAL (or NO_DATA, unless `no_data` is false) and every DT
        equal to its recompute (check). `refresh` makes a run (Env.refresh when None). Returns
        each run's records by DT, the creation's first."""
        from dtcli.model import INCREMENTAL, NO_DATA, SUCCEEDED

        refresh = refresh or self.refresh
        allowed = (INCREMENTAL, NO_DATA) if no_data else (INCREMENTAL,)
        runs = [refresh()]
        for name, record in runs[0].items():
            assert record.state == SUCCEEDED, (name, record.state_message)
            if check_created:
                self.check(name)
        for batch in batches:
            for statement in batch:
                self.sql(statement)
            records = refresh()
            for name, record in records.items():
                assert record.state == SUCCEEDED, (name, record.state_message)
                assert record.refresh_action in allowed, (name, record.refresh_action, record.state_message)
                self.check(name)
            runs.append(records)
        return runs

    def check(self, name: str) -> None:
        """The DT equals its query recomputed at the versions its frontier records (for a
        top-N, is one of the right answers: tests/top_n.py)."""
        wrong = frontier_mismatch(self.spark, self.project(name), name)
        assert wrong is None, f"{name} differs from its recompute {wrong}"

    def version(self, name: str) -> int:
        from dtcli.state.delta_log import table_version

        return table_version(self.sources.get(name) or self.project(name).table_path(name))


def strategies_taken(runs: list[dict]) -> dict[str, set[str]]:
    """The strategies each DT's refreshes after its creation took (NO_DATA runs left out), from
    Env.run_batches's records."""
    from dtcli.model import NO_DATA

    taken: dict[str, set[str]] = {name: set() for name in runs[0]}
    for records in runs[1:]:
        for name, record in records.items():
            if record.refresh_action != NO_DATA:
                taken.setdefault(name, set()).add(record.refresh_strategy)
    return taken


def _lit(v) -> str:
    from decimal import Decimal

    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, (int,)):
        return str(v)
    if isinstance(v, Decimal):
        return f"CAST('{v}' AS DECIMAL(12,2))"
    if isinstance(v, (list, tuple)):
        return ("array(" + ", ".join(_lit(x) for x in v) + ")") if v else "CAST(array() AS ARRAY<INT>)"
    return "'" + str(v).replace("'", "''") + "'"


def _row(r: tuple) -> str:
    return "(" + ", ".join(_lit(v) for v in r) + ")"


def dedent(sql: str) -> str:
    return textwrap.dedent(sql).strip()
