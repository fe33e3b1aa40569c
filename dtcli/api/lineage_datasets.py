"""The datasets of dt's OpenLineage events: sources and DTs as OpenLineage names them, with
their facets (schema, Delta version, metastore name, column lineage).

A dataset is named by where it is stored, after OpenLineage's naming spec, so that an event
from dt and one from openlineage-spark (or any other reader of the same Delta table) name the
same dataset: a local folder is namespace `file` and its absolute path; `s3a://bucket/key` is
`s3://bucket` and `key`; `abfss://c@account.dfs.core.windows.net/p`, `gs://b/k` and
`hdfs://host:port/p` likewise. A table also known by a metastore name (`catalog:`, a source
declared by `table:`) carries it as a symlink (type TABLE), namespaced by the metastore when
`spark.hadoop.hive.metastore.uris` says which one, else by the table's storage.
"""

from __future__ import annotations

from urllib.parse import urlparse

from openlineage.client.facet_v2 import (
    column_lineage_dataset,
    dataset_version_dataset,
    schema_dataset,
    symlinks_dataset,
)
from openlineage.client.generated.base import DatasetFacet

from dtcli.model import Column, Project
from dtcli.sql.lineage import ColumnLineage, Field, Transformation

# schemes that name the same store (Hadoop's connectors) → OpenLineage's name for it
_SCHEMES = {"s3a": "s3", "s3n": "s3", "wasbs": "wasbs", "abfs": "abfss"}


def dataset_name(path: str) -> tuple[str, str]:
    """(namespace, name) of a table stored at `path`, per OpenLineage's naming spec."""
    if "://" not in path:
        return "file", path
    parsed = urlparse(path)
    scheme = _SCHEMES.get(parsed.scheme, parsed.scheme)
    if scheme == "file":
        return "file", parsed.path
    name = parsed.path
    if scheme in ("s3", "gs", "abfss", "wasbs"):
        name = name.lstrip("/")          # object stores: the key, without a leading slash
    return f"{scheme}://{parsed.netloc}", name or "/"


class Datasets:
    """Names and facets of one project's inputs and DTs (their paths as the project resolves them)."""

    def __init__(self, project: Project, schemas: dict[str, tuple[Column, ...]], producer: str):
        self.project, self.schemas, self.producer = project, schemas, producer
        uris = project.spark_conf.get("spark.hadoop.hive.metastore.uris", "")
        first = uris.split(",")[0].strip()
        self.metastore = f"hive://{urlparse(first).netloc}" if first else None

    def of(self, name: str) -> tuple[str, str]:
        """(namespace, name) of a DT or source, by its logical name."""
        return dataset_name(self.project.input_path(name))

    def table_name(self, name: str) -> str | None:
        """The metastore name of a DT (`catalog:`) or a source declared by `table:`."""
        if name in self.project.tables:
            return self.project.qualified_name(name)
        source = self.project.sources.get(name)
        return source.table if source is not None else None

    def facets(self, name: str, *, version: int | None = None, columns: bool = True) -> dict[str, DatasetFacet]:
        """The facets every mention of a dataset carries: schema, version, metastore name."""
        out: dict[str, DatasetFacet] = {}
        cols = self.schemas.get(name, ())
        if columns and cols:
            out["schema"] = schema_dataset.SchemaDatasetFacet(
                fields=[schema_dataset.SchemaDatasetFacetFields(name=c.name, type=c.type) for c in cols],
                producer=self.producer)
        if version is not None:
            out["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=str(version),
                                                                               producer=self.producer)
        table = self.table_name(name)
        if table:
            namespace = self.metastore or self.of(name)[0]
            out["symlinks"] = symlinks_dataset.SymlinksDatasetFacet(
                identifiers=[symlinks_dataset.Identifier(namespace=namespace, name=table, type="TABLE")],
                producer=self.producer)
        return out

    def column_lineage(self, lineage: ColumnLineage) -> column_lineage_dataset.ColumnLineageDatasetFacet:
        """The columnLineage facet: per output column its input fields; the rows' INDIRECT fields once,
        in the facet's `dataset` list."""
        return column_lineage_dataset.ColumnLineageDatasetFacet(
            fields={column: column_lineage_dataset.Fields(inputFields=self._fields(deps))
                    for column, deps in lineage.columns.items()},
            dataset=self._fields(lineage.dataset), producer=self.producer)

    def _fields(self, deps: dict[Field, frozenset[Transformation]]) -> list[column_lineage_dataset.InputField]:
        out = []
        for f, transformations in deps.items():
            if f.input not in self.project.tables and f.input not in self.project.sources:
                continue        # not a dataset (cannot happen for a checked query; kept safe)
            namespace, name = self.of(f.input)
            out.append(column_lineage_dataset.InputField(
                namespace=namespace, name=name, field=f.column,
                transformations=[column_lineage_dataset.Transformation(type=t.type, subtype=t.subtype,
                                                                       masking=t.masking)
                                 for t in sorted(transformations)]))
        return out
