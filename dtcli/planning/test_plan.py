"""The plan of `dt test`: every data test of the selected tables, over each table as it is now.

A refresh audits what it is about to write (engine/runtime/audit.py); `dt test` runs the same compiled
checks over whole tables, as dbt's `dbt test` does: one TEST step per table (DT, source or seed)
with tests, in DAG order, each reading its table at its latest version. Expectations are not
run: they act on the rows a refresh writes (a `drop` one keeps them out, so the DT holds none).
A singular test is run on the last table it reads in DAG order, or, when it reads only
sources, on its first source. A DT not created yet has nothing to test: it is listed apart.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from dtcli.data_tests import AuditSpec
from dtcli.model import MANUAL, Plan, RefreshStep, StepOptions
from dtcli.model.refresh_terms import TEST
from dtcli.planning import selectors
from dtcli.planning.checked import Checked
from dtcli.planning.data_tests import TableChecks, compile_checks


@dataclass
class TestPlan:
    plan: Plan
    not_created: list[str] = field(default_factory=list)    # selected DTs with tests and no table yet


def tests_by_table(checked: Checked) -> dict[str, TableChecks]:
    """Each table's checks as `dt test` runs them: a DT's own, and the singular tests that read
    only sources on the first source they read (no refresh runs those)."""
    project = checked.project
    checks = dict(checked.data_tests)
    for test in project.singular_tests:
        if test.inputs and not any(i in project.tables for i in test.inputs) and \
                not any(i in project.disabled for i in test.inputs):
            found = checks.get(test.inputs[0]) or TableChecks()      # a copy: checked's stays as it is
            checks[test.inputs[0]] = TableChecks(found.tests, found.expectations, [*found.singular, test])
    return checks


def build_test_plan(checked: Checked, names: list[str] | None = None, *, run_id: str | None = None) -> TestPlan:
    """The TEST steps of the tables the selectors name (none: every DT, source and seed); a
    selector that names a source or seed exactly selects it."""
    project = checked.project
    sources = {s for s in (names or []) if s.lower() in project.sources}
    rest = [s for s in (names or []) if s not in sources]
    tables = selectors.select(project, checked.graph, rest) if rest or not names else set()
    chosen = tables | {s.lower() for s in sources} | (set(project.sources) if not names else set())
    checks = tests_by_table(checked)
    steps, not_created = [], []
    order = [*sorted(n for n in project.sources if n in chosen), *checked.graph.ordered(tables)]
    for name in order:
        found = checks.get(name)
        if not found or not (found.tests or found.singular):
            continue
        if name in project.tables and checked.snapshot.tables.get(name) is None:
            not_created.append(name)
            continue
        query = checked.qualified.get(name) if name in project.tables and checked.qualified.bound(name) else None
        compiled = compile_checks(project, name, TableChecks(found.tests, [], found.singular),
                                  columns=[c.name for c in checked.schemas.get(name, ())], query=query,
                                  frozen=name in checked.frozen)
        steps.append(RefreshStep(name=name, path=project.input_path(name), action=TEST, trigger=MANUAL, sql="",
                                 inputs=[], definition_hash="", refresh_mode=TEST,
                                 options=StepOptions(audit=AuditSpec(compiled.checks))))
    plan = Plan(run_id=run_id or uuid.uuid4().hex[:12], project=project.name, warehouse=project.warehouse,
                data_timestamp=checked.snapshot.taken_at.isoformat(), source_versions={}, steps=steps, threads=1)
    return TestPlan(plan, not_created)
