"""Generated cases (tests/fuzz) replayed through the real engine: the same query, sources and
commits on Delta, refreshed by dt with `refresh_mode: incremental`, each refresh INCREMENTAL (or
NO_DATA) and equal to the query recomputed at the same versions. This checks the Spark
translation and the paths the DuckDB loop does not run (own rows, literal pushdown).

`DT_FUZZ_SPARK` cases (default 2 in `make test`; the long mode uses 200), picked from the seeds
the DuckDB loop runs; `DT_FUZZ_SPARK_SEEDS=1,2,3` replays chosen seeds.
"""

from __future__ import annotations

import os

import pytest

from dtcli.model import INCREMENTAL, NO_DATA, SUCCEEDED
from tests.spark.harness import Env

pytestmark = pytest.mark.spark
duckdb = pytest.importorskip("duckdb")

from tests.fuzz import generator  # noqa: E402
from tests.fuzz.oracle import run_case  # noqa: E402

SAMPLE = int(os.environ.get("DT_FUZZ_SPARK", "2"))
SPREAD = int(os.environ.get("DT_FUZZ_CASES", "300"))


def _seeds() -> list[int]:
    chosen = os.environ.get("DT_FUZZ_SPARK_SEEDS")
    if chosen:
        return [int(s) for s in chosen.split(",")]
    step = max(1, SPREAD // max(SAMPLE, 1))
    return list(range(0, step * SAMPLE, step))


def replay(spark, root, seed: int) -> tuple[str, list[str]]:
    """Replay case `seed`; returns its shape and the refresh paths taken (raises on a mismatch)."""
    case = run_case(seed, con=duckdb.connect())
    if case.refused:
        return "refused", []
    env = Env(spark, root / f"case{seed}")
    for name, rows in case.initial.items():
        env.create_source(name, generator.DDL[name], rows)
    env.write({"f": case.sql})
    first = env.refresh()["f"]
    assert first.state == SUCCEEDED, (seed, first.state_message, case.sql)
    paths = []
    for commits in case.steps:
        for statement in commits:
            env.sql(statement)
        record = env.refresh()["f"]
        assert record.state == SUCCEEDED, (seed, record.state_message, case.sql)
        assert record.refresh_action in (INCREMENTAL, NO_DATA), (seed, record.refresh_action, case.sql)
        paths.append(record.refresh_strategy or record.refresh_action)
        try:
            env.check("f")
        except AssertionError as err:
            raise AssertionError(f"seed {seed}: {case.sql}\n{err}") from None
    return case.shape, paths


def test_a_sample_of_generated_cases_matches_on_spark(spark, tmp_path):
    seen = [replay(spark, tmp_path, seed) for seed in _seeds()]
    ran = [s for s in seen if s[0] != "refused"]
    print(f"\nSpark replay: {len(ran)} cases, 0 mismatches, paths "
          f"{sorted({p for _, paths in ran for p in paths})}")
