#!/usr/bin/env bash
# Both expiry cleanups (incremental and full keep set) on N random histories: N tables written by
# the generator (real manifests, in memory) and N histories of the model writer, each planned both
# ways; the run fails on the first history where they delete different files.
#   scripts/incremental-check.sh 10000            # debug build (the one tests use)
#   scripts/incremental-check.sh 10000 --release  # release build (faster, builds longer)
# ICETRIM_INCREMENTAL_SEED sets the first generator seed (1 by default).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
n=${1:-10000}
profile=()
if [ "${2:-}" = "--release" ]; then profile=(--release); fi
start=$(date +%s)
log=$(mktemp)
status=0
ICETRIM_INCREMENTAL_CASES="$n" cargo test "${profile[@]}" --features glue --lib \
  maintain::expire::incremental -- --nocapture --test-threads 2 >"$log" 2>&1 || status=$?
grep -E "generated tables|^test |test result|panicked|left:|right:|seed [0-9]+:" "$log" || tail -20 "$log"
rm -f "$log"
echo "incremental-check: $n histories each way, $(( $(date +%s) - start )) s, exit $status"
exit "$status"
