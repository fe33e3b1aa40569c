"""Projects for the `dt docs` tests: a generated DAG of many DTs (seeded, so JVM-free), and
refresh-history entries written by the history's own writer."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone
from pathlib import Path

from dtcli.model import RefreshRecord
from tests.helpers import write_project

WORDS = ("orders", "customers", "revenue", "sessions", "clicks", "inventory", "returns", "shipments",
         "payments", "refunds", "campaigns", "subscriptions", "churn_signals", "fx_rates", "ledger")
STAGES = ("stg", "int", "fct", "dim", "agg", "rpt", "mart_finance", "ml_features")
SEED_COUNT = 6


def big_project(root: Path, n: int = 200, *, seed: int = 7) -> tuple[Path, dict[str, list[str]]]:
    """`n` DTs over six seeds in a DAG about eight layers deep, each reading one or two inputs
    (a filter, a join, or a GROUP BY), names of many lengths, tags, some frozen regions.
    Returns the project folder and each DT's inputs."""
    rng = random.Random(seed)
    seeds = {f"raw_{WORDS[k]}": "id,grp,amount,ts\n" + "\n".join(
        f"{i},{i % 5},{i * 1.25:.2f},2025-01-{1 + i % 28:02d} 10:00:00" for i in range(1, 30))
        for k in range(SEED_COUNT)}
    tables: dict[str, str] = {}
    yml: dict[str, str] = {}
    inputs: dict[str, list[str]] = {}
    depth: dict[str, int] = dict.fromkeys(seeds, 0)
    names: list[str] = []
    for i in range(n):
        stage = STAGES[min(len(STAGES) - 1, i * len(STAGES) // n)]
        name = f"{stage}_{rng.choice(WORDS)}_{i:03d}"
        if rng.random() < 0.15:
            name += "_" + rng.choice(("by_day", "rolling_28_days", "with_currency_conversion"))
        pool = names[-40:] if names and rng.random() < 0.85 else list(seeds)
        first = rng.choice(pool)
        second = rng.choice(names[-60:] + list(seeds)) if rng.random() < 0.35 else None
        if second == first:
            second = None
        ins = [first] + ([second] if second else [])
        kind = rng.random()
        if second:
            sql = (f"SELECT a.id, a.grp, a.amount + b.amount AS amount, a.ts\n"
                   f"FROM {first} AS a JOIN {second} AS b ON a.id = b.id")
        elif kind < 0.3:
            sql = f"SELECT id, grp, SUM(amount) AS amount, MAX(ts) AS ts\nFROM {first}\nGROUP BY id, grp"
        else:
            sql = f"SELECT id, grp, amount, ts\nFROM {first}\nWHERE amount > {rng.randint(0, 5)}"
        depth[name] = 1 + max(depth[x] for x in ins)
        # a DT's lag may not be shorter than its inputs': lags grow with depth
        config = [f"target_lag: '{depth[name]} hours'"]
        if rng.random() < 0.3:
            config.append(f"tags: [{rng.choice(('finance', 'marketing', 'ops'))}]")
        if rng.random() < 0.08:
            config.append("frozen_where: \"ts < '2025-01-05'\"")
        tables[name] = sql
        yml[name] = "\n".join(config) + "\n"
        inputs[name] = ins
        names.append(name)
    return write_project(root, tables, table_yml=yml, seeds=seeds, name="big"), inputs


def record(name: str, action: str, start: datetime, seconds: float, *, state: str = "SUCCEEDED",
           trigger: str = "SCHEDULED", inserted: int = 0, deleted: int = 0, message: str | None = None,
           data_timestamp: datetime | None = None) -> RefreshRecord:
    end = start + timedelta(seconds=seconds)
    return RefreshRecord(name=name, state=state, refresh_action=action, refresh_trigger=trigger,
                         data_timestamp=(data_timestamp or start).isoformat(),
                         refresh_start_time=start.isoformat(), refresh_end_time=end.isoformat(),
                         run_id=f"run-{start:%H%M%S}", state_message=message,
                         num_inserted_rows=inserted, num_deleted_rows=deleted)


def _checks(checked, table: str) -> list[dict]:
    """The table's checks as a refresh's results name them (dbt's unique_id included)."""
    from dtcli.api.test_results import last_results

    return [{k: c[k] for k in ("name", "unique_id", "kind", "test", "table", "action", "column")}
            for c in last_results(checked, [], [])[table]]


def hours_ago(hours: float) -> datetime:
    return datetime.now(timezone.utc) - timedelta(hours=hours)


SCRIPT = "<script>alert(1)</script>"
SHOP_TABLES = {
    "valid_orders": "SELECT order_id, customer_id, amount, ordered_at FROM orders WHERE status <> 'cancelled'",
    "customer_revenue": """
        {{ config(target_lag='2 hours') }}
        -- revenue per customer
        SELECT c.customer_id, c.name, SUM(o.amount) AS revenue
        FROM {{ ref('valid_orders') }} AS o JOIN customers AS c ON c.customer_id = o.customer_id
        GROUP BY c.customer_id, c.name
    """,
    "customer_rank": """
        SELECT customer_id, revenue, RANK() OVER (ORDER BY revenue DESC) AS overall_rank
        FROM {{ ref('customer_revenue') }}
    """,
    "order_audit": """
        REFRESH USING (
          INSERT INTO SELF
          SELECT o.order_id, o.status FROM orders CHANGES(INFORMATION => DEFAULT) AS o
          WHERE o.METADATA$ACTION = 'INSERT'
        )
    """,
    # a column name and a string holding markup: the site must show them as text
    "odd_names": f"SELECT customer_id, name AS `{SCRIPT}`, '{SCRIPT}' AS note FROM customers",
    "paused_feed": "SELECT order_id, status FROM orders",
    "broken_feed": "SELECT order_id, CAST(status AS INT) AS code FROM orders",
    "lost_table": "SELECT customer_id FROM customers",
}
SHOP_YML = {
    "valid_orders": "tags: [core]\nfrozen_where: \"ordered_at < '2024-01-01'\"\n"
                    "columns:\n  - name: order_id\n    data_tests: [{not_null: {config: {severity: warn}}}, unique]\n"
                    "expectations:\n  positive: amount > 0\n  sane: {expect: amount < 1000, on_violation: drop}\n",
    "customer_revenue": f"tags: [finance]\ncomment: \"{SCRIPT} revenue per customer\"\n",
    "customer_rank": "target_lag: 2 hours\ntags: [finance, dashboard]\n",
    "order_audit": "columns: [{name: order_id, type: BIGINT}, {name: status, type: STRING}]\n",
    "odd_names": f"tags: [\"{SCRIPT}\"]\n",
}
SHOP_SEEDS = {
    "orders": "order_id,customer_id,status,amount,ordered_at\n" + "\n".join(
        f"{i},{i % 4},{'cancelled' if i % 5 == 0 else 'placed'},{i * 2.5:.2f},2024-0{1 + i % 9}-10 10:00:00"
        for i in range(1, 25)),
    "customers": "customer_id,name\n0,Ada\n1,Grace\n2,Edsger\n3,Barbara\n",
}


def shop_project(root: Path) -> Path:
    """A seeded shop whose DTs look as dt leaves them (Delta tables with frontiers, written
    without Spark) with a refresh history of every action: one DT behind its target lag, one
    suspended, one whose last refresh failed, one orphaned (its file removed), and names,
    comments, tags, columns and messages holding markup."""
    import pyarrow as pa
    from deltalake import CommitProperties, write_deltalake

    from dtcli.api import check
    from dtcli.model import Frontier
    from dtcli.planning.definition import definition_hash
    from dtcli.project.seed import arrow_type
    from dtcli.state import ledger, test_results
    from dtcli.state.delta_log import frontier_metadata, table_version
    from tests.helpers import dt

    write_project(root, SHOP_TABLES, table_yml=SHOP_YML, seeds=SHOP_SEEDS, name="shop")
    (root / "seeds" / "orders.yml").write_text("columns: {amount: 'decimal(10,2)', ordered_at: timestamp}\n")
    assert dt("seed", "-p", str(root)).code == 0
    checked = check(root)
    project = checked.project
    stamps = {"valid_orders": hours_ago(0.3), "customer_revenue": hours_ago(3), "customer_rank": hours_ago(3),
              "order_audit": hours_ago(0.5), "odd_names": hours_ago(0.2), "paused_feed": hours_ago(0.4),
              "broken_feed": hours_ago(1.2), "lost_table": hours_ago(5)}
    for name, stamp in stamps.items():
        table = project.tables[name]
        versions = {i: table_version(project.input_path(i)) for i in table.inputs}
        frontier = Frontier(versions, definition_hash(table), stamp.isoformat(), None, "FULL", "FULL")
        columns = checked.schemas[name]
        data = pa.table({c.name: pa.array([None], arrow_type(c.type or "string", table.file)) for c in columns})
        write_deltalake(project.table_path(name), data, mode="overwrite",
                        configuration={"delta.enableChangeDataFeed": "true"},
                        commit_properties=CommitProperties(custom_metadata={"userMetadata": frontier_metadata(frontier)}))
    records = []
    for name, stamp in stamps.items():
        # the newest successful refresh of each DT is the one its frontier carries
        created = stamp - timedelta(hours=2) if name in ("valid_orders", "broken_feed") else stamp
        records.append(record(name, "FULL", created, 6.5, trigger="CREATION", inserted=24))
    vo = stamps["valid_orders"]
    records += [record("valid_orders", "INCREMENTAL", vo - timedelta(minutes=90), 3.1, inserted=2, deleted=1),
                record("valid_orders", "NO_DATA", vo - timedelta(minutes=60), 0.1),
                record("valid_orders", "REINITIALIZE", vo - timedelta(minutes=30), 5.2, inserted=20, deleted=19,
                       trigger="MANUAL"),
                record("valid_orders", "INCREMENTAL", vo, 2.4, inserted=1)]
    # what valid_orders' refreshes found with its checks (INCREMENTAL, REINITIALIZE, INCREMENTAL;
    # the NO_DATA refresh ran none), then what `dt test` found: the site shows each check's last
    # result and its counts over time
    found = {c["name"]: c for c in _checks(checked, "valid_orders")}

    def results(**found_rows):
        return [{**found[n], "status": ("warn" if k else "pass"), "failures": k,
                 "message": f"{k} rows" if k else None, "samples": []} for n, k in found_rows.items()]

    nn = "not_null_valid_orders_order_id"
    records[-4].data_tests = results(**{nn: 2, "positive": 1, "sane": 3})
    records[-2].data_tests = results(**{nn: 0, "positive": 4, "sane": 0})
    records[-1].data_tests = results(**{nn: 0, "positive": 0, "sane": 1})
    tested = RefreshRecord(name="valid_orders", state="SUCCEEDED", refresh_action="TEST", refresh_trigger="MANUAL",
                           data_timestamp=None, refresh_start_time=hours_ago(0.1).isoformat(),
                           refresh_end_time=hours_ago(0.1).isoformat(), run_id="test-run",
                           data_tests=results(**{nn: 3}))
    test_results.append(project.warehouse, test_results.rows_of([tested], "test"))
    bf = stamps["broken_feed"]
    records += [record("broken_feed", "INCREMENTAL", bf, 2.0, inserted=3),
                record("broken_feed", "INCREMENTAL", hours_ago(0.1), 1.7, state="FAILED",
                       message=f"{SCRIPT} [CAST_INVALID_INPUT] The value 'placed' cannot be cast to INT"),
                record("broken_feed", "INCREMENTAL", hours_ago(30), 1.1, state="FAILED", message="two days ago")]
    ledger.append(project.warehouse, records)
    assert dt("suspend", "paused_feed", "-p", str(root)).code == 0
    (root / "tables" / "lost_table.sql").unlink()
    return root
