#!/usr/bin/env bash
# icetrim against ClickHouse (chdb) on the same generated tables, in one run (see README "Benchmarks").
#   scripts/bench.sh --quick          # small sizes, a few minutes
#   scripts/bench.sh                  # the sizes of the README table (about 45 minutes)
# Other flags: --only 1,2,3,4,5,6,7,8  --large-orphans  --dir DIR  --keep  --ch-timeout SECONDS
#   --fleet-sizes 50,500 (scenario 8's table counts).
# Needs the test environment (scripts/test-env.sh: .venv with chdb). Starts the S3 emulator for
# scenario 5 unless it is already running, and stops it afterwards if it started it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
started=0
if [ ! -f target/emulators.env ]; then
  scripts/emulators.sh start >/dev/null
  started=1
fi
set -a
# shellcheck disable=SC1091
source target/emulators.env
set +a
status=0
TZ=UTC cargo bench --bench vs_clickhouse -- "$@" || status=$?
if [ "$started" = 1 ]; then scripts/emulators.sh stop >/dev/null; fi
exit "$status"
