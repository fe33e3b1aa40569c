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
step "dt run (refreshes)";          $DT run -p $P
step "dt run (nothing changed: NO_DATA, no JVM)"; $DT run -p $P
step "dt explain customer_revenue"; $DT explain customer_revenue -p $P
step "dt show refresh-history --limit 14"; $DT show refresh-history -p $P --limit 14
step "dt show dynamic tables";      $DT show dynamic tables -p $P
