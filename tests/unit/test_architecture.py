"""The package's shape, as its folders' charters state it: cli → api → project | ui →
planning | engine → state → sql → model. No module imports one of a higher layer, there is no
import circle (imports inside functions included), only the engine imports pyspark, and the
engine's two programs (launch/, in the `dt` process; runtime/, inside Spark) meet only through
their wire (protocol.py, owner_watch.py, the events)."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "dtcli"
RANK = {"model": 0, "config_keys": 0, "plan_parts": 0, "errors": 0, "redact": 0, "lazy": 0, "data_tests": 0, "unit_tests": 0, "artifacts": 0, "json_types": 0,
        "events": 1, "sql": 1, "state": 2, "planning": 3, "engine": 3,
        "project": 4, "ui": 4, "api": 5, "cli": 6}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _imports(path: Path) -> set[str]:
    out = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in MODULES else node.module)
        elif isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
    return out


GRAPH = {name: {i for i in _imports(path) if i in MODULES} for name, path in MODULES.items()}


def _layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_no_module_imports_a_higher_layer():
    upward = [(m, i) for m, deps in GRAPH.items() for i in deps
              if _layer(m) in RANK and _layer(i) in RANK and RANK[_layer(i)] > RANK[_layer(m)]]
    assert upward == []


def test_every_module_has_a_layer():
    """A new top-level module or package is ranked here, or the rule above does not see it."""
    assert sorted({_layer(m) for m in MODULES} - set(RANK) - {""}) == []


def test_the_launch_and_the_runtime_of_the_engine_do_not_import_each_other():
    """launch/ runs in `dt`, runtime/ in the Spark driver: one reaches the other by spark-submit
    and the wire only, so neither may need the other's code (nor the other's imports) to load."""
    def room(module: str) -> str | None:
        parts = module.split(".")
        return parts[2] if len(parts) > 2 and parts[1] == "engine" and parts[2] in ("launch", "runtime") else None

    crossing = [(m, i) for m, deps in GRAPH.items() for i in deps
                if room(m) and room(i) and room(m) != room(i)]
    assert crossing == []
    joint = {m for m in MODULES if m.startswith("dtcli.engine.") and room(m) is None}
    assert joint <= {"dtcli.engine.protocol", "dtcli.engine.owner_watch",
                     "dtcli.engine.session", "dtcli.engine.jars"}, joint   # the last two: old addresses


def test_there_is_no_import_circle():
    state: dict[str, int] = defaultdict(int)
    circles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        state[module] = 1
        for dep in sorted(GRAPH[module]):
            if state[dep] == 1:
                circles.append(path[path.index(dep):] + [dep] if dep in path else [module, dep])
            elif state[dep] == 0:
                visit(dep, path + [dep])
        state[module] = 2

    for module in sorted(MODULES):
        if state[module] == 0:
            visit(module, [module])
    assert circles == []


def test_only_the_engine_imports_pyspark():
    users = sorted(m for m, path in MODULES.items()
                   if any(i == "pyspark" or i.startswith("pyspark.") for i in _imports(path)))
    assert users and all(m.startswith("dtcli.engine") for m in users), users


def test_a_refresh_step_is_read_through_its_typed_options_only():
    """The plan's contract is the dataclasses of dtcli/model/plan.py: no module reads a step's options as a
    dict (a misspelt key would silently read None)."""
    import re

    untyped = re.compile(r"options\s*(\.get\(|\[)")
    found = [f"{path.relative_to(PACKAGE.parent)}:{n}" for path in MODULES.values()
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if untyped.search(line)]
    assert found == []


def test_a_plan_travels_to_the_driver_with_its_typed_options():
    from dtcli.model import CustomSpec, Plan, RefreshStep, StepOptions
    from dtcli.model.plan import StepInput
    from dtcli.model.strategy_specs import ChangeInputSpec
    from dtcli.plan_parts import Estimate, Layout

    custom = CustomSpec(kind="MERGE", columns=[{"name": "id", "type": "bigint"}], add_columns=[],
                        target_alias="t", on="t.id = s.id", start_versions={"src": 3},
                        changes=[ChangeInputSpec(name="src", mode="DEFAULT", path="/w/src", key=["id"])])
    step = RefreshStep(name="d", path="/w/d", action="INCREMENTAL", trigger="SCHEDULED", sql="SELECT 1",
                       inputs=[StepInput("src", "source", "/w/src", 4)], definition_hash="h",
                       refresh_mode="INCREMENTAL",
                       options=StepOptions(read_columns={"src": ["id"]}, layout=Layout(deletion_vectors=False),
                                           estimate=Estimate(change_rows=5), custom=custom))
    plan = Plan(run_id="r", project="p", warehouse="/w", data_timestamp="2026-11-25T00:00:00+00:00",
                source_versions={"src": 4}, steps=[step])
    again = Plan.from_json(plan.to_json())
    assert again == plan and again.steps[0].options.custom.changes[0].key == ["id"]


def test_jvm_free_commands_do_not_import_pandas(tmp_path):
    """pyarrow's `pa.table()` imports pandas to ask whether its argument is a DataFrame: 0.7 s
    of `dt show`. The state readers take deltalake's Arrow streams without it."""
    import subprocess
    import sys

    from tests.helpers import write_project

    root = write_project(tmp_path / "p", {"t": "SELECT id FROM s"}, seeds={"s": "id\n1\n"})
    code = ("import sys; from dtcli import api; api.seed(sys.argv[1]); "
            "api.show_tables(api.check(sys.argv[1], with_stats=True)); print('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(root)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "False"


def test_no_test_module_imports_another():
    """What two test modules share lives in a helper module (tests/helpers.py and its kind): a test
    module imported by another runs its fixtures and collection side effects twice, and moves
    break both."""
    tests = PACKAGE.parent / "tests"
    found = []
    for path in tests.rglob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([node.module] if isinstance(node, ast.ImportFrom) and node.module
                     else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            found += [f"{path.relative_to(tests)} imports {n}" for n in names
                      if n.startswith("tests.") and n.rsplit(".", 1)[-1].startswith("test_")]
    assert found == []


def test_one_module_builds_refresh_records_and_writes_the_history():
    """state/ledger.py: every history row is built there (its state_code with it) and appended
    there, whichever process writes it (the driver, dt, reconcile, dt build)."""
    def calls(tree, name):
        return any(isinstance(n, ast.Call) and (getattr(n.func, "id", None) == name
                                                or getattr(n.func, "attr", None) == name) for n in ast.walk(tree))

    builders, writers = [], []
    for module, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
        if calls(tree, "RefreshRecord"):
            builders.append(module)
        if "history_path" in text and calls(tree, "write_deltalake"):
            writers.append(module)
    assert builders == ["dtcli.state.ledger"] and writers == ["dtcli.state.ledger"]


def test_the_two_kinds_of_table_are_told_apart_in_one_place():
    """planning/kinds: every place where a query table and a custom one differ asks the table's
    kind; no module compares a table's kind with a kind's name, and each kind answers the whole
    interface."""
    import inspect
    import re

    from dtcli.planning.kinds.base import TableKind
    from dtcli.planning.kinds.registry import KINDS

    compared = re.compile(r"""kind\s*[!=]=\s*["'](custom|query)["']|["'](custom|query)["']\s*[!=]=\s*\w*\.?kind\b""")
    found = [f"{path.relative_to(PACKAGE.parent)}:{n}" for path in MODULES.values()
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if compared.search(line)]
    assert found == []
    members = {n for n, _ in inspect.getmembers(TableKind) if not n.startswith("_")} | set(TableKind.__annotations__)
    assert sorted(KINDS) == ["custom", "query"]
    assert {name: sorted(m for m in members if not hasattr(kind, m)) for name, kind in KINDS.items()} == \
        {"custom": [], "query": []}


def test_plain_data_has_a_shape():
    """A plan, a step, a refresh record and an artifact are dataclasses and TypedDicts a reader
    can follow (JSON and YAML as they come in are dtcli/json_types.py's); `dict[str, Any]`
    stays rare elsewhere."""
    untyped = {name: path.read_text(encoding="utf-8").count("dict[str, Any]") for name, path in MODULES.items()}
    shaped = {n: k for n, k in untyped.items()
              if k and (n in ("dtcli.model", "dtcli.plan_parts", "dtcli.events") or n.startswith("dtcli.artifacts"))}
    assert shaped == {} and sum(untyped.values()) <= 30
