"""The 22 TPC-H queries as dynamic tables: INCREMENTAL against FULL per DT, whole runs, and
Spark Declarative Pipelines (issue 38, item 9).

    .venv/bin/python benchmarks/tpch22.py --sf 1 10 --peer-sf 1 3     # the issue's figures
    .venv/bin/python benchmarks/tpch22.py --sf 0.01 --peer-sf 0.01 --queries q01 q18   # that it works

For each scale factor of `--sf`, over working copies of the eight TPC-H tables (tpch_data.py), a
project of the 22 queries pasted unchanged as `tables/qNN.sql` (tpch22_project.py): every DT
`refresh_mode: incremental` where dt accepts that, else `auto` (dt's FULL, with its reason). One
run creates them; then the recent change batch extended to every table but nation and region is
committed (tpch_changes.py: new orders with their lines, deleted and updated orders with their
lines, and updated customers, parts, partsupp rows and suppliers; one MERGE per table). From the
warehouse as it was before the change (restored each time: hard links, see
tpch_data.working_copy):

1. per DT: the refresh dt does after the change (its action and strategy), timed, and a
   `--full-refresh` of the same DT at the same versions, timed; their ratio; the two results
   compared (row count and sum of row hashes; a top-N with ties at its n-th row may differ);
2. the whole `dt run` after the change (every DT, one plan) against the whole `dt run
   --full-refresh`;
3. per DT, the action ADAPTIVE (`refresh_mode: auto`) would choose after the change, planned
   without a JVM from the same state and history, and whether it is the faster of the two.

Both in one SparkSession driving the engine in-process (dtcli.api + execute_plan, as run.py),
timing execute_plan. Then, for the scale factors of `--peer-sf` (after that session stopped): `dt
run --all` after the change against `spark-pipelines run` of the same 22 queries as materialized
views over the same sources (peers.py's set-up; DELTA-NOTES.md item 16), each a process timed from
start to exit, from a creation run of each and the same change.

Results are printed as markdown, written to benchmarks/work/tpch22/results.json, and with
`--readme` put between the tpch22 markers of benchmarks/README.md. Only ratios measured in one
run mean anything; the load average is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import textwrap
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
WORK = HERE / "work" / "tpch22"
README = HERE / "README.md"
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(HERE))

import peers  # noqa: E402
import run as bench  # noqa: E402
import tpch22_project  # noqa: E402
import tpch_changes  # noqa: E402
import tpch_data  # noqa: E402

BEGIN, END = "<!-- tpch22:begin -->", "<!-- tpch22:end -->"


def log(msg: str) -> None:
    print(f"[{datetime.now().strftime('%H:%M:%S')}] {msg}", flush=True)


def sources_copy(root: Path, sf: float) -> dict[str, Path]:
    """Writable copies of the eight pristine tables (generated once per scale factor)."""
    pristine = tpch_data.ensure(sf, tpch_data.ALL_TABLES, log=log)
    sources = {t: root / "sources" / t for t in pristine}
    for table, path in pristine.items():
        tpch_data.working_copy(path, sources[table])
    return sources


def project(root: Path, sources: dict[str, Path], queries: list[str] | None = None) -> tpch22_project.Built:
    built = tpch22_project.write_project(root, sources, target_lag="1 hour", refresh_mode="incremental",
                                         fallback_mode="auto", spark=bench.SESSION, queries=queries)
    log(built.summary())
    return built


def change(sources: dict[str, Path], batch_no: int = 0) -> dict[str, Any]:
    result = tpch_changes.apply_batch({t: sources[t] for t in tpch_changes.CHANGED_TABLES}, batch_no)
    log(tpch_changes.describe(result))
    return result


def restore(spark, snapshot: Path, warehouse: Path) -> None:
    tpch_data.working_copy(snapshot, warehouse)
    bench.clear_delta_cache(spark)


def measure_scale(spark, sf: float, queries: list[str] | None = None, say=log) -> dict[str, Any]:
    """Per DT and whole-run figures at one scale factor (see the module docstring, 1 and 2)."""
    root = WORK / f"sf{sf:g}"
    shutil.rmtree(root, ignore_errors=True)
    sources = sources_copy(root, sf)
    built = project(root, sources, queries)
    bench.clear_delta_cache(spark)
    say(f"SF{sf:g}: creating {len(built.accepted)} DTs")
    started = time.perf_counter()
    creation = bench.refresh(spark, built.project_dir, None, full=False)
    out: dict[str, Any] = {"sf": sf, "accepted": built.accepted, "refused": built.refused,
                           "modes": {n: built.modes[n] for n in built.accepted}, "fallbacks": built.fallbacks,
                           "creation_seconds": time.perf_counter() - started,
                           "rows": {n: r["inserted"] for n, r in creation.items()}}
    out["change"] = change(sources)
    chosen = adaptive_choices(built.project_dir)
    before = root / "warehouse.before"
    tpch_data.working_copy(built.warehouse, before)
    out["dts"] = {}
    for name in built.accepted:
        restore(spark, before, built.warehouse)
        after = bench.refresh(spark, built.project_dir, name, full=False)[name]
        mine = bench.fingerprint(spark, str(built.warehouse / name), after["version"])
        restore(spark, before, built.warehouse)
        full = bench.refresh(spark, built.project_dir, name, full=True)[name]
        truth = bench.fingerprint(spark, str(built.warehouse / name), full["version"])
        out["dts"][name] = {"action": after["action"], "strategy": after["strategy"], "mode": after["mode"],
                            "reason": after["mode_reason"] or after["message"], "seconds": after["seconds"],
                            "full_seconds": full["seconds"], "equal": mine == truth,
                            "inserted": after["inserted"], "deleted": after["deleted"],
                            "adaptive": chosen.get(name)}
        d = out["dts"][name]
        say(f"  {name}: {d['action']} [{d['strategy']}] {d['seconds']:.2f}s vs FULL {d['full_seconds']:.2f}s "
            f"({ratio(d['full_seconds'], d['seconds'])}){'' if d['equal'] else ', results DIFFER'}")
    for full in (False, True):
        restore(spark, before, built.warehouse)
        started = time.perf_counter()
        records = bench.refresh(spark, built.project_dir, None, full=full)
        key = "run_full" if full else "run"
        out[key] = {"seconds": time.perf_counter() - started,
                    "actions": {n: r["action"] for n, r in records.items()}}
        say(f"  dt run{' --full-refresh' if full else ''}: {out[key]['seconds']:.1f}s")
    shutil.rmtree(before, ignore_errors=True)
    return out


# -- Spark Declarative Pipelines -----------------------------------------------------------

PIPELINE = '''
from pyspark import pipelines as dp

SOURCES = {sources!r}
QUERIES = {queries!r}


def _source(name, path):
    @dp.temporary_view(name=name)
    def read():
        return spark.read.format("delta").load(path)


def _view(name, sql):
    @dp.materialized_view(name=name)
    def query():
        return spark.sql(sql)


for _name, _path in SOURCES.items():
    _source(_name, _path)
for _name, _sql in QUERIES.items():
    _view(_name, _sql)
'''


def pipeline(root: Path, sources: dict[str, Path], names: list[str]) -> dict[str, str]:
    """peers.py's pipeline project, its definitions the 22 queries (their text, unchanged) as
    materialized views over the sources as temporary views."""
    spec = peers.sdp_project(root, sources, delta_format=False)
    folder = Path(spec["project"]) / "transformations"
    shutil.rmtree(folder)
    folder.mkdir()
    queries = {n: (tpch22_project.QUERIES / f"{n}.sql").read_text() for n in names}
    (folder / "tpch22.py").write_text(PIPELINE.format(sources={t: str(p) for t, p in sources.items()},
                                                      queries=queries))
    return spec


def peer_scale(sf: float, queries: list[str] | None = None) -> dict[str, Any]:
    """`dt run --all` against `spark-pipelines run`, created, then after the same change."""
    root = WORK / "peers" / f"sf{sf:g}"
    shutil.rmtree(root, ignore_errors=True)
    sources = sources_copy(root, sf)
    built = project(root, sources, queries)
    logs = root / "logs"
    logs.mkdir(parents=True)
    spec = pipeline(root, sources, built.accepted)
    out: dict[str, Any] = {"sf": sf, "dts": len(built.accepted)}
    log(f"SF{sf:g}: dt run (creation), spark-pipelines run (first)")
    out["dt_first"] = peers.dt_run(built.project_dir, logs / "dt-first.log")
    out["sdp_first"] = peers.spark_pipelines(spec, logs / "sdp-first.log")
    out["change"] = change(sources)
    log(f"SF{sf:g}: dt run and spark-pipelines run after the change")
    out["dt_after"] = peers.dt_run(built.project_dir, logs / "dt-after.log")
    out["sdp_after"] = peers.spark_pipelines(spec, logs / "sdp-after.log")
    for key in ("dt_first", "sdp_first", "dt_after", "sdp_after"):
        log(f"  {key}: {out[key]['seconds']:.1f}s rc={out[key]['returncode']}"
            + (f" {out[key]['error']}" if out[key]["returncode"] else ""))
    return out


# -- report ----------------------------------------------------------------------------------

def adaptive_choices(project_dir: Path) -> dict[str, dict[str, str]]:
    """What ADAPTIVE (`refresh_mode: auto`) would choose for each DT now, from the size of the
    change, the inputs' sizes and the DT's history (the creation's FULL): planned without a JVM,
    as a scheduled run plans it (planning/adaptive.py)."""
    from dtcli import api
    from dtcli.planning import adaptive
    from dtcli.state import history

    checked = api.check(project_dir, with_stats=True)
    plan = api.plan_run(checked, None)
    past = history.recent(checked.project.warehouse)
    out = {}
    for step in plan.steps:
        size = step.options.estimate
        guess = adaptive.estimate(size.change_rows or 0, size.input_rows or 0,
                                  adaptive.learn([r for r in past if r.name == step.name]))
        out[step.name] = {"action": guess.action, "reason": guess.reason}
    return out


def faster_chosen(d: dict[str, Any]) -> bool | None:
    """Whether ADAPTIVE's choice is the faster of the two measured actions (None: not known)."""
    choice = (d.get("adaptive") or {}).get("action")
    if choice is None or d["action"] != "INCREMENTAL":
        return None
    faster = "INCREMENTAL" if d["seconds"] <= d["full_seconds"] else "FULL"
    return choice == faster


def ratio(full: float, incremental: float) -> str:
    return f"{full / incremental:.1f}×" if incremental > 0 else "—"


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def markdown(results: list[dict[str, Any]], peer_results: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    out = [f"Measured {meta['date']} at commit {meta['commit']}{' (uncommitted changes)' if meta['dirty'] else ''}; "
           f"machine: {meta['machine']}; load average {meta['load_before']} before, {meta['load_after']} after; "
           f"{meta['session']}. Seconds of the engine's work (execute_plan), change batch: "
           "tpch_changes.py's default (new, deleted and updated orders with their lines; updated "
           "customers, parts, partsupp rows, suppliers)."]
    for r in results:
        inc = [d for d in r["dts"].values() if d["action"] == "INCREMENTAL"]
        right = [x for x in (faster_chosen(d) for d in r["dts"].values()) if x is not None]
        g = geomean([d["full_seconds"] / d["seconds"] for d in inc if d["seconds"]])
        out += ["", f"**SF{r['sf']:g}**: {len(inc)} of {len(r['dts'])} DTs refreshed INCREMENTAL"
                + (f", geometric mean of FULL ÷ INCREMENTAL {g:.1f}×" if g else "")
                + f"; whole `dt run` after the change {r['run']['seconds']:.1f}s against `dt run --full-refresh` "
                f"{r['run_full']['seconds']:.1f}s ({ratio(r['run_full']['seconds'], r['run']['seconds'])})"
                + (f"; refused at validation: {', '.join(f'{n} ({why})' for n, why in r['refused'].items())}"
                   if r["refused"] else "")
                + (f"; under `auto`, ADAPTIVE would choose the faster action for {sum(1 for x in right if x)} "
                   f"of {len(right)}" if right else "") + ".", "",
                "| DT | action | strategy | INCREMENTAL (s) | FULL (s) | FULL ÷ INCREMENTAL | same rows | ADAPTIVE |",
                "|---|---|---|---:|---:|---:|---|---|"]
        for name, d in r["dts"].items():
            action = d["action"] if d["action"] == "INCREMENTAL" else f"{d['action']}: {d['reason'] or ''}"[:90]
            pick = (d.get("adaptive") or {}).get("action") or ""
            verdict = {True: " (faster)", False: " (**slower**)", None: ""}[faster_chosen(d)]
            out.append(f"| {name} | {action} | {d['strategy'] or ''} | {d['seconds']:.2f} | {d['full_seconds']:.2f} | "
                       f"{ratio(d['full_seconds'], d['seconds'])} | {'yes' if d['equal'] else '**no**'} | "
                       f"{pick}{verdict} |")
    if peer_results:
        out += ["", "`dt run --all` against `spark-pipelines run` of the same queries (each a process, start "
                "to exit):", "",
                "| SF | DTs | `dt run` creating (s) | pipelines first (s) | `dt run` after the change (s) | "
                "pipelines after the change (s) | pipelines ÷ dt |", "|---|---:|---:|---:|---:|---:|---:|"]
        for p in peer_results:
            seconds = [p[k]["seconds"] for k in ("dt_first", "sdp_first", "dt_after", "sdp_after")]
            out.append(f"| {p['sf']:g} | {p['dts']} | " + " | ".join(f"{s:.1f}" for s in seconds)
                       + f" | {ratio(seconds[3], seconds[2])} |")
        failed = [f"SF{p['sf']:g} {k}: {p[k]['error']}" for p in peer_results for k in
                  ("dt_first", "sdp_first", "dt_after", "sdp_after") if p[k]["returncode"]]
        if failed:
            out += ["", "Runs that failed: " + "; ".join(failed) + "."]
    return "\n".join(out)


def write_readme(text: str, command: str) -> None:
    block = f"{BEGIN}\n\nReproduce with `{command}`.\n\n{text}\n\n{END}"
    doc = README.read_text()
    if BEGIN in doc and END in doc:
        doc = doc[:doc.index(BEGIN)] + block + doc[doc.index(END) + len(END):]
    else:
        doc += f"\n## The 22 TPC-H queries as DTs (`tpch22.py`, issue 38)\n\n{block}\n"
    README.write_text(doc)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=tpch_data.scale, nargs="*", default=[1, 10],
                        help="scale factors of the per-DT and whole-run figures (default 1 10)")
    parser.add_argument("--peer-sf", type=tpch_data.scale, nargs="*", default=[1, 3],
                        help="scale factors of dt run against spark-pipelines run (default 1 3; none: skip)")
    parser.add_argument("--queries", nargs="*", choices=tpch22_project.query_names(), metavar="qNN",
                        help="only these of the 22 (default all; figures of a subset are for checking it runs)")
    parser.add_argument("--readme", action="store_true", help="put the results in benchmarks/README.md")
    args = parser.parse_args(argv)
    meta = {"date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "commit": bench.git("log", "-1", "--format=%h") or "?",
            "dirty": bool(bench.git("status", "--porcelain", "--", "dtcli", "benchmarks")),
            "machine": bench.machine(), "load_before": bench.load_average(),
            "session": "one local[2] session, spark.driver.memory 8g, spark.sql.shuffle.partitions 8"}
    for sf in sorted(set(args.sf) | set(args.peer_sf)):     # data before the JVM starts: it needs the cores
        tpch_data.ensure(sf, tpch_data.ALL_TABLES, log=log)
    results: list[dict[str, Any]] = []
    peer_results: list[dict[str, Any]] = []
    WORK.mkdir(parents=True, exist_ok=True)

    def save() -> None:         # after every scale: a run that dies keeps what it measured
        meta["load_after"] = bench.load_average()
        (WORK / "results.json").write_text(json.dumps({"meta": meta, "results": results, "peers": peer_results},
                                                      indent=1, default=str))

    if args.sf:
        from dtcli.engine.launch.session import local_session

        bench.PROFILE = False
        spark = local_session(extra={k: v for k, v in bench.SESSION.items() if k != "spark.master"})
        try:
            for sf in args.sf:
                results.append(measure_scale(spark, sf, args.queries))
                save()
        finally:
            spark.stop()
    for sf in args.peer_sf:
        peer_results.append(peer_scale(sf, args.queries))
        save()
    save()
    text = markdown(results, peer_results, meta)
    print()
    print(text)
    if args.readme:
        given = sys.argv[1:] if argv is None else argv
        write_readme(text, textwrap.shorten(".venv/bin/python benchmarks/tpch22.py " + " ".join(given), 200))


if __name__ == "__main__":
    main()
