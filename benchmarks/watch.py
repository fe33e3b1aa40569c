"""A `dt run --watch` pass with work against a fresh `dt run`, on the same change.

    .venv/bin/python benchmarks/watch.py [--repeat 3]

On a copy of the example shop (benchmarks/work/watch/): seed, create every DT, then per
repetition commit one change batch to the sources (new orders with lines, a status update, a
deleted line) and refresh every DT

- **fresh:** `dt run --all` as a new process, end to end (Python start, planning, spark-submit,
  JVM start, the refreshes, history);
- **watch:** one pass of `dt run --watch`'s loop (`api.watch.watch` with the CLI's warm engine)
  started by the same change, timed from the pass's start (planning included) to its end; the
  first pass with work starts the application and is reported apart.

Both sides refresh the same seven DTs INCREMENTAL from the same kind of change; the actions are
printed. Only ratios inside one run mean anything on a shared machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
from deltalake import DeltaTable, write_deltalake

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))

from dtcli import api  # noqa: E402
from dtcli.api.watch import watch  # noqa: E402
from dtcli.engine.launch.warm import WarmEngine  # noqa: E402
from dtcli.planning.schedule import ManualClock  # noqa: E402

DT = [str(Path(sys.executable).parent / "dt")]


def change(project: Path, batch: int) -> None:
    """One batch of source changes, distinct for every `batch` (no key is reused)."""
    wh = project / "warehouse"
    first = 5000 + 10 * batch
    ids = [first, first + 1]
    write_deltalake(str(wh / "orders"), pa.table({
        "order_id": pa.array(ids, pa.int64()), "customer_id": pa.array([3, 7], pa.int32()),
        "status": ["placed", "placed"],
        "ordered_at": pa.array([1793000000000000 + batch, 1793000600000000 + batch], pa.timestamp("us", tz="UTC"))}),
        mode="append")
    write_deltalake(str(wh / "order_lines"), pa.table({
        "order_id": pa.array([ids[0], ids[0], ids[1]], pa.int64()), "line_no": pa.array([1, 2, 1], pa.int32()),
        "product_id": pa.array([101, 105, 110], pa.int32()), "quantity": pa.array([2, 1, 3], pa.int32())}),
        mode="append")
    DeltaTable(str(wh / "orders")).update(predicate=f"order_id = {1001 + batch % 100}",
                                          updates={"status": "'delivered'" if batch % 2 else "'shipped'"})
    DeltaTable(str(wh / "order_lines")).delete(f"order_id = {1001 + batch % 100} AND line_no = 1")


def dt(*args: str, project: Path) -> subprocess.CompletedProcess:
    done = subprocess.run([*DT, *args, "-p", str(project)], capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        raise SystemExit(f"dt {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")
    return done


def actions(project: Path) -> list[str]:
    doc = json.loads((project / "target" / "run_results.json").read_text())
    return sorted({r["refresh_action"] for r in doc["results"]})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    project = HERE / "work" / "watch"
    shutil.rmtree(project, ignore_errors=True)
    shutil.copytree(REPO / "example_project", project,
                    ignore=shutil.ignore_patterns("warehouse", "target", "spark-warehouse"))
    # measured as before `catalog:`: registering by name is not what this benchmark compares
    yml = project / "dt_project.yml"
    yml.write_text(yml.read_text().replace("catalog:\n  schema: analytics\n", ""))
    dt("seed", project=project)
    dt("run", "--all", project=project)
    batch = 0

    fresh = []
    for _ in range(args.repeat):
        batch += 1
        change(project, batch)
        started = time.monotonic()
        dt("run", "--all", project=project)
        fresh.append(time.monotonic() - started)
        print(f"fresh dt run --all: {fresh[-1]:.2f} s {actions(project)}", flush=True)

    passes: list[tuple[float, list[str]]] = []
    engine = WarmEngine()
    pass_started = [0.0]

    def check(now):
        pass_started[0] = time.monotonic()
        return api.check(project, now=now, check_sources=True, with_stats=True)

    def on_pass(n, result, wake):
        passes.append((time.monotonic() - pass_started[0], sorted({r.refresh_action for r in result.records})))
        print(f"watch pass {n}: {passes[-1][0]:.2f} s {passes[-1][1]}", flush=True)

    class Changing(ManualClock):
        def sleep(self, seconds: float) -> None:
            nonlocal batch
            batch += 1
            change(project, batch)
            self.advance(max(seconds, 7200.0))     # every DT is due at the next pass

    clock = Changing(datetime.now(timezone.utc) + timedelta(hours=2))
    try:
        # pass 1 finds nothing to do (no change yet: NO_DATA, no application); the sleep after
        # each pass commits a change, so pass 2 starts the application and the rest reuse it
        watch(check, clock=clock, max_ticks=args.repeat + 2, on_pass=on_pass, launcher=engine.launch)
    finally:
        engine.close()
    assert passes[0][1] == ["NO_DATA"], passes[0]
    first, warm = passes[1][0], [t for t, _ in passes[2:]]
    best_fresh, best_warm = min(fresh), min(warm)
    print()
    print("| | seconds (best) | median | samples |")
    print("|---|---:|---:|---|")
    print(f"| fresh `dt run --all` | {best_fresh:.2f} | {statistics.median(fresh):.2f} | "
          f"{', '.join(f'{t:.2f}' for t in fresh)} |")
    print(f"| `--watch` pass, application already warm | {best_warm:.2f} | {statistics.median(warm):.2f} | "
          f"{', '.join(f'{t:.2f}' for t in warm)} |")
    print(f"| `--watch` first pass with work (starts the application) | {first:.2f} | | |")
    print(f"\nfresh ÷ warm pass: {best_fresh / best_warm:.1f}× (best), "
          f"{statistics.median(fresh) / statistics.median(warm):.1f}× (median); "
          f"applications started by the watch: {engine.starts}")


if __name__ == "__main__":
    main()
