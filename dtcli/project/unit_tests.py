"""`unit_tests:` in a table's YAML, in dbt 1.8's syntax, checked for shape (no columns yet).

```yaml
unit_tests:
  - name: counts_per_status
    given:
      - input: ref('orders')                 # or source('raw', 'orders'), or the bare name
        rows: [{order_id: 1, status: placed}]
      - input: customers
        format: csv
        rows: |
          customer_id,name
          7,ann
    given_after:                             # dt's own: the next rows; others keep theirs
      - input: ref('orders')
        fixture: orders_next                 # tests/fixtures/orders_next.csv
    expect:
      rows: [{status: placed, n: 1}]
```

The model is the table whose YAML holds them (`model:`, when given, must name it). dbt's `format:
sql`, `overrides:` and `versions:` are not supported: an error with the fix. What needs the
columns (an unknown input, a column an input does not have) is checked in
dtcli/planning/unit_tests.py.
"""

from __future__ import annotations

import re
from typing import Any

from dtcli.errors import ConfigError, Where, suggest
from dtcli.json_types import YamlMapping
from dtcli.project.data_tests import REF_CALL
from dtcli.unit_tests import Given, Rows, UnitTest, csv_rows

_CASE_KEYS = {"name", "model", "description", "given", "expect", "given_after", "config"}
_UNSUPPORTED = {"overrides": "vars and macros cannot be overridden: give the inputs' rows instead",
                "versions": "a DT has one version"}
_ROWS_KEYS = {"input", "rows", "format", "fixture"}
_EXAMPLE = ("e.g. unit_tests: [{name: counts, given: [{input: ref('orders'), rows: [{id: 1}]}], "
            "expect: {rows: [{n: 1}]}}]")


def _fail(message: str, where: Where, line: int | None = None, hint: str | None = None) -> ConfigError:
    return ConfigError(message, file=where.get("file"), line=line or where.get("line"), hint=hint)


def _line(value: Any, key: Any) -> int | None:
    return value.line_of(key) if hasattr(value, "line_of") else None


def parse_unit_tests(value: Any, table: str, where: Where) -> list[UnitTest]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail("unit_tests must be a list of cases", where, hint=_EXAMPLE)
    out: list[UnitTest] = []
    for k, item in enumerate(value):
        line = _line(value, k) or where.get("line")
        case = _case(item, table, {**where, "line": line})
        if case is None:
            continue
        if any(c.name == case.name for c in out):
            raise _fail(f"unit test '{case.name}' is defined twice", where, case.line,
                        hint="each unit test of a table needs its own name")
        out.append(case)
    return out


def _case(item: Any, table: str, where: Where) -> UnitTest | None:
    if not isinstance(item, dict):
        raise _fail("a unit test must be a mapping with name, given and expect", where, hint=_EXAMPLE)
    for key in item:
        if key in _UNSUPPORTED:
            raise _fail(f"unit test: {key} is not supported", where, _line(item, key), hint=_UNSUPPORTED[key])
        if key not in _CASE_KEYS:
            raise _fail(f"unit test: unknown key '{key}'", where, _line(item, key),
                        hint=suggest(str(key), _CASE_KEYS) or f"a unit test takes {', '.join(sorted(_CASE_KEYS))}")
    name = item.get("name")
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise _fail(f"unit test name {name!r} is not a plain name", where, _line(item, "name"),
                    hint="letters, digits and _, e.g. name: counts_per_status")
    config = item.get("config") or {}
    if not isinstance(config, dict):
        raise _fail(f"unit test {name}: config must be a mapping", where, _line(item, "config"))
    if config.get("enabled", True) is False:
        return None
    model = item.get("model")
    if model is not None and _named(model, f"unit test {name}: model", where, _line(item, "model")) != table:
        raise _fail(f"unit test {name}: model '{model}' is not {table}, whose YAML holds it", where,
                    _line(item, "model"), hint=f"move it to the YAML of {model}, or drop model:")
    here = {**where, "line": _line(item, "name") or where.get("line")}
    for key in ("given", "expect"):
        if item.get(key) is None:
            raise _fail(f"unit test {name}: {key} is missing", where, here["line"], hint=_EXAMPLE)
    given = _given_list(item["given"], name, "given", here)
    after = _given_list(item["given_after"], name, "given_after", here) if item.get("given_after") is not None else None
    if after is not None and not after:
        raise _fail(f"unit test {name}: given_after lists no input", where, _line(item, "given_after"),
                    hint="list the inputs whose rows change (the others keep their given rows), or drop it")
    expect = item["expect"]
    if not isinstance(expect, dict):
        raise _fail(f"unit test {name}: expect must be a mapping with rows (or fixture)", where,
                    _line(item, "expect"), hint="e.g. expect: {rows: [{status: placed, n: 1}]}")
    if "input" in expect:
        raise _fail(f"unit test {name}: expect takes no input", where, _line(expect, "input"),
                    hint="expect holds the DT's rows")
    rows = _rows(expect, name, "expect", {**where, "line": _line(item, "expect") or here["line"]})
    description = item.get("description")
    return UnitTest(name=name, table=table, given=given, expect=rows, given_after=after,
                    description=str(description) if description is not None else None,
                    file=where.get("file"), line=here["line"])


def _named(value: Any, what: str, where: Where, line: int | None) -> str:
    """`ref('orders')`, `source('raw', 'orders')` or a bare name: the table's name."""
    match = REF_CALL.match(value) if isinstance(value, str) else None
    parts = [p.strip().strip("'\"") for p in match.group(2).split(",") if p.strip()] if match else None
    if not isinstance(value, str) or not value.strip() or parts == []:
        raise _fail(f"{what} must name a table", where, line,
                    hint="e.g. input: ref('orders') or source('raw', 'orders')")
    return parts[-1].lower() if parts else value.strip().strip("`\"").lower()


def _given_list(value: Any, name: str, key: str, where: Where) -> list[Given]:
    if not isinstance(value, list):
        raise _fail(f"unit test {name}: {key} must be a list of inputs with their rows", where,
                    hint=f"e.g. {key}: [{{input: ref('orders'), rows: [{{id: 1}}]}}]")
    out: list[Given] = []
    for k, item in enumerate(value):
        line = _line(value, k) or where.get("line")
        if not isinstance(item, dict) or "input" not in item:
            raise _fail(f"unit test {name}: each {key} entry needs input: and rows: (or fixture:)", where, line,
                        hint="e.g. - input: ref('orders')\n    rows: [{id: 1}]")
        target = _named(item["input"], f"unit test {name}: input", where, _line(item, "input") or line)
        if any(g.input == target for g in out):
            raise _fail(f"unit test {name}: {key} lists {target} twice", where, line,
                        hint="give each input's rows once")
        out.append(Given(target, _rows(item, name, key, {**where, "line": line}), line))
    return out


def _rows(spec: YamlMapping, name: str, key: str, where: Where) -> Rows:
    line = where.get("line")
    for k in spec:
        if k not in _ROWS_KEYS:
            raise _fail(f"unit test {name}: {key}: unknown key '{k}'", where, _line(spec, k) or line,
                        hint=suggest(str(k), _ROWS_KEYS) or "rows: (inline), fixture: (a CSV file), format:")
    fmt = str(spec.get("format", "dict")).lower()
    if fmt == "sql":
        raise _fail(f"unit test {name}: format: sql is not supported", where, _line(spec, "format") or line,
                    hint="give the rows inline (format: dict) or as CSV (format: csv, rows: | or fixture:)")
    if fmt not in ("dict", "csv"):
        raise _fail(f"unit test {name}: format '{spec.get('format')}' is not dict or csv", where,
                    _line(spec, "format") or line, hint=suggest(fmt, ("dict", "csv")))
    if ("rows" in spec) == ("fixture" in spec):
        raise _fail(f"unit test {name}: {key} needs either rows: or fixture:", where, line,
                    hint="rows: [{id: 1}] inline, rows: [] for none, or fixture: NAME for tests/fixtures/NAME.csv")
    at = _line(spec, "rows") or line
    if "fixture" in spec:
        if not isinstance(spec["fixture"], str) or not spec["fixture"].strip():
            raise _fail(f"unit test {name}: fixture must name a CSV file", where, _line(spec, "fixture") or line)
        return Rows(fixture=spec["fixture"].strip(), file=where.get("file"), line=_line(spec, "fixture") or line)
    value = spec["rows"]
    if fmt == "csv" or isinstance(value, str):
        if not isinstance(value, str):
            raise _fail(f"unit test {name}: format: csv takes the rows as CSV text", where, at,
                        hint="rows: |\n  id,name\n  1,ann")
        try:
            found = csv_rows(value)
            return Rows(rows=found, file=where.get("file"), line=at, row_lines=[at + 2 + k for k in range(len(found))])
        except ValueError as exc:
            raise _fail(f"unit test {name}: {key}: {exc}", where, at) from None
    if value is None:
        value = []
    if not isinstance(value, list) or not all(isinstance(r, dict) for r in value):
        raise _fail(f"unit test {name}: {key}: rows must be a list of mappings from column to value", where, at,
                    hint="e.g. rows: [{id: 1, status: placed}, {id: 2, status: null}]")
    return Rows(rows=[{str(c).lower(): v for c, v in r.items()} for r in value], file=where.get("file"), line=at,
                row_lines=[_line(value, k) or at for k in range(len(value))])
