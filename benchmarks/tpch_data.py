"""TPC-H source data for the benchmarks, generated with `tpchgen-cli` and loaded as Delta tables.

    .venv/bin/python benchmarks/tpch_data.py --sf 1 3                  # run.py's three tables
    .venv/bin/python benchmarks/tpch_data.py --sf 0.01 0.1 --tables all  # all eight

For each scale factor N (fractional ones too: `sf0.1`), `benchmarks/data/sfN/delta/<table>` is
a pristine Delta table with the change data feed on, written by `deltalake` (no JVM). It is generated once and cached; a
`<table>.ok` marker next to it says the load finished. Benchmarks never write to it: they work on
a copy (see `working_copy`), because they change the sources.

The Parquet that tpchgen-cli writes is generated in primary-key order (lineitem and orders by
order key), and the Delta files keep that order, so file statistics on the order key are tight:
an engine that pushes a small set of order keys into a scan can skip most files. Files are capped
at about `TARGET_FILE_BYTES`, so the number of files grows with the scale factor as it would
in a real lake.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
TABLES = ("lineitem", "orders", "customer")     # what run.py's three DTs read (the default)
# every TPC-H table, as the 22 queries read them (tpch22_project.py)
ALL_TABLES = ("lineitem", "orders", "customer", "part", "partsupp", "supplier", "nation", "region")
PRIMARY_KEYS = {
    "lineitem": ("l_orderkey", "l_linenumber"), "orders": ("o_orderkey",), "customer": ("c_custkey",),
    "part": ("p_partkey",), "partsupp": ("ps_partkey", "ps_suppkey"), "supplier": ("s_suppkey",),
    "nation": ("n_nationkey",), "region": ("r_regionkey",),
}
TARGET_FILE_BYTES = 32 * 1024 * 1024
CDF = {"delta.enableChangeDataFeed": "true"}


def tpchgen() -> str:
    """The tpchgen-cli executable of this interpreter's environment (the `[bench]` extra)."""
    local = Path(sys.executable).with_name("tpchgen-cli")
    if local.exists():
        return str(local)
    found = shutil.which("tpchgen-cli")
    if not found:
        raise SystemExit("tpchgen-cli is not installed: run `.venv/bin/pip install -e '.[bench]'`")
    return found


def sf_dir(sf: int | float) -> Path:
    return DATA / f"sf{sf:g}"


def scale(value: str | float) -> int | float:
    """A scale factor as given on a command line: 1 stays `sf1`, 0.1 is `sf0.1`."""
    sf = float(value)
    return int(sf) if sf.is_integer() else sf


def delta_path(sf: int | float, table: str) -> Path:
    return sf_dir(sf) / "delta" / table


def _marker(sf: int | float, table: str) -> Path:
    return sf_dir(sf) / "delta" / f"{table}.ok"


def _plain_schema(schema):
    """tpchgen writes string_view columns and Parquet field ids; Delta wants plain strings."""
    import pyarrow as pa

    fields = []
    for field in schema:
        ftype = pa.string() if field.type in (pa.string_view(), pa.large_string()) else field.type
        fields.append(pa.field(field.name, ftype, nullable=field.nullable))
    return pa.schema(fields)


def _load(parquet: Path, target: Path) -> int:
    import pyarrow.dataset as ds
    from deltalake import write_deltalake

    dataset = ds.dataset(str(parquet), format="parquet")
    schema = _plain_schema(dataset.schema)
    rows = dataset.count_rows()

    def batches():
        for batch in dataset.to_batches(batch_size=256 * 1024):
            yield batch.cast(schema)

    import pyarrow as pa

    reader = pa.RecordBatchReader.from_batches(schema, batches())
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    write_deltalake(str(target), reader, mode="error", configuration=CDF,
                    target_file_size=TARGET_FILE_BYTES)
    return rows


def ensure(sf: int | float, tables: tuple[str, ...] = TABLES, log=print) -> dict[str, str]:
    """Paths of the pristine Delta tables for scale factor `sf`, generating what is missing."""
    missing = [t for t in tables if not _marker(sf, t).exists()]
    if missing:
        parquet_dir = sf_dir(sf) / "parquet"
        parquet_dir.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        cmd = [tpchgen(), "parquet", "-s", f"{sf:g}", "-o", str(parquet_dir), "--overwrite",
               "--no-progress", "-q"] + [arg for t in missing for arg in ("-T", t)]
        log(f"[data] sf{sf:g}: generating {', '.join(missing)} with tpchgen-cli")
        subprocess.run(cmd, check=True)
        log(f"[data] sf{sf:g}: generated in {time.perf_counter() - started:.1f}s")
        for table in missing:
            started = time.perf_counter()
            rows = _load(parquet_dir / f"{table}.parquet", delta_path(sf, table))
            _marker(sf, table).write_text(f"{rows}\n")
            (parquet_dir / f"{table}.parquet").unlink()
            log(f"[data] sf{sf:g}: loaded {table} ({rows:,} rows) as Delta in "
                f"{time.perf_counter() - started:.1f}s")
        shutil.rmtree(parquet_dir, ignore_errors=True)
    return {t: str(delta_path(sf, t)) for t in tables}


def row_count(sf: int | float, table: str) -> int:
    return int(_marker(sf, table).read_text().strip())


def working_copy(source: str | Path, target: str | Path) -> None:
    """A writable copy of a Delta table that costs no data copy.

    Data files of a Delta table are immutable (a commit adds new files and logically removes
    old ones), so they are hard-linked; the `_delta_log` is copied, since writers may rewrite
    files such as `_last_checkpoint` in place."""
    source, target = Path(source), Path(target)

    def link_or_copy(src: str, dst: str) -> None:
        if "_delta_log" not in Path(src).relative_to(source).parts and src.endswith(".parquet"):
            try:
                os.link(src, dst)
                return
            except OSError:
                pass
        shutil.copy2(src, dst)

    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, copy_function=link_or_copy)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sf", type=scale, nargs="+", default=[1, 3],
                        help="scale factors (fractional ones too: 0.01, 0.1)")
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=ALL_TABLES + ("all",),
                        help="tables to generate (`all`: the eight TPC-H tables)")
    args = parser.parse_args(argv)
    tables = ALL_TABLES if "all" in args.tables else tuple(args.tables)
    for sf in args.sf:
        for table, path in ensure(sf, tables).items():
            print(f"sf{sf:g} {table:9} {row_count(sf, table):>12,} rows  {path}")


if __name__ == "__main__":
    main()
