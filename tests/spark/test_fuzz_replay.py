"""Generated cases (tests/fuzz) replayed through the real engine: the same query, sources and
commits on Delta, refreshed by dt with `refresh_mode: incremental`, each refresh INCREMENTAL (or
NO_DATA) and equal to the query recomputed at the same versions. This checks the Spark
translation and the paths the DuckDB loop does not run (own rows, literal pushdown).

The cases run in batches, so that a run's fixed cost (checking the project, planning) is paid
once per step for many cases and their Spark jobs overlap: one project holds every case's DT (`f_<seed>`, and `g_<seed>` for a case with a
DT reading it) over the case's own sources (`a_<seed>`, ...), each step applies every case's
commits and then ONE run refreshes all DTs, and every DT is checked against its recompute after
each step. A long run prints its summary line after each batch of BATCH cases.

`DT_FUZZ_SPARK` cases (default 2 in `make test`; the long mode uses 200), picked evenly from the
DT_FUZZ_CASES seeds the DuckDB loop runs among those dt accepts (refused ones are skipped, so the
sample is of cases that run), and in the long mode (50 or more) the queries it once reported
(oracle.FOUND); `DT_FUZZ_SPARK_SEEDS=1,2,911f` replays chosen seeds (`<seed>f`: the query
oracle.FOUND keeps under that seed), so a long run stopped part way can be finished batch by
batch. A top-N DT is checked
top-N-aware (tests/top_n.py): with ties at the n-th row, several answers are right.
The summary line counts cases, mismatches, failed refreshes and fallbacks to FULL (by reason:
both are findings), the apply paths taken and the sampled seeds passed over as refused (by the
DuckDB loop's refusal classes, tests/fuzz/oracle.refusal_class).
"""

from __future__ import annotations

import os
import re
import time
from collections import Counter
from dataclasses import dataclass

import pytest

from dtcli.model import INCREMENTAL, NO_DATA, SUCCEEDED
from tests.spark.harness import Env, _row

pytestmark = pytest.mark.spark
duckdb = pytest.importorskip("duckdb")

from tests.fuzz import generator  # noqa: E402
from tests.fuzz.oracle import FOUND, _reason, judge, refusal_class, run_case, run_sql  # noqa: E402

SAMPLE = int(os.environ.get("DT_FUZZ_SPARK", "2"))
SPREAD = int(os.environ.get("DT_FUZZ_CASES", "300"))
# cases whose commits and checks run side by side, and refreshes a run executes side by side:
# a case's Spark jobs on rows by the dozen are mostly waiting (Delta's log, job scheduling)
PARALLEL = 4
# cases per project: enough to amortize a run's fixed cost, few enough to show progress
BATCH = 50
DOWNSTREAM = "\n  -- downstream DT over it as d: "
# the spark types the generator's column types are created with (CTAS from VALUES)
CASTS = {"int": "INT", "str": "STRING", "arr": "ARRAY<INT>"}


def _seeds() -> tuple[list[str], Counter]:
    """The labels of the cases to replay: SAMPLE seeds spread over the DT_FUZZ_CASES range, each
    moved on to the next seed dt accepts (judging a query costs milliseconds, no data), and in
    the long mode (50 or more) the queries oracle.FOUND keeps (`<seed>f`); or the chosen ones.
    With the seeds passed over as refused, by refusal class (the DuckDB loop's classes)."""
    chosen = os.environ.get("DT_FUZZ_SPARK_SEEDS")
    if chosen:
        return [s.strip() for s in chosen.split(",")], Counter()
    step = max(1, SPREAD // max(SAMPLE, 1))
    seeds: list[int] = []
    skipped: Counter = Counter()
    for start in range(0, step * SAMPLE, step):
        seed = start
        while seed in seeds or (refused := judge(generator.query(seed).sql)[1]):
            if seed not in seeds:
                skipped[refusal_class(refused)] += 1
            seed += 1
        seeds.append(seed)
    found = [f"{s}f" for s in sorted(FOUND)] if SAMPLE >= 50 else []
    return [str(s) for s in seeds] + found, skipped


def _cases(labels: list[str]):
    """The outcomes on DuckDB (what to replay) of the cases `labels` name: a seed's generated
    case, or (`<seed>f`) the query oracle.FOUND keeps under that seed."""
    con = duckdb.connect()

    def case(label: str):
        if label.endswith("f"):
            seed = int(label[:-1])
            return run_sql(FOUND[seed][0], seed, con=con)
        return run_case(int(label), con=con)
    cases = [(label, case(label)) for label in labels]
    return [(label, c) for label, c in cases if not c.refused]


@dataclass
class Replayed:
    """One generated case as it runs in the batch: its DTs and commits under per-case names."""

    seed: int
    shape: str
    tables: dict[str, str]          # DT name -> its query
    initial: dict[str, list]        # source name -> rows at the first version
    steps: list[list[str]]          # per step, its commits (Spark SQL over {source})

    @classmethod
    def of(cls, case, label: str | None = None) -> Replayed:
        seed = label or str(case.seed)     # the suffix of the case's table names

        def named(sql: str) -> str:      # the case's sources under their per-case names
            return re.sub(r"\b([abc]) AS (t\d+)\b", rf"\1_{seed} AS \2", sql)
        query, _, below = case.sql.partition(DOWNSTREAM)
        tables = {f"f_{seed}": named(query)}
        if below:
            tables[f"g_{seed}"] = re.sub(r"\bd AS (t\d+)\b", rf"f_{seed} AS \1", below)
        steps = [[re.sub(r"\{([abc])\}", rf"{{\1_{seed}}}", c) for c in commits] for commits in case.steps]
        return cls(case.seed, case.shape, tables, {f"{n}_{seed}": rows for n, rows in case.initial.items()}, steps)


def create_source(env: Env, name: str, rows: list[tuple]) -> None:
    """A source as ONE commit holding its rows (a CREATE then an INSERT costs two)."""
    columns = generator.SOURCES[name.split("_")[0]]
    path = env.path(name)
    props = "TBLPROPERTIES (delta.enableChangeDataFeed = true)"
    if rows:
        casts = ", ".join(f"CAST(col{i + 1} AS {CASTS[t]}) AS {c}" for i, (c, t) in enumerate(columns))
        values = ", ".join(_row(r) for r in rows)
        env.spark.sql(f"CREATE TABLE delta.`{path}` USING delta {props} AS SELECT {casts} FROM VALUES {values}")
    else:
        ddl = ", ".join(f"{c} {CASTS[t]}" for c, t in columns)
        env.spark.sql(f"CREATE TABLE delta.`{path}` ({ddl}) USING delta {props}")
    env.sources[name] = path


class Findings:
    """What the replay found, counted by kind and reason for the summary line."""

    def __init__(self):
        self.failed: Counter = Counter()       # refresh failed (a forced INCREMENTAL that could not run)
        self.fallbacks: Counter = Counter()    # refreshed but not INCREMENTAL / NO_DATA
        self.mismatches: list[str] = []
        self.paths: Counter = Counter()
        self.examples: list[str] = []

    def record(self, replayed: Replayed, name: str, record) -> bool:
        """Counts a refresh; True when it is INCREMENTAL or NO_DATA and succeeded."""
        if record.state != SUCCEEDED:
            self.failed[_reason(record.state_message or record.state)] += 1
            self.examples.append(f"seed {replayed.seed} {name} failed: {record.state_message}\n"
                                 f"  {replayed.tables[name]}")
            return False
        if record.refresh_action not in (INCREMENTAL, NO_DATA):
            self.fallbacks[_reason(f"{record.refresh_action}: {record.refresh_action_reason}")] += 1
            self.examples.append(f"seed {replayed.seed} {name} refreshed {record.refresh_action}: "
                                 f"{record.refresh_action_reason}\n  {replayed.tables[name]}")
            return False
        self.paths[record.refresh_strategy or record.refresh_action] += 1
        return True

    def line(self, cases: int, tables: int, shapes: int, seconds: float, skipped: Counter | None = None) -> str:
        def by(c: Counter) -> str:
            return f"{sum(c.values())}" + (f" ({', '.join(f'{n} {r}' for r, n in c.most_common())})" if c else "")
        return (f"Spark replay: {cases} cases ({tables} DTs), {len(self.mismatches)} mismatches, "
                f"{by(self.failed)} failed refreshes, {by(self.fallbacks)} fallbacks to FULL, "
                f"{shapes} distinct shapes, refresh paths {dict(self.paths)}, "
                f"{by(skipped or Counter())} sampled seeds passed over as refused, {seconds:.0f} s")


class Clock:
    """Seconds spent per phase, for the summary (where a batch's time goes)."""

    def __init__(self):
        self.at, self.spent = time.monotonic(), Counter()

    def lap(self, phase: str) -> None:
        now = time.monotonic()
        self.spent[phase] += now - self.at
        self.at = now

    def __str__(self) -> str:
        return ", ".join(f"{p} {s:.0f} s" for p, s in self.spent.items())


def each_case(batch: list[Replayed], work) -> None:
    """`work(case)` for every case, PARALLEL at a time (a case's own work stays in order)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(PARALLEL) as pool:
        for _ in pool.map(work, batch):
            pass


def check_all(env: Env, batch: list[Replayed], broken: set[str], found: Findings) -> None:
    """Every DT (not already found wrong) equals its query recomputed at the versions its
    frontier records (a top-N: is one of its right answers): one project load for the batch.
    (The recompute's input views are named after the case's own sources: cases do not share
    them.)"""
    from dtcli.engine.runtime.materialize import static_plan
    from tests.helpers import frontier_mismatch

    project = env.project()

    def check(replayed: Replayed) -> None:
        for name, sql in replayed.tables.items():
            if name in broken:
                continue
            wrong = frontier_mismatch(env.spark, project, name)
            if wrong:
                broken.add(name)
                found.mismatches.append(f"seed {replayed.seed} {name}: {sql}\n  {wrong}")
    # adaptive execution off for the whole batch too: the cases' threads each set it around
    # their recompute (frontier_mismatch), and a thread done first would put it back for the rest
    with static_plan(env.spark):
        each_case(batch, check)


def replay_batch(spark, root, cases: list, found: Findings, clock: Clock) -> list[Replayed]:
    """Replay `cases` ((label, outcome on DuckDB) pairs) in one project, adding what it finds
    to `found`; returns the cases replayed."""
    batch = [Replayed.of(c, label) for label, c in cases]
    env = Env(spark, root)
    clock.lap("cases")
    each_case(batch, lambda r: [create_source(env, name, rows) for name, rows in r.initial.items()])
    env.write({name: sql for r in batch for name, sql in r.tables.items()}, threads=PARALLEL)
    clock.lap("sources")
    broken: set[str] = set()
    first = env.refresh()
    clock.lap("refresh")
    for replayed in batch:
        for name in replayed.tables:
            if first[name].state != SUCCEEDED:
                found.record(replayed, name, first[name])
                broken.add(name)
    for step in range(max((len(r.steps) for r in batch), default=0)):
        each_case(batch, lambda r, k=step: [env.sql(c) for c in (r.steps[k] if k < len(r.steps) else [])])
        clock.lap("commits")
        records = env.refresh()
        clock.lap("refresh")
        for replayed in batch:
            for name in replayed.tables:
                if name not in broken and not found.record(replayed, name, records[name]):
                    broken.add(name)
        check_all(env, batch, broken, found)
        clock.lap("check")
    return batch


def test_a_sample_of_generated_cases_matches_on_spark(spark, tmp_path):
    """The sample in batches of BATCH cases (a project each), a line printed after each so that
    a long run shows where it is."""
    start, clock, found = time.monotonic(), Clock(), Findings()
    labels, skipped = _seeds()
    cases, done, line = _cases(labels), [], "no case"
    print(f"\nseeds: {','.join(label for label, _ in cases)}", flush=True)
    for k in range(0, len(cases), BATCH):
        done += replay_batch(spark, tmp_path / f"batch{k}", cases[k:k + BATCH], found, clock)
        line = found.line(len(done), sum(len(r.tables) for r in done), len({r.shape for r in done}),
                          time.monotonic() - start, skipped)
        print(f"\n{line} ({clock})", flush=True)
    problems = found.mismatches + found.examples
    assert not problems, line + "\n\n" + "\n\n".join(problems)
