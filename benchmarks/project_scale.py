"""Project scale (issue 25): how dt's JVM-free commands grow with the number of DTs.

Generates a project of N DTs in folders (filters, joins and windows over 10 source tables written
as Delta without a JVM) and times `dt validate`, `dt run --dry-run`,
`dt show dynamic tables --format json` and `dt explain NAME`, each a fresh process, with its
peak memory (ru_maxrss of the child): cold (`--no-cache`), first (no cache file yet: it is
written) and warm (the check cache of target/ read back). Run alone on the machine; the load
average is printed beside it.

    .venv/bin/python benchmarks/project_scale.py --dts 200 1000 5000
    .venv/bin/python benchmarks/project_scale.py --dts 1000 --create     # through Spark, then timed
    .venv/bin/python benchmarks/project_scale.py --dts 1000 --profile validate   # cProfile top 30

`--create` creates every DT with one `dt run` (one Spark application; its wall time and time per
DT are printed; a warehouse whose DTs all exist is reused) and then times the commands over the
created DTs, a no-op `dt run` among them (nothing changed: every DT NO_DATA, no JVM).
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = HERE / "work" / "project_scale"
SOURCES = 10
# The CLI of the checkout this file is in (not an installed one): PYTHONPATH is set in `timed`.
DT_MAIN = "import sys; from dtcli.cli import main; sys.argv[0] = 'dt'; sys.exit(main())"
# As on a user's machine, Python keeps dt's compiled modules in __pycache__ (pip compiles them at
# install too): a PYTHONDONTWRITEBYTECODE in the developer's environment would add ~0.1 s of
# compiling dt's 80 modules to every command timed here.
ENV = {**{k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
       "PYTHONPATH": str(HERE.parent)}


def write_sources(root: Path) -> dict[str, Path]:
    """Ten small Delta tables (id, k, v, ts), written with deltalake: no JVM needed."""
    import pyarrow as pa
    from deltalake import write_deltalake

    paths = {}
    for i in range(SOURCES):
        path = root / "sources" / f"s{i}"
        if not (path / "_delta_log").exists():
            data = pa.table({"id": pa.array(range(100), pa.int64()),
                             "k": pa.array([j % 10 for j in range(100)], pa.int64()),
                             "v": pa.array([float(j) for j in range(100)], pa.float64()),
                             "ts": pa.array([f"2024-01-{1 + j % 28:02d}" for j in range(100)])})
            write_deltalake(str(path), data, configuration={"delta.enableChangeDataFeed": "true"})
        paths[f"s{i}"] = path
    return paths


def table_sql(n: int) -> str:
    """Filters, joins and windows, over sources and (for some) earlier DTs."""
    a, b = f"s{n % SOURCES}", f"s{(n + 3) % SOURCES}"
    kind = n % 3
    if kind == 0:
        return f"SELECT id, k, v * 2 AS v2 FROM {a} WHERE v > {n % 50}\n"
    if kind == 1:
        return (f"SELECT x.id, x.k, x.v + y.v AS vv FROM {a} x JOIN {b} y ON x.id = y.id "
                f"WHERE x.k <> {n % 10}\n")
    upstream = f"t{n - 2}" if n >= 2 else a
    return (f"SELECT id, k, v2, RANK() OVER (PARTITION BY k ORDER BY v2 DESC) AS r "
            f"FROM {upstream}\n" if n >= 2 and (n - 2) % 3 == 0 else
            f"SELECT id, k, RANK() OVER (PARTITION BY k ORDER BY v DESC) AS r FROM {a}\n")


def write_project(root: Path, n_dts: int) -> Path:
    sources = write_sources(root)
    project = root / f"p{n_dts}"
    if project.exists():
        shutil.rmtree(project)
    lines = ["name: scale_bench", "dialect: spark", f"warehouse: {root / f'wh{n_dts}'}",
             "defaults:", "  target_lag: 1 hour", "  refresh_mode: auto", "sources:"]
    for name, path in sources.items():
        lines += [f"  {name}:", f"    path: {path}", "    primary_key: [id]"]
    (project / "tables").mkdir(parents=True)
    (project / "dt_project.yml").write_text("\n".join(lines) + "\n")
    for n in range(n_dts):
        folder = project / "tables" / f"f{n // 50:03d}"
        folder.mkdir(exist_ok=True)
        (folder / f"t{n}.sql").write_text(table_sql(n))
    return project


def timed(cmd: list[str], cwd: Path) -> tuple[float, float, int]:
    """Wall seconds, peak MB of the child, return code."""
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    if proc.returncode not in (0,):
        sys.stderr.write(f"{' '.join(cmd)} -> {proc.returncode}\n{proc.stderr[-2000:]}\n")
    return wall, peak, proc.returncode


def commands(n_dts: int, created: bool) -> dict[str, list[str]]:
    dt = [sys.executable, "-c", DT_MAIN]
    out = {"validate": [*dt, "validate"],
           "show dynamic tables": [*dt, "show", "dynamic", "tables", "--format", "json"],
           f"explain t{n_dts // 2}": [*dt, "explain", f"t{n_dts // 2}"]}
    # before creation a dry run plans every creation; after it, a run finds nothing to do
    out.update({"run (no-op)": [*dt, "run"]} if created else {"run --dry-run": [*dt, "run", "--dry-run"]})
    return out


def create(project: Path, n_dts: int) -> None:
    """Every DT created by one `dt run` (one Spark application), unless they all exist."""
    marker = project.parent / f"wh{n_dts}" / "created"
    if marker.exists():
        print(f"{n_dts:>6} DTs  created earlier: {marker.read_text().strip()}", flush=True)
        return
    load = os.getloadavg()[0]
    wall, _, rc = timed([sys.executable, "-c", DT_MAIN, "run"], project)
    if rc != 0:
        raise SystemExit(f"dt run creating {n_dts} DTs exited {rc}")
    line = f"{wall:.0f} s, {1000 * wall / n_dts:.0f} ms per DT (load {load:.2f} -> {os.getloadavg()[0]:.2f})"
    marker.write_text(line + "\n")
    print(f"{n_dts:>6} DTs  created by one dt run: {line}", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--dts", type=int, nargs="+", default=[200, 1000])
    ap.add_argument("--create", action="store_true", help="create the DTs through Spark first")
    ap.add_argument("--profile", help="cProfile one command (e.g. validate) at the first size")
    ap.add_argument("--warm", action="store_true", help="with --profile: profile it with a warm cache")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    print("load:", os.getloadavg())
    for n in args.dts:
        project = write_project(WORK, n)
        if args.create:
            create(project, n)
        if args.profile:
            out = WORK / f"{args.profile}.prof"
            if args.warm:
                subprocess.run([sys.executable, "-c", DT_MAIN, args.profile], cwd=project, env=ENV,
                               capture_output=True)
            code = (f"import cProfile, sys; from dtcli.cli import main; sys.argv = ['dt', {args.profile!r}]\n"
                    f"try:\n    cProfile.run('main()', {str(out)!r})\nexcept SystemExit:\n    pass\n")
            subprocess.run([sys.executable, "-c", code], cwd=project, env=ENV)
            import pstats
            pstats.Stats(str(out)).sort_stats("cumulative").print_stats(30)
            return
        for label, cmd in commands(n, args.create).items():
            # ru_maxrss of children is the largest child so far: a ceiling, not this command's own.
            cold, _, rc = timed([*cmd, "--no-cache"], project)
            shutil.rmtree(project / "target", ignore_errors=True)
            first, _, rc2 = timed(cmd, project)
            warm, peak, rc3 = timed(cmd, project)
            print(f"{n:>6} DTs  {label:<24} cold {cold:6.2f} s  first {first:6.2f} s  warm {warm:6.2f} s  "
                  f"peak<={peak:6.0f} MB  rc={max(rc, rc2, rc3)}  load {os.getloadavg()[0]:.2f}", flush=True)
    print("load:", os.getloadavg())


if __name__ == "__main__":
    main()
