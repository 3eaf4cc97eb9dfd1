#!/usr/bin/env bash
# A/B timing of two icetrim binaries on the same expiry, interleaved, for refactors that must not
# make the hot path slower (the bar: new <= 1.05x old, median of 7).
#
#   scripts/bench-ab.sh OLD_BIN NEW_BIN [RUNS] [SNAPSHOTS]
#
# Builds tables of SNAPSHOTS (default 1000) fast appends whose manifest lists grow to SNAPSHOTS
# manifests (benchmark scenario 1's shape, with the generator of NEW_BIN's folder or $GENERATOR),
# then RUNS times (default 7): generates the table twice (same seed), reads every file once (warm page cache for
# both), and runs the same real expiry with each binary, alternating which goes first. Prints each
# run's wall times, both medians and new/old. Both runs must answer the same rows, else it fails.
set -euo pipefail
shopt -s inherit_errexit
old=${1:?usage: scripts/bench-ab.sh OLD_BIN NEW_BIN [RUNS] [SNAPSHOTS]}
new=${2:?usage: scripts/bench-ab.sh OLD_BIN NEW_BIN [RUNS] [SNAPSHOTS]}
runs=${3:-7}
snapshots=${4:-1000}
generator=${GENERATOR:-$(dirname "$new")/icetrim-generate}
work=$(mktemp -d "${TMPDIR:-/tmp}/icetrim-ab.XXXXXX")
trap 'rm -rf "$work"' EXIT

now=$(date -u +%s)
gen_now=$(date -u -d "@$now" '+%Y-%m-%d %H:%M:%S')
before=$(date -u -d "@$((now - 86400))" '+%Y-%m-%d %H:%M:%S')
# A generated table names its files by absolute path, so each run gets its own copy, generated
# again with the same seed (the same table at another location).
generate() {
  "$generator" --location "$1" --format-version 2 --seed 42 --span 30d --now "$gen_now" \
    --snapshots "$snapshots" --files-per-snapshot 1 --mix append=1 --max-manifests 1000000 >/dev/null
}
sql="CREATE TABLE t ENGINE = IcebergLocal('@LOCATION@');
ALTER TABLE t EXECUTE expire_snapshots(expire_before = '$before', retention_period = '1d');"

# Runs $1 on a fresh copy named $2; prints the wall time in ms; leaves the rows in $work/$2.rows.
run_one() {
  local bin=$1 name=$2 start end
  rm -rf "${work:?}/$name"
  generate "$work/$name"
  find "$work/$name" -type f -exec cat {} + >/dev/null
  start=$(date +%s%N)
  "$bin" <<<"${sql//@LOCATION@/$work/$name}" >"$work/$name.rows" \
    || { echo "$bin failed on $work/$name" >&2; return 1; }
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}

median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

old_times=() new_times=()
for i in $(seq 1 "$runs"); do
  if ((i % 2)); then
    o=$(run_one "$old" old); n=$(run_one "$new" new)
  else
    n=$(run_one "$new" new); o=$(run_one "$old" old)
  fi
  cmp -s "$work/old.rows" "$work/new.rows" || { echo "run $i: the two binaries answered different rows" >&2; diff "$work/old.rows" "$work/new.rows" >&2; exit 1; }
  old_times+=("$o"); new_times+=("$n")
  echo "run $i: old ${o} ms, new ${n} ms"
done
mo=$(printf '%s\n' "${old_times[@]}" | median)
mn=$(printf '%s\n' "${new_times[@]}" | median)
echo "median of $runs: old ${mo} ms, new ${mn} ms, new/old $(awk -v a="$mn" -v b="$mo" 'BEGIN {printf "%.3f", a / b}')"
