"""Frozen predicates before Spark runs: time functions at a moment, the active region Delta can
skip files with, and when a frozen region is shown to contain another (no JVM)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from dtcli.sql.frozen import active_sql, at_time, folded, parse_predicate
from dtcli.sql.frozen_implies import implies

T1 = datetime(2025, 1, 16, 10, 0, tzinfo=timezone.utc)
T2 = T1 + timedelta(days=1)


def p(text: str, dialect: str = "spark"):
    return parse_predicate(text, dialect)


@pytest.mark.parametrize("old, new, expands", [
    ("order_date < '2024-12-31'", "order_date < '2025-01-01'", True),
    ("order_date < '2025-01-02'", "order_date < '2025-01-01'", False),          # shrinks
    ("order_date <= DATE '2024-12-31'", "order_date < DATE '2025-01-01'", True),
    ("order_date < CURRENT_DATE - 30", "order_date < CURRENT_DATE - 30", True),  # ages: grows
    ("order_date > CURRENT_DATE", "order_date > CURRENT_DATE", False),           # shrinks with time
    ("order_date < CURRENT_TIMESTAMP() - INTERVAL '30 days'", "order_date < CURRENT_TIMESTAMP() - INTERVAL '30 days'", True),
    ("order_date < date_sub(current_date(), 30)", "order_date < date_sub(current_date(), 30)", True),
    ("a = 1", "a IN (1, 2)", True),
    ("a IN (1, 2)", "a = 1", False),
    ("a = 1 AND b < 3", "a = 1", True),
    ("a = 1 OR a = 2", "a <= 2", True),
    ("a BETWEEN 1 AND 3", "a < 5", True),
    ("status = 'shipped'", "status = 'shipped' OR status = 'done'", True),
    ("status = 'shipped'", "status = 'done'", False),                            # reshapes
    ("lower(s) = 'x'", "lower(s) = 'x'", True),
    ("lower(s) = 'x'", "lower(s) = 'x' OR a = 1", True),
    ("lower(s) = 'x'", "lower(s) = 'y'", False),
])
def test_expansion_is_shown_for_comparisons_with_constants_and_time(old, new, expands):
    assert implies(at_time(p(old), T1), at_time(p(new), T2)) is expands


def test_snowflake_time_arithmetic_ages_too():
    pred = "order_date < DATEADD(day, -30, CURRENT_DATE)"
    assert implies(at_time(p(pred, "snowflake"), T1), at_time(p(pred, "snowflake"), T2))
    assert not implies(at_time(p(pred, "snowflake"), T2), at_time(p(pred, "snowflake"), T1))


def test_no_previous_predicate_froze_nothing_and_removal_thaws():
    assert implies(None, p("a = 1")) and not implies(p("a = 1"), None)


def test_time_functions_are_evaluated_once_at_the_data_timestamp():
    sql = at_time(p("ts < CURRENT_TIMESTAMP - INTERVAL '1 hour' AND d < current_date()"), T1).sql("spark")
    assert "CAST('2025-01-16 10:00:00' AS TIMESTAMP)" in sql and "CAST('2025-01-16' AS DATE)" in sql
    assert "CAST('2024-12-17' AS DATE)" in folded(at_time(p("d < CURRENT_DATE - 30"), T1)).sql("spark")


def test_the_active_region_is_written_for_file_skipping():
    assert active_sql(p("order_date < '2025-01-01' AND status = 'x'")) == \
        "(order_date >= '2025-01-01' OR order_date IS NULL) OR (status <> 'x' OR status IS NULL)"
    assert active_sql(p("lower(s) = 'x'")) == "NOT COALESCE((LOWER(s) = 'x'), FALSE)"
