#!/usr/bin/env bash
# The example shop end to end: seed, create every DT, change the sources, refresh, show.
set -euo pipefail
cd "$(dirname "$0")/.."
DT=.venv/bin/dt
P=example_project
rm -rf "$P/warehouse" "$P/target"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
step "dt seed";                     $DT seed -p $P
step "dt validate";                 $DT validate -p $P
step "dt run (creates every DT)";   $DT run -p $P
step "a change batch on the sources"; .venv/bin/python scripts/shop_changes.py $P
# A plain `dt run` only refreshes the DTs whose target lag would otherwise be exceeded; the
# DTs were created seconds ago with lags of hours, so nothing is due yet. That is the cron job.
step "dt run (scheduling pass: nothing is due within its target lag)"; $DT run -p $P
# `--all` refreshes now regardless of lag: what you run after a change you want to see.
step "dt run --all (refreshes every DT from one snapshot)"; $DT run --all -p $P
step "dt run --all (nothing changed: NO_DATA, no JVM)"; $DT run --all -p $P
step "dt explain customer_revenue"; $DT explain customer_revenue -p $P
step "dt explain order_status_log (a custom incremental table: REFRESH USING)"; $DT explain order_status_log -p $P
step "dt show rows order_status_log (the seeds' orders, then the batch's inserts and updates)"
$DT show rows order_status_log -p $P --limit 40
step "dt show refresh-history --limit 14"; $DT show refresh-history -p $P --limit 14
step "dt show dynamic tables (scheduling state, next due time)"; $DT show dynamic tables -p $P
step "spark.table(\"analytics.customer_revenue\"): the DT by its name, from the metastore"
.venv/bin/python scripts/read_by_name.py $P analytics.customer_revenue
step "dt docs generate (a site of the project: open example_project/target/docs/index.html)"
$DT docs generate -p $P
