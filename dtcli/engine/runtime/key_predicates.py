"""Predicates naming a set of key values, written so that Delta can skip the files without them.

Delta prunes files by their min/max statistics, and for `key IN (v1, ..., vn)` it uses only
the list's smallest and largest value: changed keys spread over the key range then prune no
file. The same set written as a few narrow ranges OR-ed together (`key BETWEEN a AND b OR ...`)
is checked range by range against each file's statistics, and Spark pushes it into the Parquet
reader, which skips row groups and pages by theirs. The ranges are a superset of the keys; an
exact `IN` list beside them keeps the predicate exact, so a `replaceWhere` removes exactly the
rows of those keys.

Literals are rendered as text with their column's exact type (`5L`, `DATE'2024-01-31'`,
`CAST(1.50BD AS DECIMAL(15,2))`): thousands of keys are common, and a composite key compared as
a struct must match the struct's field types exactly (Spark will not widen them). A composite
key of integers, strings, dates and booleans is compared as one string per row instead, which
Spark analyses far faster than a list of structs (`_tuples_as_text`). Types whose
literals do not round-trip exactly (floating point, timestamps) are not rendered: the caller
takes its join-based path instead.
"""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

# The most values dt names as literals in one predicate (a key set, a locator slice): beyond it
# Spark's analysis of the statement costs more than the join that replaces it.
MAX_LITERALS = 10_000

# Ranges a key set is folded into for file skipping. Each is checked against every candidate
# file's statistics, and Spark also evaluates them on every row it reads (behind the cheap
# min/max test): a dozen or so separate clusters of keys without costing the scan much.
MAX_RANGES = 16


def _type_name(data_type) -> str:
    return type(data_type).__name__


def renderable(data_type) -> bool:
    return _type_name(data_type) in _RENDER


def _integral(suffix: str):
    def render(value, data_type) -> str | None:
        return f"{int(value)}{suffix}" if isinstance(value, int) and not isinstance(value, bool) else None
    return render


def _decimal(value, data_type) -> str | None:
    if not isinstance(value, Decimal) or not value.is_finite():
        return None
    return f"CAST({value:f}BD AS DECIMAL({data_type.precision},{data_type.scale}))"


def _string(value, data_type) -> str | None:
    if not isinstance(value, str):
        return None
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _date(value, data_type) -> str | None:
    return f"DATE'{value.isoformat()}'" if isinstance(value, date) else None


def _boolean(value, data_type) -> str | None:
    return ("true" if value else "false") if isinstance(value, bool) else None


_RENDER = {"ByteType": _integral("Y"), "ShortType": _integral("S"), "IntegerType": _integral(""),
           "LongType": _integral("L"), "DecimalType": _decimal, "StringType": _string,
           "DateType": _date, "BooleanType": _boolean}
# types whose values have a distance, so ranges can be cut at the widest gaps
_NUMERIC = {"ByteType", "ShortType", "IntegerType", "LongType", "DecimalType", "DateType"}


def literal(value, data_type) -> str | None:
    """`value` of Spark type `data_type` as Spark SQL of exactly that type, or None."""
    render = _RENDER.get(_type_name(data_type))
    if value is None or render is None:
        return None
    return render(value, data_type)


def _distance(a, b) -> float:
    if isinstance(a, date):
        return float((b - a).days)
    return float(b - a)


def ranges(values: list, data_type, limit: int = MAX_RANGES) -> list[tuple]:
    """Sorted distinct non-NULL `values` folded into at most `limit` (low, high) ranges: cut at
    the widest gaps for numbers and dates, into runs of equal count for strings and booleans."""
    ordered = sorted(set(v for v in values if v is not None))
    if not ordered:
        return []
    if len(ordered) <= limit:
        return [(v, v) for v in ordered]
    if _type_name(data_type) in _NUMERIC:
        # the widest gaps; among equal ones, cuts spread evenly (a golden-ratio sequence)
        gaps = sorted(range(1, len(ordered)),
                      key=lambda i: (-_distance(ordered[i - 1], ordered[i]), (i * 0.6180339887) % 1)
                      )[:limit - 1]
        cuts = sorted(gaps)
    else:
        step = len(ordered) / limit
        cuts = sorted({int(round(step * k)) for k in range(1, limit)} - {0})
    out, start = [], 0
    for cut in [*cuts, len(ordered)]:
        out.append((ordered[start], ordered[cut - 1]))
        start = cut
    return out


def in_ranges(column: str, values: list, data_type, limit: int = MAX_RANGES) -> str | None:
    """`column` (Spark SQL) within the ranges of `values`: a superset of them that file
    statistics can test; None when a value cannot be rendered."""
    parts = []
    for low, high in ranges(values, data_type, limit):
        lo, hi = literal(low, data_type), literal(high, data_type)
        if lo is None or hi is None:
            return None
        parts.append(f"{column} = {lo}" if low == high else f"({column} >= {lo} AND {column} <= {hi})")
    if not parts:
        return None
    return parts[0] if len(parts) == 1 else "(" + " OR ".join(parts) + ")"


def among(column: str, values: list, data_type) -> str | None:
    """Rows whose `column` equals one of `values` (NULL never equals): the exact list with the
    ranges beside it for file skipping. None when a value cannot be rendered or none is left."""
    present = list(dict.fromkeys(v for v in values if v is not None))
    if not present:
        return None
    rendered = [literal(v, data_type) for v in present]
    if any(r is None for r in rendered):
        return None
    exact = f"{column} = {rendered[0]}" if len(rendered) == 1 else f"{column} IN ({', '.join(rendered)})"
    if len(present) == 1:
        return exact
    return f"({_bounded(column, present, data_type)} AND {exact})"


def _bounded(column: str, values: list, data_type) -> str:
    """The smallest-to-largest bound first (rows outside it are dropped by two comparisons),
    then the ranges (for file skipping; also rows within the bound but between clusters)."""
    low, high = min(values), max(values)
    bound = f"{column} >= {literal(low, data_type)} AND {column} <= {literal(high, data_type)}"
    folded = ranges(values, data_type)
    if len(folded) <= 1:
        return bound
    return f"{bound} AND {in_ranges(column, values, data_type)}"


def quote(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def match_keys(columns: list[str], data_types: list, keys: list[tuple]) -> str | None:
    """Spark SQL selecting exactly the rows whose `columns` hold one of the `keys` tuples
    (NULL-safely for a single column), prunable by file statistics on the first column. None
    when it cannot be written: no key, a value that cannot be rendered, a NULL in a composite
    key (a struct comparison would not say how NULL fields compare)."""
    if not keys:
        return None
    if len(columns) == 1:
        col, data_type = quote(columns[0]), data_types[0]
        values = [k[0] for k in keys]
        has_null = any(v is None for v in values)
        body = among(col, values, data_type)
        if body is None and any(v is not None for v in values):
            return None         # a value that cannot be rendered (a timestamp): not only the NULLs
        if not has_null:
            return body
        return f"{col} IS NULL" if body is None else f"({col} IS NULL OR {body})"
    if any(v is None for k in keys for v in k):
        return None
    names = [quote(c) for c in columns]
    bound = _bounded(names[0], [k[0] for k in keys], data_types[0])
    as_text = _tuples_as_text(names, data_types, keys)
    if as_text is not None:
        return f"({bound} AND {as_text})"
    # field names and types equal on both sides: Spark compares structs by both
    labels = [_string(f"k{n}", None) for n in range(len(columns))]
    tuples = []
    for key in dict.fromkeys(keys):
        fields = [literal(v, t) for v, t in zip(key, data_types)]
        if any(f is None for f in fields):
            return None
        tuples.append("named_struct(" + ", ".join(f"{a}, {f}" for a, f in zip(labels, fields)) + ")")
    row = "named_struct(" + ", ".join(f"{a}, {n}" for a, n in zip(labels, names)) + ")"
    exact = f"{row} IN ({', '.join(tuples)})"
    return f"({bound} AND {exact})"


# Key types whose `CAST(... AS STRING)` Python writes identically (digits, `true`/`false`,
# `yyyy-MM-dd`); strings go with their length in front. Decimals are not among them: Spark may
# write a decimal's text in scientific notation.
_TEXT_TYPES = {"ByteType", "ShortType", "IntegerType", "LongType", "BooleanType", "DateType", "StringType"}


def _tuples_as_text(names: list[str], data_types: list, keys: list[tuple]) -> str | None:
    """A composite key compared as one string per row: `concat` of each field's text, strings
    prefixed with their length in characters and fields joined by `|`, so that two different
    tuples never read the same (a string's length says where it ends). Analysing and optimising
    a filter on 4,000 (BIGINT, INT) keys took 0.13-0.2 s this way and 1.1-3.4 s as a list of
    `named_struct` literals (one session, a test suite running beside it), paid again each time
    the predicate is analysed (a `replaceWhere` does it several times). A NULL field makes the
    row's text NULL: no key matches it. None: a type not written this way."""
    kinds = [_type_name(t) for t in data_types]
    if any(k not in _TEXT_TYPES for k in kinds):
        return None
    fields = [f"concat(CAST(char_length({n}) AS STRING), ':', {n})" if k == "StringType"
              else f"CAST({n} AS STRING)" for n, k in zip(names, kinds)]
    texts = []
    for key in dict.fromkeys(keys):
        parts = [_field_text(v, k) for v, k in zip(key, kinds)]
        if any(p is None for p in parts):
            return None
        texts.append(_string("|".join(parts), None))
    row = "concat(" + ", '|', ".join(fields) + ")"
    return f"{row} IN ({', '.join(texts)})"


def _field_text(value, kind: str) -> str | None:
    """What `_tuples_as_text`'s SQL makes of `value` in Spark; None: not of the column's type."""
    if kind == "StringType":
        return f"{len(value)}:{value}" if isinstance(value, str) else None
    if kind == "BooleanType":
        return ("true" if value else "false") if isinstance(value, bool) else None
    if kind == "DateType":
        return value.isoformat() if isinstance(value, date) and not isinstance(value, datetime) else None
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else None
