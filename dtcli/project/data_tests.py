"""Data tests and expectations as a table's YAML writes them, in dbt's syntax, checked for shape.

dbt's forms are all accepted: a bare test name (`- not_null`), a test with arguments
(`- accepted_values: {values: [a, b]}`), arguments under `arguments:` (dbt 1.10), dbt's
`config: {severity, where, name}` and the older `severity:` beside the arguments, the
`dbt_utils.` prefix of expression_is_true and unique_combination_of_columns, and the
`- name: ... test_name: ...` form. What needs the tables' columns (a column that does not exist,
a `relationships` target) is checked with them, in dtcli/planning/data_tests.py.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from dtcli.data_tests import (
    ACCEPTED_VALUES,
    COLUMN_TESTS,
    ERROR,
    EXPRESSION_IS_TRUE,
    GENERIC_TESTS,
    ON_VIOLATION,
    RELATIONSHIPS,
    SEVERITIES,
    UNIQUE_COMBINATION,
    WARN,
    ColumnNote,
    DataTest,
    Expectation,
    GenericArgs,
)
from dtcli.errors import ConfigError, Where, suggest

TEST_KEYS = ("data_tests", "tests")           # dbt 1.8's name, and the older one
_NAMESPACES = ("dbt_utils.", "dbt.")
_ARGS = {ACCEPTED_VALUES: {"values", "quote"}, RELATIONSHIPS: {"to", "field"},
         EXPRESSION_IS_TRUE: {"expression"}, UNIQUE_COMBINATION: {"combination_of_columns"}}
_CONFIG = {"severity", "where", "name", "enabled", "tags", "meta"}
_NAME_LIMIT = 63                               # dbt shortens longer generated names with a hash
REF_CALL = re.compile(r"""^\s*(ref|source)\s*\(\s*(.*?)\s*\)\s*$""", re.S)
_EXAMPLES = {
    ACCEPTED_VALUES: "accepted_values: {values: ['placed', 'shipped']}",
    RELATIONSHIPS: "relationships: {to: ref('customers'), field: customer_id}",
    EXPRESSION_IS_TRUE: "expression_is_true: {expression: 'amount >= 0'}",
    UNIQUE_COMBINATION: "unique_combination_of_columns: {combination_of_columns: [order_id, line]}",
}


def _fail(message: str, where: Where, line: int | None = None, hint: str | None = None) -> ConfigError:
    return ConfigError(message, file=where.get("file"), line=line or where.get("line"), hint=hint)


def _line(mapping: Any, key: str) -> int | None:
    return mapping.line_of(key) if hasattr(mapping, "line_of") else None


def parse_tests(value: Any, table: str, column: str | None, where: Where) -> list[DataTest]:
    """A `data_tests:` list, at table level (`column` None) or under a column."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail("data_tests must be a list of tests", where,
                    hint="e.g. data_tests: [not_null, unique]")
    lines = getattr(value, "line_of", lambda k: None)
    return [t for t in (_one_test(item, table, column, {**where, "line": lines(k) or where.get("line")})
                        for k, item in enumerate(value)) if t is not None]


def _one_test(item: Any, table: str, column: str | None, where: Where) -> DataTest | None:
    line = where.get("line")
    if isinstance(item, str):
        kind, body = item, {}
    elif isinstance(item, dict) and "test_name" in item:
        body = dict(item)
        kind = body.pop("test_name")
        line = _line(item, "test_name") or line
    elif isinstance(item, dict) and len(item) == 1:
        (kind, body), = item.items()
        line = _line(item, kind) or line
        if body is None:
            body = {}
    else:
        raise _fail(f"data test {item!r} is not a test name or {{test_name: {{arguments}}}}", where, line,
                    hint="e.g. - not_null, or - accepted_values: {values: [a, b]}")
    kind = str(kind)
    bare = next((kind[len(p):] for p in _NAMESPACES if kind.startswith(p)), kind)
    if bare not in GENERIC_TESTS:
        raise _fail(f"unknown data test '{kind}'", where, line,
                    hint=suggest(bare, GENERIC_TESTS) or f"dt runs {', '.join(GENERIC_TESTS)}; "
                                                       "other checks: a singular test in tests/<name>.sql")
    if not isinstance(body, dict):
        raise _fail(f"{kind}: its arguments must be a mapping", where, line, hint=_EXAMPLES.get(bare))
    body = dict(body)
    args = dict(body.pop("arguments", None) or {})
    config = body.pop("config", None) or {}
    if not isinstance(config, dict):
        raise _fail(f"{kind}: config must be a mapping", where, line, hint="e.g. config: {severity: warn}")
    config = dict(config)
    for key in list(body):          # the older form: config keys beside the arguments
        if key in _CONFIG:
            config.setdefault(key, body.pop(key))
    args.update(body)
    unknown = set(config) - _CONFIG
    if unknown:
        key = sorted(unknown)[0]
        raise _fail(f"{kind}: unknown config key '{key}'", where, line,
                    hint=suggest(key, _CONFIG) or f"a test's config takes {', '.join(sorted(_CONFIG))}")
    if config.get("enabled", True) is False:
        return None
    column = _column(bare, kind, args, table, column, where, line)
    _check_args(bare, kind, args, column, where, line)
    severity = str(config.get("severity", ERROR)).lower()
    if severity not in SEVERITIES:
        raise _fail(f"{kind}: severity '{config['severity']}' is not error or warn", where, line,
                    hint=suggest(severity, SEVERITIES) or "severity: warn records the failures and goes on")
    for key in ("where", "name"):
        if config.get(key) is not None and not isinstance(config[key], str):
            raise _fail(f"{kind}: {key} must be text", where, line)
    name = config.get("name") or generated_name(kind, table, column, args)
    return DataTest(kind=bare, table=table, name=name, column=column, severity=severity,
                    where=config.get("where"), args=args, file=where.get("file"), line=line)


def _column(bare: str, kind: str, args: dict, table: str, column: str | None, where: Where,
            line: int | None) -> str | None:
    named = args.pop("column_name", None)
    if named is not None and column is not None:
        raise _fail(f"{kind}: column_name is given under the column {column}", where, line,
                    hint="drop column_name: a test under columns: tests that column")
    column = column if column is not None else (str(named).lower() if named is not None else None)
    if bare in COLUMN_TESTS and column is None:
        raise _fail(f"{kind} tests one column: list it under that column's data_tests", where, line,
                    hint=f"columns: [{{name: <column>, data_tests: [{kind}]}}], or column_name: <column>")
    if bare == UNIQUE_COMBINATION and column is not None:
        raise _fail(f"{kind} is a table-level test", where, line,
                    hint="list it under the table's data_tests, with combination_of_columns")
    return column


def _check_args(bare: str, kind: str, args: dict, column: str | None, where: Where, line: int | None) -> None:
    allowed = _ARGS.get(bare, set())
    for key in args:
        if key not in allowed:
            raise _fail(f"{kind}: unknown argument '{key}'", where, line,
                        hint=suggest(str(key), allowed) or (f"e.g. {_EXAMPLES[bare]}" if bare in _EXAMPLES
                                                            else f"{kind} takes no arguments"))
    missing = sorted(k for k in allowed - {"quote"} if args.get(k) in (None, "", []))
    if missing:
        raise _fail(f"{kind} needs {missing[0]}", where, line, hint=f"e.g. {_EXAMPLES[bare]}")
    if bare == ACCEPTED_VALUES:
        values = args["values"]
        if not isinstance(values, list) or any(isinstance(v, (dict, list)) for v in values):
            raise _fail(f"{kind}: values must be a list of values", where, line, hint=f"e.g. {_EXAMPLES[bare]}")
        if not isinstance(args.setdefault("quote", True), bool):
            raise _fail(f"{kind}: quote must be true or false", where, line,
                        hint="quote: false writes the values as SQL (numbers, expressions)")
    elif bare == RELATIONSHIPS:
        args["to"] = relationship_target(args["to"], kind, where, line)
        if not isinstance(args["field"], str):
            raise _fail(f"{kind}: field must be a column name", where, line, hint=f"e.g. {_EXAMPLES[bare]}")
        args["field"] = args["field"].lower()
    elif bare == EXPRESSION_IS_TRUE:
        if not isinstance(args["expression"], str):
            raise _fail(f"{kind}: expression must be SQL text", where, line, hint=f"e.g. {_EXAMPLES[bare]}")
    elif bare == UNIQUE_COMBINATION:
        cols = args["combination_of_columns"]
        if not isinstance(cols, list) or not all(isinstance(c, str) for c in cols):
            raise _fail(f"{kind}: combination_of_columns must be a list of column names", where, line,
                        hint=f"e.g. {_EXAMPLES[bare]}")
        args["combination_of_columns"] = [c.lower() for c in cols]


def relationship_target(value: Any, kind: str, where: Where, line: int | None) -> str:
    """`ref('customers')`, `source('raw', 'customers')` or a bare name: the table's name."""
    if not isinstance(value, str) or not value.strip():
        raise _fail(f"{kind}: to must name a table", where, line, hint=f"e.g. {_EXAMPLES[RELATIONSHIPS]}")
    match = REF_CALL.match(value)
    if match is None:
        return value.strip().strip("`\"").lower()
    parts = [p.strip().strip("'\"") for p in match.group(2).split(",") if p.strip()]
    if not parts:
        raise _fail(f"{kind}: {value} names no table", where, line, hint=f"e.g. {_EXAMPLES[RELATIONSHIPS]}")
    return parts[-1].lower()


def generated_name(kind: str, table: str, column: str | None, args: GenericArgs) -> str:
    """dbt's name for a generic test: the test, the table, the column, then its arguments."""
    parts = [kind.replace(".", "_"), table, *([column] if column else [])]
    tail = []
    for key in sorted(args):
        value = args[key]
        if key == "quote":
            continue
        tail.extend(str(v) for v in value) if isinstance(value, list) else tail.append(str(value))
    name = "_".join(parts) + ("__" + "__".join(tail) if tail else "")
    name = re.sub(r"[^0-9A-Za-z_]+", "_", name)
    if len(name) > _NAME_LIMIT:
        name = f"{'_'.join(parts)[:_NAME_LIMIT - 33]}_{hashlib.md5(name.encode()).hexdigest()}"
    return name


def parse_expectations(value: Any, where: Where) -> list[Expectation]:
    """`expectations: {name: predicate | {expect: predicate, on_violation: warn | drop | fail}}`."""
    if value is None:
        return []
    example = "e.g. expectations: {non_negative: 'amount >= 0', has_key: {expect: 'id IS NOT NULL', " \
              "on_violation: fail}}"
    if not isinstance(value, dict):
        raise _fail("expectations must be a mapping from a name to a SQL predicate", where, hint=example)
    out = []
    for name, spec in value.items():
        line = _line(value, name) or where.get("line")
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
            raise _fail(f"expectation name {name!r} is not a plain name", where, line,
                        hint="letters, digits and _, e.g. non_negative_amount")
        on_violation = WARN
        if isinstance(spec, dict):
            unknown = set(spec) - {"expect", "on_violation"}
            if unknown:
                key = sorted(unknown)[0]
                raise _fail(f"expectation {name}: unknown key '{key}'", where, line,
                            hint=suggest(str(key), ("expect", "on_violation")) or example)
            on_violation = str(spec.get("on_violation", WARN)).lower()
            if on_violation not in ON_VIOLATION:
                raise _fail(f"expectation {name}: on_violation '{spec.get('on_violation')}' is not one of "
                            f"{', '.join(ON_VIOLATION)}", where, line,
                            hint=suggest(on_violation, ON_VIOLATION) or "warn counts, drop filters, fail stops")
            spec = spec.get("expect")
        if not isinstance(spec, str) or not spec.strip():
            raise _fail(f"expectation {name} needs a SQL predicate", where, line, hint=example)
        out.append(Expectation(name=name, expect=spec, on_violation=on_violation, file=where.get("file"),
                               line=line))
    return out


_NOTE_KEYS = {"name", "description", "data_tests", "tests", "meta", "tags", "quote"}


def split_columns(value: Any, table: str, where: Where
                  ) -> tuple[Any, list[DataTest], list[ColumnNote]]:
    """A `columns:` list: (what renames or types the outputs, as today's `columns:` says, or
    None; the tests under its entries; the entries that annotate a column by name).

    A list whose entries are mappings with a name, no type, and at least one description or
    data_tests annotates columns by name, as dbt's does (a subset is fine); any other list
    names (and types) every output column in order, and may carry tests and descriptions too."""
    if not isinstance(value, list) or not value:
        return value, [], []
    mappings = all(isinstance(i, dict) and "name" in i for i in value)
    annotates = mappings and not any("type" in i or "data_type" in i for i in value) and \
        any(k in i for i in value for k in ("description", *TEST_KEYS)) and \
        all(set(i) <= _NOTE_KEYS for i in value)
    tests: list[DataTest] = []
    notes: list[ColumnNote] = []
    rename = []
    for item in value:
        if not isinstance(item, dict) or "name" not in item:
            rename.append(item)
            continue
        name = str(item["name"]).lower()
        here = {"file": where.get("file"), "line": _line(item, "name") or where.get("line")}
        found = [k for k in TEST_KEYS if k in item]
        if len(found) > 1:
            raise _fail(f"column {name} has both data_tests and tests", where, here["line"],
                        hint="keep data_tests (tests is its older name)")
        description = item.get("description")
        if description is not None and not isinstance(description, str):
            raise _fail(f"column {name}: description must be text", where, here["line"])
        for key in found:
            tests.extend(parse_tests(item[key], table, name, {**here, "line": _line(item, key) or here["line"]}))
        if annotates:
            notes.append(ColumnNote(name, description, here["file"], here["line"]))
        else:
            rest = {k: v for k, v in item.items() if k not in ("description", *TEST_KEYS)}
            rename.append(rest)
    return (None if annotates else rename), tests, notes


def source_tests(spec: Any, name: str, file: str) -> list[DataTest]:
    """The tests a source (in dt_project.yml) or a seed (seeds/<name>.yml) carries: `data_tests:`
    at its level and under its `columns:` entries; `dt test` runs them."""
    if not isinstance(spec, dict):
        return []
    where: Where = {"file": file, "line": None}
    found = [k for k in TEST_KEYS if spec.get(k) is not None]
    if len(found) > 1:
        raise _fail("both data_tests and tests are set", where, _line(spec, "tests"),
                    hint="keep data_tests (tests is its older name)")
    tests = parse_tests(spec[found[0]], name, None, {**where, "line": _line(spec, found[0])}) if found else []
    columns = spec.get("columns")
    for item in columns if isinstance(columns, list) else ():
        if isinstance(item, dict) and isinstance(item.get("name"), str):
            for key in TEST_KEYS:
                if key in item:
                    tests += parse_tests(item[key], name, item["name"].lower(),
                                         {**where, "line": _line(item, key) or _line(item, "name")})
    return tests
