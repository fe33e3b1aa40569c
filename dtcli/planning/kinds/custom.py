"""A custom incremental table (REFRESH USING / INSERT INTO SELF / MERGE INTO SELF): its columns
are declared and its own statement applies the changes of its CHANGES() inputs, so its history
cannot be recomputed. What that means at each step is in planning/custom.py (checks, action,
the statement the engine runs, explain's section) and planning/custom_lineage.py."""

from __future__ import annotations

from dtcli.artifacts.explain import CustomSection
from dtcli.data_tests import DROP, Expectation
from dtcli.errors import ValidationError
from dtcli.model import CUSTOM_INCREMENTAL, CustomSpec, TableDef
from dtcli.planning import custom
from dtcli.planning.checked_project import Checked
from dtcli.planning.custom_lineage import statement_lineage
from dtcli.planning.kinds.base import CheckScope, TableCheck
from dtcli.planning.resolved_mode import ModeScope, ResolvedMode
from dtcli.sql.lineage import ColumnLineage
from dtcli.sql.table_statement import TableStatement, read_custom
from dtcli.unit_tests import UnitTest


class CustomKind:
    name = "custom"
    keeps_history = True

    def read(self, sql: str, name: str, file: str, dialect: str, known: dict[str, str], *,
             quote: bool) -> TableStatement:
        return read_custom(sql, name, file, dialect, known)

    def check(self, scope: CheckScope, table: TableDef) -> TableCheck:
        found = custom.check_table(scope.project, table, scope.schemas, scope.snapshot)
        return TableCheck(found.columns, custom.analysis(table), custom=found)

    def check_expectation(self, table: TableDef, expectation: Expectation) -> None:
        if expectation.on_violation == DROP and table.custom.kind == "MERGE":
            raise ValidationError(f"expectation {expectation.name}: on_violation: drop is not available on a "
                                  "MERGE INTO SELF table", file=expectation.file, line=expectation.line,
                                  hint="its statement decides which rows it writes: filter them in its USING "
                                       "query, or use on_violation: fail or warn")

    def check_unit_tests(self, table: TableDef, cases: list[UnitTest]) -> None:
        raise ValidationError(f"unit tests of {table.name}: a REFRESH USING table cannot be unit tested",
                              file=cases[0].file, line=cases[0].line,
                              hint="its statement applies changes to its own rows; test it on a scratch "
                                   "project with dt run")

    def mode(self, scope: ModeScope, table: TableDef) -> ResolvedMode:
        # its refresh_mode config is checked with its statement (custom.check_config)
        return ResolvedMode(CUSTOM_INCREMENTAL, "REFRESH USING: the table's statement applies "
                                                "the changes of its CHANGES() inputs")

    def redefined_now(self, checked: Checked, name: str) -> bool:
        """Its history is never recomputed: an edited statement takes effect at its next change,
        on schedule; columns to add are the exception (they are added now)."""
        return bool(checked.customs[name].add_columns)

    def changed_inputs(self, table: TableDef, changed: list[str]) -> list[str]:
        """Only CHANGES() inputs make it refresh; a table it reads whole is read as it is then."""
        reads_changes = custom.change_inputs(table)
        return [c for c in changed if c in reads_changes]

    def own_action(self, checked: Checked, name: str, changed: list[str],
                   full_refresh: bool) -> tuple[str, str | None]:
        return custom.action(checked.customs.get(name), changed, full_refresh)

    def custom_spec(self, checked: Checked, name: str) -> CustomSpec | None:
        return custom.step_options(checked, name)

    def given_names(self, checked: Checked, name: str) -> list[str] | None:
        return None           # its columns are declared, and its statement writes them by name

    def write_order(self, checked: Checked, name: str) -> list[str] | None:
        return None           # its statement writes where it writes; nothing is recomputed

    def explain(self, checked: Checked, name: str) -> tuple[CustomSection | None, list[str]]:
        return custom.explain(checked, name)

    def internal_tables(self, checked: Checked, name: str) -> list[dict]:
        return []

    def column_lineage(self, checked: Checked, name: str, names: list[str]) -> ColumnLineage | None:
        return statement_lineage(checked, name, names)


CUSTOM = CustomKind()
