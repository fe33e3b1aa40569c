"""Data tests and expectations as plain data, shared by every layer (no Spark, no parsing).

A `DataTest` is one of dbt's generic tests on a DT, source or seed (not_null, unique,
accepted_values, relationships, expression_is_true, unique_combination_of_columns) or a
singular test (`tests/<name>.sql`, a query returning the failing rows). An `Expectation` is a
row-level predicate with what to do with a row that breaks it (DLT's warn / drop / fail).
Both are parsed from YAML by dtcli/project/data_tests.py and checked against the tables'
columns by dtcli/planning/data_tests.py.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, TypedDict

NOT_NULL, UNIQUE, ACCEPTED_VALUES = "not_null", "unique", "accepted_values"
RELATIONSHIPS, EXPRESSION_IS_TRUE = "relationships", "expression_is_true"
UNIQUE_COMBINATION = "unique_combination_of_columns"
SINGULAR = "singular"
GENERIC_TESTS = (NOT_NULL, UNIQUE, ACCEPTED_VALUES, RELATIONSHIPS, EXPRESSION_IS_TRUE, UNIQUE_COMBINATION)
# tests that are about one column (given under `columns:`, or with `column_name:` at table level)
COLUMN_TESTS = (NOT_NULL, UNIQUE, ACCEPTED_VALUES, RELATIONSHIPS)

ERROR, WARN = "error", "warn"
SEVERITIES = (ERROR, WARN)
# an expectation's on_violation (the plain form, a bare predicate, warns)
FAIL, DROP = "fail", "drop"
ON_VIOLATION = (WARN, DROP, FAIL)

# results, as dbt's run_results.json spells a test's status
PASS, FAILED_STATUS, WARN_STATUS, ERROR_STATUS = "pass", "fail", "warn", "error"
SKIPPED_STATUS = "skipped"        # the check could not be evaluated yet (its table does not exist)
# state_code of a refresh that an error-severity test or a `fail` expectation stopped
TEST_FAILED = "DATA_TEST_FAILED"


class GenericArgs(TypedDict, total=False):
    """A generic test's arguments as the YAML gives them, checked by project/data_tests.py:
    which keys a test takes depends on its kind."""

    values: list[object]                 # accepted_values (YAML scalars)
    quote: bool                          # accepted_values: the values are strings
    to: str                              # relationships: the table referred to
    field: str                           # relationships: its column
    expression: str                      # expression_is_true
    combination_of_columns: list[str]    # unique_combination_of_columns


@dataclass
class DataTest:
    kind: str                          # one of GENERIC_TESTS, or SINGULAR
    table: str                         # the DT, source or seed it tests ("" for a singular test)
    name: str                          # dbt's name: generated, or `config: {name: ...}`
    column: str | None = None
    severity: str = ERROR
    where: str | None = None           # `config: {where: ...}`: only rows matching it are tested
    args: GenericArgs = field(default_factory=lambda: GenericArgs())
    file: str | None = None
    line: int | None = None
    sql: str | None = None             # singular: its query in Spark SQL, tables by their logical names
    inputs: tuple[str, ...] = ()       # singular: the tables it reads

    def unique_id(self, project: str) -> str:
        """dbt's `test.<project>.<name>.<hash>` (the hash tells apart tests that share a name
        across versions of their definition)."""
        if self.kind == SINGULAR:
            return f"test.{project}.{self.name}"
        digest = hashlib.md5(repr((self.kind, self.table, self.column, sorted(self.args.items(), key=str),
                                   self.where)).encode()).hexdigest()[:10]
        return f"test.{project}.{self.name}.{digest}"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class Expectation:
    name: str
    expect: str                        # a SQL predicate over the DT's columns, as written
    on_violation: str = WARN
    file: str | None = None
    line: int | None = None

    def unique_id(self, project: str, table: str) -> str:
        return f"expectation.{project}.{table}.{self.name}"

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class TableChecks:
    """A table's tests and expectations, checked (planning/data_tests.py); `singular`: the
    singular tests a refresh of this DT audits (those whose last input in DAG order it is)."""

    tests: list[DataTest] = field(default_factory=list)
    expectations: list[Expectation] = field(default_factory=list)
    singular: list[DataTest] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.tests or self.expectations or self.singular)


@dataclass
class ColumnNote:
    """A `columns:` entry that annotates an output column by name (dbt's meaning) rather than
    naming every column in order: checked against the DT's columns."""

    name: str
    description: str | None = None
    file: str | None = None
    line: int | None = None


# How a check treats the rows that break it: stop the refresh, record them, keep them out.
STOP, RECORD, KEEP_OUT = "fail", "warn", "drop"
# The shapes of check the engine evaluates
ROW, KEY, LINK, QUERY = "row", "key", "link", "query"


class LinkTarget(TypedDict):
    """Where a relationships test looks its values up."""

    name: str         # the table's logical name
    path: str
    field: str


@dataclass
class Check:
    """One test or expectation compiled for the engine (dtcli/planning/data_tests.py): Spark SQL
    over the checked table's own columns, the tables it needs by path."""

    name: str
    unique_id: str
    kind: str                          # "test" or "expectation"
    test: str                          # not_null, ..., singular; "expectation"
    action: str                        # STOP (error severity, fail), RECORD (warn) or KEEP_OUT (drop)
    shape: str                         # ROW: `violation` per row; KEY: `columns` unique; LINK: `column`
    #                                    found in `to`; QUERY: `sql` returns the failing rows
    violation: str | None = None       # ROW: true for a row that breaks the check
    where: str | None = None           # only rows matching it are tested
    column: str | None = None
    columns: list[str] | None = None   # KEY: the columns that must be unique together
    to: LinkTarget | None = None       # LINK: the table and column the values must be found in
    sql: str | None = None             # QUERY: tables by their logical names
    reads: dict[str, str] | None = None   # QUERY: table name -> path ("" names the checked table)
    proven: str | None = None          # why the check cannot fail on this table: it is not evaluated
    severity: str = ERROR
    file: str | None = None
    line: int | None = None

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class AuditSpec:
    """What a refresh checks before it commits (StepOptions.audit), and what `dt test` runs."""

    checks: list[Check] = field(default_factory=list)

    @classmethod
    def from_dict(cls, raw: Mapping[str, Any] | None) -> AuditSpec | None:
        if raw is None:
            return None
        return cls([Check(**c) for c in raw.get("checks") or []])

    @property
    def drops(self) -> list[Check]:
        return [c for c in self.checks if c.action == KEEP_OUT]


# One failing row as a check samples it: column -> the value the table held.
SampleRow = dict[str, object]


class CheckResultDict(TypedDict, total=False):
    """A `CheckResult` as JSON (in the refresh history, run_results.json, `dt show
    test-results`): every key is written; older rows may lack the later ones (`column`)."""

    name: str
    unique_id: str
    kind: str                 # "test" | "expectation"
    test: str                 # not_null, unique, ..., singular, expectation
    table: str
    status: str               # pass | fail | warn | error | skipped
    failures: int
    message: str | None
    action: str
    samples: list[SampleRow]
    column: str | None


@dataclass
class CheckResult:
    """What one check found: dbt's status (pass, fail, warn, error), the failing rows counted
    and a few of them (dropped rows count as failures of a `drop` expectation)."""

    name: str
    unique_id: str
    kind: str
    test: str
    table: str
    status: str
    failures: int = 0
    message: str | None = None
    action: str = STOP
    samples: list[SampleRow] = field(default_factory=list)
    column: str | None = None

    def to_dict(self) -> CheckResultDict:
        return CheckResultDict(**asdict(self))

    @classmethod
    def from_dict(cls, raw: Mapping[str, object]) -> CheckResult:
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in raw.items() if k in known})
