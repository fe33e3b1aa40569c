"""The words of a refresh, as Snowflake names them: actions, triggers, modes, states and the
state codes dt adds. Plans, records and every renderer compare against these constants."""

# Refresh actions and triggers, as Snowflake names them.
NO_DATA, INCREMENTAL, FULL, REINITIALIZE = "NO_DATA", "INCREMENTAL", "FULL", "REINITIALIZE"
# The action of a `dt test` step: the table's data tests run over it as it is; nothing is written.
TEST = "TEST"
# A resolved refresh mode besides INCREMENTAL and FULL: each refresh picks the cheaper of the two.
ADAPTIVE = "ADAPTIVE"
# The strategy kind every refresh of an incremental top-N runs (engine/runtime/strategies/top_n.py).
TOP_N = "TOP_N"
# ... and of an aggregate over running totals (engine/runtime/strategies/aggregate_totals.py).
AGGREGATE_TOTALS = "AGGREGATE_TOTALS"
# The refresh mode of a REFRESH USING table: its own statement applies the changes.
CUSTOM_INCREMENTAL = "CUSTOM_INCREMENTAL"
CREATION, SCHEDULED, MANUAL = "CREATION", "SCHEDULED", "MANUAL"
SUCCEEDED, FAILED, SKIPPED, UPSTREAM_FAILED = "SUCCEEDED", "FAILED", "SKIPPED", "UPSTREAM_FAILED"
# The one definition of a refresh that failed: it, or the upstream refresh it needed, broke.
FAILURE_STATES = frozenset({FAILED, UPSTREAM_FAILED})
# state_code of the FAILED rows of a run whose Spark application could not start: no refresh
# ran, so they neither count toward auto-suspension nor break a streak
APPLICATION_NOT_STARTED = "APPLICATION_NOT_STARTED"
# state_code of the refreshes the application of a dt process that died did not run (the driver
# records them as it stops; reconcile, those of an application that died with it)
DT_PROCESS_GONE = "DT_PROCESS_GONE"
