"""Column types as Spark SQL spells them, from Arrow schemas (seeds), and as sqlglot types.

dt names every column type the way Spark's DDL does (`BIGINT`, `DECIMAL(12,2)`,
`ARRAY<INT>`), whatever it was read from, so schemas compare and print the same everywhere
(Delta logs: `dtcli.state.delta_types`).
"""

from __future__ import annotations

from functools import lru_cache

from sqlglot import exp
from sqlglot.errors import SqlglotError


def map_reason(column: str, spark_type: str | None) -> str | None:
    """Why a DT with this column cannot take changes: a MAP (also inside an ARRAY or STRUCT) has
    no equality in Spark, and a change is applied by comparing rows (None: the type is fine or
    unknown)."""
    if spark_type and "MAP<" in spark_type.upper().replace(" ", ""):
        return f"column {column} holds a MAP, which rows cannot be compared on"
    return None


@lru_cache(maxsize=512)
def to_sqlglot(spark_type: str) -> exp.DataType:
    """The sqlglot type of a Spark SQL type name (UNKNOWN when sqlglot cannot read it)."""
    try:
        return exp.DataType.build(spark_type, dialect="spark")
    except (SqlglotError, ValueError):
        return exp.DataType.build("unknown")


def from_sqlglot(data_type: exp.DataType | None) -> str | None:
    """A sqlglot type as Spark SQL, or None when sqlglot could not infer it."""
    if data_type is None or data_type.is_type(exp.DataType.Type.UNKNOWN, exp.DataType.Type.NULL):
        return None
    if any(node.is_type(exp.DataType.Type.UNKNOWN) for node in data_type.find_all(exp.DataType)):
        return None
    return data_type.sql(dialect="spark").upper()


_INTEGER_DIGITS = {"TINYINT": 3, "SMALLINT": 5, "INT": 10, "BIGINT": 19}
_WIDER = {("FLOAT", "DOUBLE"), ("DATE", "TIMESTAMP"), ("DATE", "TIMESTAMP_NTZ"),
          ("TINYINT", "DOUBLE"), ("SMALLINT", "DOUBLE"), ("INT", "DOUBLE"),
          ("TINYINT", "FLOAT"), ("SMALLINT", "FLOAT")}


def holds(target: str | None, source: str | None) -> bool:
    """Whether a column of Spark type `target` holds every value of type `source` exactly
    (an unknown type is not held against anyone)."""
    if target is None or source is None:
        return True
    t, s = _canonical(target), _canonical(source)
    if t == s or (s, t) in _WIDER:
        return True
    if s in _INTEGER_DIGITS and t in _INTEGER_DIGITS:
        return _INTEGER_DIGITS[s] <= _INTEGER_DIGITS[t]
    tp, ts = _decimal(t)
    if tp is not None:
        if s in _INTEGER_DIGITS:
            return tp - ts >= _INTEGER_DIGITS[s]
        sp, ss = _decimal(s)
        return sp is not None and ts >= ss and tp - ts >= sp - ss
    return False


def _canonical(spark_type: str) -> str:
    text = spark_type.upper().replace(" ", "")
    aliases = {"INTEGER": "INT", "LONG": "BIGINT", "SHORT": "SMALLINT", "BYTE": "TINYINT",
               "REAL": "FLOAT", "BOOL": "BOOLEAN", "DECIMAL": "DECIMAL(10,0)"}
    if text.startswith(("VARCHAR", "CHAR(")) or text == "TEXT":
        return "STRING"
    return aliases.get(text, text)


def _decimal(spark_type: str) -> tuple[int | None, int]:
    if not spark_type.startswith(("DECIMAL(", "NUMERIC(")):
        return None, 0
    inner = spark_type[spark_type.index("(") + 1:-1].split(",")
    return int(inner[0]), int(inner[1]) if len(inner) > 1 else 0
