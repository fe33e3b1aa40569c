"""What data tests cost an incremental refresh: the benchmark DTs (a) and (b) with and without them.

    .venv/bin/python benchmarks/data_tests.py --sf 1 10

A refresh audits what it is about to commit (docs/configuration.md, "Data tests and
expectations"): row-level checks read the rows it writes, `unique` the keys it writes against the
DT's old rows of those keys. The target (issue 40) is an incremental refresh with three tests at
most 1.2x the same refresh without them, at SF10.

Per scale factor, in one SparkSession: run.py's sources and DTs (a) `shipped_lines` and (b)
`customer_revenue`, created without tests, one change batch committed (run.py's, replayed from its
cache), then per DT and repetition the same INCREMENTAL refresh from the same state of the DT
twice, once with the tests in its YAML and once without, the order alternating between
repetitions (A/B interleaved, so the machine's drift hits both). The tests:

* (a): `not_null` on l_orderkey, `unique_combination_of_columns` on (l_orderkey, l_linenumber)
  (the DT has no one-column key), `accepted_values` on l_returnflag;
* (b): `not_null` and `unique` on o_custkey (the query groups by it: proven, not evaluated),
  and `expression_is_true` on line_count > 0 in place of accepted_values (no column of (b) has a
  short list of values; both are one predicate per written row, counted in the same pass).

The best time of each is reported with the ratio, every sample in benchmarks/work/data_tests.json,
and the load average before and after: only ratios inside one run mean anything.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402
import tpch_data  # noqa: E402
from batches import change_batch  # noqa: E402

TESTS = {
    "shipped_lines": """\
        columns:
          - name: l_orderkey
            data_tests: [not_null]
          - name: l_returnflag
            data_tests:
              - accepted_values: {values: [A, N, R]}
        data_tests:
          - unique_combination_of_columns: {combination_of_columns: [l_orderkey, l_linenumber]}
        """,
    "customer_revenue": """\
        columns:
          - name: o_custkey
            data_tests: [not_null, unique]
        data_tests:
          - dbt_utils.expression_is_true: {expression: 'line_count > 0'}
        """,
}
TABLES = tuple(t for t in bench.TABLES if t.name in TESTS)


def _incremental_project(root: Path, sources: dict, tables=TABLES) -> Path:
    """run.py's project with `refresh_mode: incremental`: ADAPTIVE would pick by measured times,
    which a loaded machine makes pick FULL for one of the two variants."""
    project = _write_project(root, sources, tables)
    yml = project / "dt_project.yml"
    yml.write_text(yml.read_text().replace("refresh_mode: auto", "refresh_mode: incremental"))
    return project


_write_project, bench.write_project = bench.write_project, _incremental_project


def set_tests(project_dir: Path, name: str, on: bool) -> None:
    import textwrap

    yml = project_dir / "tables" / f"{name}.yml"
    if on:
        yml.write_text(textwrap.dedent(TESTS[name]))
    else:
        yml.unlink(missing_ok=True)


def timed(spark, project_dir: Path, name: str, strict: bool = True) -> dict:
    from dtcli import api
    from dtcli.engine.runtime.executor import execute_plan
    from dtcli.model import INCREMENTAL, SUCCEEDED

    plan = api.plan_run(api.check(project_dir, with_stats=True), [name])
    started = time.perf_counter()
    (record,) = execute_plan(spark, plan)
    seconds = time.perf_counter() - started
    if record.state != SUCCEEDED or (strict and record.refresh_action != INCREMENTAL):
        raise RuntimeError(f"{name}: {record.refresh_action} {record.state}: {record.state_message}")
    return {"seconds": seconds, "strategy": record.refresh_strategy, "inserted": record.num_inserted_rows,
            "deleted": record.num_deleted_rows,
            "tests": {t["name"]: (t["status"], t["failures"]) for t in record.data_tests or ()}}


def measure(spark, sf, repeat: int, change_orders: int, batch: str, say=bench.log, strict: bool = True) -> dict:
    p = bench.prepare(spark, sf, TABLES, say=say)
    for table, path in p.pristine.items():
        bench.copy_tree(Path(path), p.sources[table])
    bench.copy_tree(p.created, p.warehouse)
    bench.clear_delta_cache(spark)
    change_batch(spark, p.sf, p.pristine, p.sources, change_orders, say=say, kind=batch)
    before = p.root / "warehouse.before-tests"
    bench.copy_tree(p.warehouse, before)
    out: dict = {}
    try:
        for rep in range(repeat):
            for t in TABLES:
                for on in ((False, True) if rep % 2 == 0 else (True, False)):
                    bench.restore_table(spark, before, p.warehouse, t.name)
                    set_tests(p.project_dir, t.name, on)
                    sample = timed(spark, p.project_dir, t.name, strict)
                    out.setdefault(t.name, {"with": [], "without": []})["with" if on else "without"].append(sample)
                    say(f"  {t.name} #{rep + 1} {'with' if on else 'without'} tests: {sample['seconds']:.2f}s "
                        f"[{sample['strategy']}] +{sample['inserted']:,} -{sample['deleted']:,} {sample['tests']}")
    finally:
        shutil.rmtree(before, ignore_errors=True)
        for t in TABLES:
            set_tests(p.project_dir, t.name, False)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="incremental refresh of the benchmark DTs with and without "
                                                 "data tests")
    parser.add_argument("--sf", type=float, nargs="+", default=[1], help="scale factors (default 1)")
    parser.add_argument("--repeat", type=int, default=4, help="repetitions per DT (pairs, order alternating)")
    parser.add_argument("--batch", choices=("recent", "spread"), default="recent")
    parser.add_argument("--change-orders", type=int, default=bench.DEFAULT_CHANGE_ORDERS)
    parser.add_argument("--no-warmup", dest="warmup", action="store_false")
    args = parser.parse_args(argv)
    scales = [int(s) if float(s).is_integer() else s for s in args.sf]
    for sf in scales:
        tpch_data.ensure(sf, log=bench.log)
    from dtcli.engine.launch.session import local_session

    meta = {"load_before": bench.load_average(), "commit": bench.git("log", "-1", "--format=%h"),
            "batch": args.batch, "change_orders": args.change_orders, "repeat": args.repeat}
    spark = local_session(extra={k: v for k, v in bench.SESSION.items() if k != "spark.master"})
    results = {}
    try:
        if args.warmup:
            # the warm-up's change is large for its tables: ADAPTIVE may recompute them
            measure(spark, 0.01, 1, max(3, args.change_orders // 100), args.batch, say=lambda m: None,
                    strict=False)
        for sf in scales:
            results[bench.sf_label(sf)] = measure(spark, sf, args.repeat, args.change_orders, args.batch)
    finally:
        spark.stop()
    meta["load_after"] = bench.load_average()
    print(f"\nload average before {meta['load_before']}, after {meta['load_after']}; commit {meta['commit']}\n")
    print("| SF | DT | without tests (best) | with tests (best) | ratio | ratio per pair (median) |")
    print("|---|---|---|---|---|---|")
    for sf, per_dt in results.items():
        for name, runs in per_dt.items():
            plain = min(r["seconds"] for r in runs["without"])
            tested = min(r["seconds"] for r in runs["with"])
            pairs = sorted(w["seconds"] / o["seconds"] for w, o in zip(runs["with"], runs["without"]))
            print(f"| {sf} | {name} | {plain:.2f}s | {tested:.2f}s | {tested / plain:.2f}x | "
                  f"{pairs[len(pairs) // 2]:.2f}x |")
    bench.WORK.mkdir(parents=True, exist_ok=True)
    (bench.WORK / "data_tests.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))


if __name__ == "__main__":
    main()
