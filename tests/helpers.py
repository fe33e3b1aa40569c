"""Shared test helpers: build projects on disk, run the CLI in-process, compare DTs to recomputes."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DT_BIN = Path(sys.executable).with_name("dt")


def write_project(root: Path, tables: dict[str, str], *, config: str = "", table_yml: dict[str, str] | None = None,
                  seeds: dict[str, str] | None = None, name: str = "proj") -> Path:
    """A project folder: dt_project.yml (+ extra YAML), tables/*.sql, optional seeds/*.csv."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "dt_project.yml").write_text(
        f"name: {name}\nwarehouse: warehouse\nspark:\n  master: local[1]\n  conf:\n"
        f"    spark.sql.shuffle.partitions: \"1\"\n" + textwrap.dedent(config))
    (root / "tables").mkdir(exist_ok=True)
    for table, sql in tables.items():
        (root / "tables" / f"{table}.sql").write_text(textwrap.dedent(sql).strip() + "\n")
    for table, yml in (table_yml or {}).items():
        (root / "tables" / f"{table}.yml").write_text(textwrap.dedent(yml))
    if seeds:
        (root / "seeds").mkdir(exist_ok=True)
        for seed, csv in seeds.items():
            (root / "seeds" / f"{seed}.csv").write_text(textwrap.dedent(csv).strip() + "\n")
    return root


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


def dt(*args: str) -> CliResult:
    """Run `dt ARGS` in this process through the real entry point (its one error boundary)."""
    from dtcli.cli import main

    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["dt", *args]
    code = 0
    try:
        with redirect_stdout(out), redirect_stderr(err):
            try:
                main()
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = argv
    return CliResult(code, out.getvalue(), err.getvalue())


def dt_process(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
               timeout: int = 900) -> subprocess.CompletedProcess:
    """Run the installed `dt` console script as its own process (what a user runs)."""
    full_env = dict(os.environ, COLUMNS="200")
    full_env.update(env or {})
    return subprocess.run([str(DT_BIN), *args], capture_output=True, text=True, env=full_env,
                          cwd=cwd, timeout=timeout)


def no_java_env() -> dict[str, str]:
    """An environment where starting a JVM is impossible: a command that needs one fails."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env["PATH"] = str(Path(sys.executable).parent)          # the venv only: no java on PATH
    env["SPARK_HOME"] = "/nonexistent"                      # and no Spark to find it through
    return env


def tree_state(path: Path) -> dict[str, int]:
    """File names and sizes under a folder: to prove that nothing was written."""
    if not path.exists():
        return {}
    return {str(p.relative_to(path)): p.stat().st_size for p in sorted(path.rglob("*")) if p.is_file()}


def multiset(df):
    """Rows with their multiplicity, comparable across DataFrames (handles NULLs and duplicates)."""
    cols = df.columns
    return Counter({tuple(r[:-1]): r[-1] for r in df.groupBy(*cols).count().collect()})


def recompute(spark, project, name: str, versions: dict[str, int]):
    """The DT's query evaluated from scratch over its inputs at the given versions."""
    table = project.tables[name]
    for inp in table.inputs:
        version_frame(spark, project.input_path(inp), versions[inp]).createOrReplaceTempView(inp)
    return spark.sql(table.spark_sql)


def rows_of(df) -> Counter:
    """A DataFrame's rows as a multiset of tuples (arrays as tuples), collected."""
    return Counter(tuple(tuple(v) if isinstance(v, list) else v for v in r) for r in df.collect())


# Delta types whose values deltalake gives as PySpark's collect() does (a TIMESTAMP once made
# local time, as PySpark makes it) and as createDataFrame takes them; a table with another (a
# struct, a map, binary) or with a CHAR / VARCHAR column (padded by Spark's reader) is read with
# Spark
_PLAIN_TYPES = {"byte", "short", "integer", "long", "float", "double", "string", "boolean", "date",
                "timestamp", "timestamp_ntz"}
LOCAL_ROWS = 10_000      # a version with more rows is read with Spark


def _plain(delta_type) -> bool:
    if isinstance(delta_type, dict):
        return delta_type.get("type") == "array" and _plain(delta_type.get("elementType"))
    return delta_type in _PLAIN_TYPES or str(delta_type).startswith("decimal(")


def _as_spark_collects(value):
    """A value from deltalake as PySpark's collect() gives it: a TIMESTAMP (deltalake: aware, in
    UTC) as a naive datetime in this process's local time, an array as a tuple of such values."""
    import calendar
    from datetime import datetime

    if isinstance(value, datetime) and value.tzinfo is not None:     # as TimestampType.fromInternal
        return datetime.fromtimestamp(calendar.timegm(value.utctimetuple())).replace(microsecond=value.microsecond)
    if isinstance(value, list):
        return tuple(_as_spark_collects(v) for v in value)
    return value


def _read_plain(path: str, version: int, most: int | None = None):
    """(schema as Delta's log writes it, rows as dicts) of a Delta table at `version`, read
    through deltalake (its query engine reads deletion vectors and column mapping), or None when
    a column is not plain or the version holds more than `most` rows: then Spark reads it."""
    from deltalake import DeltaTable

    from dtcli.state import storage
    from dtcli.state.delta_log import query_rows

    table = DeltaTable(storage.uri(path), version=version, storage_options=storage.options(path))
    schema = json.loads(table.schema().to_json())
    if not all(_plain(f["type"]) and "__CHAR_VARCHAR_TYPE_STRING" not in f.get("metadata", {})
               for f in schema.get("fields", [])):
        return None
    if most is not None:
        counts = query_rows(table, "SELECT COUNT(*) AS n FROM t")
        if counts[0]["n"] > most:
            return None
    return schema, query_rows(table, "SELECT * FROM t")


def table_rows(spark, path: str, version: int) -> tuple[list[str], Counter]:
    """A Delta table's columns and rows at `version`, the rows as rows_of gives them from Spark:
    through deltalake when its columns are plain, with no Spark job (Spark took 3 to 5 for a DT
    of a dozen rows, most of them to rebuild the version's snapshot)."""
    read = _read_plain(path, version)
    if read is None:
        df = spark.read.format("delta").option("versionAsOf", version).load(path)
        return df.columns, rows_of(df)
    schema, rows = read
    names = [f["name"] for f in schema.get("fields", [])]
    return names, Counter(tuple(_as_spark_collects(r[n]) for n in names) for r in rows)


def version_frame(spark, path: str, version: int):
    """A Delta table at `version` as a DataFrame to recompute a query over: its rows read through
    deltalake into a local DataFrame of the table's schema when it is small and its columns
    plain (a recompute of a dozen rows over two inputs read by Spark ran 9 jobs, most of them
    to rebuild the versions' snapshots; over local rows, 1); else Spark's reader."""
    from pyspark.sql.types import StructType

    read = _read_plain(path, version, most=LOCAL_ROWS)
    if read is None:
        return spark.read.format("delta").option("versionAsOf", version).load(path)
    schema, rows = read
    names = [f["name"] for f in schema.get("fields", [])]     # the log's order (deltalake puts partition columns last)
    return spark.createDataFrame([tuple(r[n] for n in names) for r in rows], StructType.fromJson(schema))


def recompute_problem(spark, project, name: str, versions: dict[str, int], actual: Counter,
                      columns: list[str] | None = None) -> str | None:
    """None when `actual` (the DT's rows; `columns`, when given, its columns) is what its query
    gives recomputed at `versions`: the same multiset, or for a top-N (`ORDER BY … LIMIT n`,
    where ties make several answers right) one of its right answers (tests/top_n.py); else what
    differs."""
    from tests import top_n

    expected = recompute(spark, project, name, versions)     # registers the inputs' views
    if columns is not None and list(columns) != expected.columns:
        return f"columns {list(columns)} != {expected.columns}"
    top = top_n.split(project.tables[name].spark_sql, columns=expected.columns)
    if top is not None:
        return top_n.problem(actual, rows_of(spark.sql(top.inner)), top)
    expected = rows_of(expected)
    if actual == expected:
        return None
    return f"only in table: {dict(actual - expected)}\n  only in recompute: {dict(expected - actual)}"


def frontier_mismatch(spark, project, name: str, *, columns: bool = False) -> str | None:
    """None when the DT (at the version its frontier was committed with) is what its query gives
    recomputed at the versions that frontier records (recompute_problem; `columns`: with the same
    columns too); else the versions and what differs. The recompute runs without adaptive
    execution (a job per query rather than per shuffle; the refreshes keep the session's
    settings)."""
    from dtcli.engine.runtime.materialize import static_plan
    from dtcli.state.delta_log import table_info

    info = table_info(project.table_path(name), with_stats=False)
    assert info is not None and info.frontier is not None, f"{name} has no frontier"
    versions = info.frontier.source_versions
    names, actual = table_rows(spark, project.table_path(name), info.frontier_version)
    with static_plan(spark):
        wrong = recompute_problem(spark, project, name, versions, actual, names if columns else None)
    return None if wrong is None else f"at {versions}:\n  {wrong}"


def assert_matches_recompute(spark, project, name: str) -> None:
    """The DT equals its query recomputed at the versions its frontier records, as a multiset,
    with the same columns."""
    wrong = frontier_mismatch(spark, project, name, columns=True)
    assert wrong is None, f"{name} differs from its recompute {wrong}"


def checkpoint_blocks(spark, at_most: int | None = None) -> int:
    """How many RDDs of dt's own hold blocks in the session: a refresh must release its
    checkpoints and the inputs its run kept in memory (Delta's cached log states, "Delta Table
    State ...", are Delta's to manage). `at_most`: the count once it is no more than that, or
    what is left after 10 s: Spark removes some blocks after the call that let them go returns
    (an earlier test's included), so a count taken at once can see them still."""
    import time

    deadline = time.monotonic() + 10
    while True:
        infos = spark.sparkContext._jsc.sc().getRDDStorageInfo()
        count = sum(not info.name().startswith("Delta Table State") for info in infos)
        if at_most is None or count <= at_most or time.monotonic() > deadline:
            return count
        time.sleep(0.2)


def jobs_run(spark, group: str, action) -> tuple[object, int]:
    """`action()`'s result and how many Spark jobs it ran (under job group `group`, unique)."""
    spark.sparkContext.setJobGroup(group, group)
    try:
        result = action()
    finally:
        spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)
    return result, len(spark.sparkContext.statusTracker().getJobIdsForGroup(group))
