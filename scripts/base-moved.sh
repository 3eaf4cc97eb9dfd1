#!/usr/bin/env bash
# Runs the base-moved property test (tests/interop/base_moved/) on N random histories per backend
# (path, REST, Glue; default 1000): another writer commits between each icetrim statement's plan
# and its commit, and every invariant is checked. Installs the test environment and starts the
# emulators as scripts/test.sh does, stops them at the end.
#
#   scripts/base-moved.sh [N] [SEED]     SEED: the first history's seed (default: drawn)
#
# Prints each failing history (seed, statement × writer, violations), then one line per backend
# and the summary "<histories> histories: <passed> passed, <failed> failed". Exits 1 when a history
# failed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cases=${1:-1000}
case $cases in '' | *[!0-9]*) echo "usage: $0 [N] [SEED]" >&2; exit 2 ;; esac
scripts/test-env.sh
export ICETRIM_PYTHON="$root/.venv/bin/python"
export ICETRIM_BASE_MOVED_CASES=$cases
export RUST_BACKTRACE=0
if [ -n "${2:-}" ]; then export ICETRIM_BASE_MOVED_SEED=$2; fi
scripts/emulators.sh start
trap 'scripts/emulators.sh stop' EXIT
set -a
# shellcheck disable=SC1091
source target/emulators.env
set +a
log=$(mktemp)
trap 'rm -f "$log"; scripts/emulators.sh stop' EXIT
status=0
cargo test --features glue --test interop base_moved -- --nocapture --test-threads=3 2>&1 \
  | tee "$log" | grep -E '^(\[|    |base_moved\[)' || true
grep -q '^test result: ok' "$log" || status=1
awk '
  /^base_moved\[[a-z]+\]: [0-9]+ histories: [0-9]+ passed, [0-9]+ failed/ {
    n += $2; p += $4; f += $6; seen++
  }
  END {
    if (seen == 0) { print "no history ran (see the cargo output above)"; exit 1 }
    printf "%d histories: %d passed, %d failed\n", n, p, f
  }' "$log" || status=1
exit $status
