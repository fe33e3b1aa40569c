"""A top-N whose change removes one of its rows: its top rows recomputed from its internal table
against from its inputs (TPC-H Q3 and Q10 as published, ORDER BY … LIMIT kept).

    .venv/bin/python benchmarks/top_n_state.py --sf 1

For each query, a DT over working copies of the TPC-H tables (refresh_mode incremental) is
created; then the lines of an order behind the DT's first row are deleted, so the change
removes a row the DT holds, and the refresh that follows (INCREMENTAL: the internal table of the
rows under the top-N brought up to the change, the top rows recomputed from it) is timed. At the
same versions, in one Spark session and interleaved (`--repeat` times, the best kept): the top
rows computed from the internal table, and from the inputs by the query as written (what a
top-N that keeps no internal table recomputes); then a FULL refresh. Indicative figures: the
load average is printed beside them.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import tpch_data  # noqa: E402
from run import SESSION, load_average, log  # noqa: E402

WORK = HERE / "work" / "top_n_state"
QUERIES = {
    # the DT's first row is an order: delete its lines
    "q03": ("lineitem", "orders", "customer"),
    # the DT's first row is a customer: delete the lines of one of its orders
    "q10": ("lineitem", "orders", "customer", "nation"),
}


def write_project(sources: dict[str, Path], names: list[str]) -> Path:
    project = WORK / "project"
    if project.exists():
        shutil.rmtree(project)
    (project / "tables").mkdir(parents=True)
    conf = "".join(f"    {k}: '{v}'\n" for k, v in SESSION.items() if k != "spark.master")
    (project / "dt_project.yml").write_text(
        f"name: top_n_state\nwarehouse: {WORK / 'warehouse'}\nspark:\n  master: {SESSION['spark.master']}\n"
        f"  conf:\n{conf}defaults: {{refresh_mode: incremental}}\nsources:\n"
        + "".join(f"  {n}: {{path: '{p}'}}\n" for n, p in sources.items()))
    for name in names:
        (project / "tables" / f"{name}.sql").write_text((HERE / "tpch_queries" / f"{name}.sql").read_text())
    return project


def refresh(spark, project: Path, name: str, full: bool = False):
    from dtcli import api
    from dtcli.engine.runtime.executor import execute_plan

    plan = api.plan_run(api.check(project, with_stats=True), [name], full_refresh=full)
    started = time.perf_counter()
    record = next(r for r in execute_plan(spark, plan, write_history=True) if r.name == name)
    if record.state != "SUCCEEDED":
        raise RuntimeError(f"{name}: {record.state_message}")
    return time.perf_counter() - started, record, next(s for s in plan.steps if s.name == name)


def delete_among_top(spark, project: Path, name: str, sources: dict[str, Path]) -> str:
    """Delete the lines of an order behind the DT's first row (by its ORDER BY)."""
    from dtcli import api
    from dtcli.engine.runtime.strategies.top_n import window

    checked = api.check(project)
    step = next(s for s in api.plan_run(checked, [name]).steps if s.name == name)
    spec = step.options.top_n
    top = window(spark.read.format("delta").load(spec.state.path), spec).first()
    if name == "q03":
        order = top["l_orderkey"]
    else:
        order = (spark.read.format("delta").load(str(sources["orders"]))
                 .filter(f"o_custkey = {top['c_custkey']}").select("o_orderkey").first()[0])
    spark.sql(f"DELETE FROM delta.`{sources['lineitem']}` WHERE l_orderkey = {order}")
    return f"lines of order {order}"


def best_of(repeat: int, *runs):
    """Each function run `repeat` times, interleaved; the best time of each."""
    times = [[] for _ in runs]
    for _ in range(repeat):
        for k, run in enumerate(runs):
            started = time.perf_counter()
            run()
            times[k].append(time.perf_counter() - started)
    return [min(t) for t in times]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=tpch_data.scale, default=1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--queries", nargs="+", choices=list(QUERIES), default=list(QUERIES))
    args = parser.parse_args(argv)
    tables = sorted({t for q in args.queries for t in QUERIES[q]})
    tpch_data.ensure(args.sf, tuple(tables), log=log)
    if WORK.exists():
        shutil.rmtree(WORK)
    sources = {}
    for table in tables:
        sources[table] = WORK / "src" / table
        tpch_data.working_copy(tpch_data.delta_path(args.sf, table), sources[table])
    project = write_project(sources, args.queries)

    from dtcli.engine.launch.session import local_session
    from dtcli.engine.runtime.executor import bind_inputs, unbind_inputs
    from dtcli.engine.runtime.strategies.top_n import window

    spark = local_session(extra={k: v for k, v in SESSION.items() if k != "spark.master"})
    rows = []
    print(f"load before: {load_average()}")
    try:
        for name in args.queries:
            created, _, _ = refresh(spark, project, name)
            what = delete_among_top(spark, project, name, sources)
            seconds, record, step = refresh(spark, project, name)
            spec = step.options.top_n
            state = spark.read.format("delta").load(spec.state.path)
            versions = bind_inputs(spark, step, {})
            try:
                from_state, from_inputs = best_of(
                    args.repeat, lambda state=state, spec=spec: window(state, spec).collect(),
                    lambda sql=step.sql: spark.sql(sql).collect())
            finally:
                unbind_inputs(spark, step)
            full, _, _ = refresh(spark, project, name, full=True)
            rows.append((name, state.count(), what, record.refresh_strategy, seconds, from_state,
                         from_inputs, full, created, versions))
            log(f"{name}: {record.refresh_action} {record.refresh_strategy} {seconds:.1f}s; top rows from "
                f"state {from_state:.2f}s, from inputs {from_inputs:.2f}s; FULL {full:.1f}s")
    finally:
        spark.stop()
    print(f"\nSF{args.sf:g}, load after: {load_average()}")
    print("| query | internal rows | change | strategy | INCREMENTAL s | top rows from state s | "
          "from inputs s | inputs / state | FULL s | FULL / INCREMENTAL |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name, n, what, how, inc, st, inp, full, _, _ in rows:
        print(f"| {name} | {n} | {what} | {how} | {inc:.1f} | {st:.2f} | {inp:.2f} | {inp / st:.1f}x | "
              f"{full:.1f} | {full / inc:.1f}x |")


if __name__ == "__main__":
    main()
