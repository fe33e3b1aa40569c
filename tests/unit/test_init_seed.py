"""`dt init` renders a working project; `dt seed` loads CSVs as Delta sources with the CDF on (no JVM)."""

from __future__ import annotations

from dtcli.state.delta_log import table_info
from tests.helpers import dt


def test_init_seed_validate_without_spark(tmp_path):
    root = tmp_path / "shop"
    assert dt("init", str(root)).code == 0
    assert (root / "dt_project.yml").read_text().startswith("# dt project")
    assert "name: shop" in (root / "dt_project.yml").read_text()
    assert (root / ".gitignore").read_text().startswith("warehouse/")
    assert sorted(p.name for p in (root / "tables").iterdir()) == ["recent_orders.sql", "revenue_per_customer.sql"]

    result = dt("seed", "-p", str(root))
    assert result.code == 0 and "seeded orders: 5 rows" in result.out
    info = table_info(str(root / "warehouse" / "orders"))
    assert info.change_data_feed and info.rows == 5
    assert info.columns == ("order_id", "customer", "amount", "ordered_at")

    result = dt("validate", "-p", str(root))
    assert result.code == 0, result.err
    assert "recent_orders: ADAPTIVE" in result.out and "ok: 2 dynamic tables" in result.out

    plan = dt("run", "-p", str(root), "--dry-run").json()
    assert [(s["name"], s["action"], s["trigger"]) for s in plan["steps"]] == [
        ("recent_orders", "FULL", "CREATION"), ("revenue_per_customer", "FULL", "CREATION")]
    assert plan["source_versions"] == {"orders": 0}


def test_init_refuses_an_existing_project(tmp_path):
    assert dt("init", str(tmp_path)).code == 0
    result = dt("init", str(tmp_path))
    assert result.code == 2 and "already holds a dt project" in result.err


def test_seed_types_come_from_the_seed_yml(tmp_path):
    root = tmp_path / "shop"
    dt("init", str(root))
    dt("seed", "-p", str(root))
    from deltalake import DeltaTable

    schema = {f.name: str(f.type) for f in DeltaTable(str(root / "warehouse" / "orders")).schema().fields}
    assert "decimal(10,2)" in schema["amount"].lower() or "decimal" in schema["amount"].lower()
    assert "timestamp" in schema["ordered_at"].lower()


def test_the_new_project_points_only_to_files_it_has(tmp_path):
    import re

    root = tmp_path / "shop"
    assert dt("init", str(root)).code == 0
    texts = {p: p.read_text() for p in root.rglob("*") if p.is_file() and p.suffix != ".csv"}
    mentioned = {m for text in texts.values()
                 for m in re.findall(r"(?<![\w.])[\w/-]+\.(?:md|yml|yaml|sql|csv|json)(?![\w.])", text)}
    assert "README.md" in mentioned and "tables/recent_orders.sql" in mentioned
    # artefacts that dt writes later are named as such (target/run_results.json); every
    # other file a comment or the README names is in the project
    missing = {m for m in mentioned - {"target/run_results.json"} if not (root / m).exists()}
    assert not missing, f"the template points to files the project does not have: {missing}"
    assert "docs/" not in "".join(texts.values())


def test_ref_names_a_seed_as_in_dbt(tmp_path):
    root = tmp_path / "shop"
    assert dt("init", str(root)).code == 0 and dt("seed", "-p", str(root)).code == 0
    (root / "tables" / "staging").mkdir()
    (root / "tables" / "staging" / "stg_orders.sql").write_text(
        "SELECT order_id, amount\nFROM {{ ref('orders') }}\n")
    result = dt("validate", "-p", str(root))
    assert result.code == 0, result.err
    plan = dt("run", "-p", str(root), "--dry-run").json()
    assert "stg_orders" in [s["name"] for s in plan["steps"]]

    (root / "tables" / "staging" / "stg_orders.sql").write_text("SELECT order_id\nFROM {{ ref('orderz') }}\n")
    result = dt("validate", "-p", str(root))
    assert result.code == 2 and "stg_orders.sql:2" in result.err and "did you mean orders?" in result.err


def test_explain_says_a_new_adaptive_dt_is_created_by_a_full_refresh(tmp_path):
    root = tmp_path / "shop"
    assert dt("init", str(root)).code == 0 and dt("seed", "-p", str(root)).code == 0
    adaptive = dt("explain", "recent_orders", "-p", str(root), "--format", "json").json()["adaptive"]
    assert adaptive["action"] == "FULL" and adaptive["reason"].startswith("creation")
