"""Pure planning, no Spark: the DAG, target lags and schedules, refresh modes, and the plan."""
