"""`dt seed`: load `seeds/<name>.csv` into Delta source tables with the change data feed on.

Done with pyarrow and deltalake, so seeding needs no JVM. Types are inferred, or given in
`seeds/<name>.yml` as `columns: {column: type}` with Spark SQL type names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from dtcli.errors import ConfigError
from dtcli.model import Project
from dtcli.project.yamlio import expect_mapping, load_yaml_file
from dtcli.state import storage

_DECIMAL = re.compile(r"^decimal\s*\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


@dataclass
class Seeded:
    name: str
    path: str
    rows: int
    columns: list[str]


def arrow_type(spark_type: str, file: str):
    import pyarrow as pa

    t = spark_type.strip().lower()
    simple = {
        "string": pa.string(), "varchar": pa.string(), "int": pa.int32(), "integer": pa.int32(),
        "bigint": pa.int64(), "long": pa.int64(), "smallint": pa.int16(), "double": pa.float64(),
        "float": pa.float32(), "boolean": pa.bool_(), "bool": pa.bool_(), "date": pa.date32(),
        "timestamp": pa.timestamp("us"),  # read naive, then taken as UTC below
    }
    if t in simple:
        return simple[t]
    match = _DECIMAL.match(t)
    if match:
        return pa.decimal128(int(match.group(1)), int(match.group(2)))
    raise ConfigError(f"unknown column type '{spark_type}'", file=file,
                      hint="use string, int, bigint, double, boolean, date, timestamp or decimal(p,s)")


def read_csv(csv: Path, types: dict[str, str]):
    import pyarrow as pa
    from pyarrow import csv as pacsv

    file = str(csv)
    wanted = {k: arrow_type(str(v), str(csv.with_suffix(".yml"))) for k, v in types.items()}
    try:
        table = pacsv.read_csv(csv, convert_options=pacsv.ConvertOptions(column_types=wanted,
                                                                         strings_can_be_null=True))
    except (pa.ArrowInvalid, OSError) as exc:
        raise ConfigError(f"cannot read seed: {str(exc).splitlines()[0]}", file=file,
                          hint="check the CSV header and the column types in the seed's .yml") from None
    unknown = set(types) - set(table.column_names)
    if unknown:
        raise ConfigError(f"seed config names unknown column(s) {', '.join(sorted(unknown))}",
                          file=str(csv.with_suffix('.yml')))
    # Naive timestamps become UTC timestamps: Spark's TIMESTAMP, not TIMESTAMP_NTZ.
    fields = []
    for f in table.schema:
        if pa.types.is_timestamp(f.type) and f.type.tz is None:
            fields.append(pa.field(f.name, pa.timestamp("us", tz="UTC")))
        else:
            fields.append(f)
    return table.cast(pa.schema(fields))  # a naive timestamp cast to UTC keeps its wall-clock value


def seed_types(raw, yml: Path) -> dict[str, str]:
    """`columns:` of seeds/<name>.yml: a mapping {column: type}, or a list of {name, type,
    data_tests, description} entries (dbt's shape; entries without a type are inferred)."""
    columns = raw.get("columns")
    if isinstance(columns, list):
        return {str(c["name"]): str(c["type"]) for c in columns if isinstance(c, dict) and c.get("type")}
    return dict(expect_mapping(columns, str(yml), "columns", raw.line_of("columns")))


def seed(project: Project, names: list[str] | None = None) -> list[Seeded]:
    from deltalake import write_deltalake

    done = []
    seeds = [s for s in project.sources.values() if s.origin == "seed"]
    if names:
        wanted = {n.lower() for n in names}
        seeds = [s for s in seeds if s.name in wanted]
    for src in seeds:
        csv = Path(src.file)
        yml = csv.with_suffix(".yml")
        types: dict[str, str] = {}
        if yml.is_file():
            raw = expect_mapping(load_yaml_file(yml), str(yml), yml.name)
            types = seed_types(raw, yml)
        table = read_csv(csv, types)
        write_deltalake(storage.uri(src.path), table, mode="overwrite", schema_mode="overwrite",
                        storage_options=storage.options(src.path),
                        configuration={"delta.enableChangeDataFeed": "true"})
        done.append(Seeded(src.name, src.path, table.num_rows, table.column_names))
    return done
