"""Column types of a Delta log's schema, spelt as Spark SQL types (`BIGINT`, `ARRAY<INT>`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dtcli.model import Column

# Delta protocol primitive type names -> Spark SQL.
_DELTA_PRIMITIVES = {
    "string": "STRING", "long": "BIGINT", "integer": "INT", "short": "SMALLINT", "byte": "TINYINT",
    "float": "FLOAT", "double": "DOUBLE", "boolean": "BOOLEAN", "binary": "BINARY",
    "date": "DATE", "timestamp": "TIMESTAMP", "timestamp_ntz": "TIMESTAMP_NTZ",
    "variant": "VARIANT", "void": "VOID",
}


def from_delta(delta_type: Any) -> str:
    """A Delta log type (a name, or a JSON object for nested types) as Spark SQL."""
    if isinstance(delta_type, str):
        if delta_type.startswith("decimal"):
            return delta_type.upper().replace(" ", "")
        return _DELTA_PRIMITIVES.get(delta_type, delta_type.upper())
    kind = delta_type.get("type")
    if kind == "array":
        return f"ARRAY<{from_delta(delta_type['elementType'])}>"
    if kind == "map":
        return f"MAP<{from_delta(delta_type['keyType'])}, {from_delta(delta_type['valueType'])}>"
    if kind == "struct":
        fields = ", ".join(f"{f['name']}: {from_delta(f['type'])}" for f in delta_type["fields"])
        return f"STRUCT<{fields}>"
    return str(kind).upper()


def columns_from_delta_schema(schema_json: Mapping[str, Any]) -> tuple[Column, ...]:
    """The columns of a Delta schema as its log writes it (JSON: {"fields": [{name, type}...]})."""
    return tuple(Column(f["name"], from_delta(f["type"])) for f in schema_json.get("fields", []))
