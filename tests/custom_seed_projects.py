"""The seed's five custom incremental examples (REFRESH USING), as Snowflake DDL and as Spark SQL,
over one set of sources: run by tests/spark/test_custom_incremental.py, compiled side by side
without a JVM by tests/unit/test_custom_config.py."""

from __future__ import annotations

from tests.helpers import write_project

SOURCES = {
    "clicks": "click_id INT, user_id INT, page_id INT, click_ts TIMESTAMP",
    "pages": "page_id INT, page_title STRING, section STRING",
    "users": "id INT, name STRING, email STRING",
    "match_results": "player_id INT, score INT",
    "orders": "order_id INT, customer_id INT, amount INT",
    "customers": "customer_id INT, name STRING",
}
SOURCE_YAML = "sources:\n" + "".join(f"  {n}: {{path: ../data/{n}}}\n" for n in SOURCES if n != "orders") + \
    "  orders: {path: ../data/orders, primary_key: [order_id], rely: true}\n"

# -- the seed's statements, as written ---------------------------------------------------------
SEED_CLICKS = """CREATE OR REPLACE DYNAMIC TABLE dt_enriched_clicks (
  click_id INT,
  user_id INT,
  page_title STRING,
  section STRING,
  click_ts TIMESTAMP
)
  TARGET_LAG = '1 minute'
  WAREHOUSE = transform_wh
  REFRESH USING (
    INSERT INTO SELF
    SELECT c.click_id, c.user_id, p.page_title, p.section, c.click_ts
    FROM clicks CHANGES(INFORMATION => APPEND_ONLY) AS c
    LEFT OUTER JOIN pages AS p ON c.page_id = p.page_id
  );"""
SEED_DELETIONS = """CREATE OR REPLACE DYNAMIC TABLE dt_deletions_log (
  id INT,
  name STRING,
  email STRING
)
  TARGET_LAG = '1 minute'
  WAREHOUSE = transform_wh
  INITIALIZE = ON_SCHEDULE
  REFRESH USING (
    INSERT INTO SELF
    SELECT * EXCLUDE (METADATA$ISUPDATE, METADATA$ACTION)
    FROM users CHANGES(INFORMATION => DEFAULT)
    WHERE NOT METADATA$ISUPDATE AND METADATA$ACTION = 'DELETE'
  );"""
SEED_SCORES = """CREATE OR REPLACE DYNAMIC TABLE dt_player_scores (
  player_id INT,
  total_score INT
)
  TARGET_LAG = '1 minute'
  WAREHOUSE = transform_wh
  REFRESH USING (
    MERGE INTO SELF AS tgt
    USING (
      SELECT player_id, SUM(score) AS batch_score
      FROM match_results CHANGES(INFORMATION => APPEND_ONLY)
      GROUP BY player_id
    ) AS src
    ON tgt.player_id = src.player_id
    WHEN MATCHED THEN
      UPDATE SET tgt.total_score = tgt.total_score + src.batch_score
    WHEN NOT MATCHED THEN
      INSERT (player_id, total_score) VALUES (src.player_id, src.batch_score)
  );"""
# The seed names these two examples without their text: written here in its style.
LEADERBOARD = """REFRESH USING (
  MERGE INTO SELF AS t
  USING (
    WITH candidates AS (
      SELECT player_id, score FROM match_results CHANGES(INFORMATION => APPEND_ONLY)
      UNION ALL
      SELECT player_id, score FROM SELF
    ), best AS (
      SELECT player_id, MAX(score) AS score FROM candidates GROUP BY player_id
    ), top_k AS (
      SELECT player_id, score FROM best
      QUALIFY ROW_NUMBER() OVER (ORDER BY score DESC, player_id) <= 3
    )
    SELECT COALESCE(k.player_id, cur.player_id) AS player_id, k.score AS score, k.player_id IS NULL AS dropped
    FROM top_k AS k FULL OUTER JOIN SELF AS cur ON k.player_id = cur.player_id
  ) AS s
  ON t.player_id = s.player_id
  WHEN MATCHED AND s.dropped THEN DELETE
  WHEN MATCHED AND t.score <> s.score THEN UPDATE SET t.score = s.score
  WHEN NOT MATCHED THEN INSERT (player_id, score) VALUES (s.player_id, s.score)
)"""
ORDERS_CDC = """REFRESH USING (
  MERGE INTO SELF AS t
  USING (
    SELECT o.order_id, o.amount, c.name AS customer_name, o.METADATA$ACTION AS action
    FROM orders CHANGES(INFORMATION => DEFAULT) AS o
    LEFT JOIN customers AS c ON o.customer_id = c.customer_id
    WHERE NOT (o.METADATA$ACTION = 'DELETE' AND o.METADATA$ISUPDATE)
  ) AS s
  ON t.order_id = s.order_id
  WHEN MATCHED AND s.action = 'DELETE' THEN DELETE
  WHEN MATCHED THEN UPDATE SET t.amount = s.amount, t.customer_name = s.customer_name
  WHEN NOT MATCHED AND s.action = 'INSERT' THEN
    INSERT (order_id, amount, customer_name) VALUES (s.order_id, s.amount, s.customer_name)
)"""
COLUMNS = {
    "dt_enriched_clicks": "[{name: click_id, type: INT}, {name: user_id, type: INT}, {name: page_title, type: STRING}, "
                          "{name: section, type: STRING}, {name: click_ts, type: TIMESTAMP}]",
    "dt_deletions_log": "[{name: id, type: INT}, {name: name, type: STRING}, {name: email, type: STRING}]",
    "dt_player_scores": "[{name: player_id, type: INT}, {name: total_score, type: INT}]",
    "dt_leaderboard": "[{name: player_id, type: INT}, {name: score, type: INT}]",
    "dt_orders_enriched": "[{name: order_id, type: INT}, {name: amount, type: INT}, {name: customer_name, type: STRING}]",
}
# The same tables as a Spark SQL project writes them (statement files, columns in YAML).
SPARK = {
    "dt_enriched_clicks": """INSERT INTO SELF
SELECT c.click_id, c.user_id, p.page_title, p.section, c.click_ts
FROM clicks CHANGES(INFORMATION => APPEND_ONLY) AS c
LEFT OUTER JOIN pages AS p ON c.page_id = p.page_id""",
    "dt_deletions_log": """INSERT INTO SELF
SELECT * EXCLUDE (METADATA$ISUPDATE, METADATA$ACTION)
FROM {{ source('users') }} CHANGES(INFORMATION => DEFAULT)
WHERE NOT `METADATA$ISUPDATE` AND `METADATA$ACTION` = 'DELETE'""",
    "dt_player_scores": """MERGE INTO SELF AS tgt
USING (SELECT player_id, SUM(score) AS batch_score
       FROM match_results CHANGES(INFORMATION => APPEND_ONLY) GROUP BY player_id) AS src
ON tgt.player_id = src.player_id
WHEN MATCHED THEN UPDATE SET tgt.total_score = tgt.total_score + src.batch_score
WHEN NOT MATCHED THEN INSERT (player_id, total_score) VALUES (src.player_id, src.batch_score)""",
    "dt_leaderboard": LEADERBOARD,
    "dt_orders_enriched": ORDERS_CDC,
}


def seed_projects(tmp_path):
    """The Snowflake-dialect project (the seed's statements as written) and its Spark SQL twin."""
    snowflake = {"dt_enriched_clicks": SEED_CLICKS, "dt_deletions_log": SEED_DELETIONS,
                 "dt_player_scores": SEED_SCORES, "dt_leaderboard": LEADERBOARD, "dt_orders_enriched": ORDERS_CDC}
    yml = {n: f"target_lag: 1 minute\ncolumns: {COLUMNS[n]}\n" for n in ("dt_leaderboard", "dt_orders_enriched")}
    roots = [write_project(tmp_path / "snowflake", snowflake, config="dialect: snowflake\n" + SOURCE_YAML,
                           table_yml=yml)]
    yml = {n: f"target_lag: 1 minute\ncolumns: {c}\n" for n, c in COLUMNS.items()}
    yml["dt_deletions_log"] += "initialize: on_schedule\n"
    roots.append(write_project(tmp_path / "spark", SPARK, config=SOURCE_YAML, table_yml=yml))
    return roots
