#!/usr/bin/env bash
# Starts or stops the storage emulators the tests use, on free loopback ports:
#   moto     (S3)    $ROOT/.venv/bin/moto_server              bucket    icetrim-test
#   azurite  (Azure) $ROOT/.cache/node/.../azurite-blob       container icetrim-test
#   REST catalog     tests/rest_catalog/server.py (pyiceberg SqlCatalog on SQLite, warehouse on moto)
# `start` waits until both answer, creates the bucket and the container, and writes
# target/emulators.env (export lines: ICETRIM_S3_ENDPOINT, ICETRIM_S3_BUCKET, ICETRIM_AZURE_ENDPOINT,
# ICETRIM_AZURE_CONTAINER, ICETRIM_REST_URI, pids, data dirs) for `source`. `stop` kills what `start` started.
# Install the tools first with scripts/test-env.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
env_file="$root/target/emulators.env"
log_dir="$root/target/emulators"
bucket=icetrim-test
container=icetrim-test
moto="$root/.venv/bin/moto_server"
azurite="$root/.cache/node/node_modules/.bin/azurite-blob"
python="$root/.venv/bin/python"

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

alive() { [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null; }

# Wait until an HTTP server answers anything at $1 (at most ~30 s); $2 is the pid to watch.
wait_http() {
  local url=$1 pid=$2 code
  for _ in $(seq 1 150); do
    code=$(curl -s -o /dev/null -w '%{http_code}' "$url" || true)
    if [ "$code" != "000" ]; then return 0; fi
    if ! alive "$pid"; then echo "emulator for $url exited; see $log_dir" >&2; return 1; fi
    sleep 0.2
  done
  echo "emulator at $url did not answer in time; see $log_dir" >&2
  return 1
}

stop() {
  if [ -f "$env_file" ]; then
    # shellcheck disable=SC1090
    source "$env_file"
    for pid in "${ICETRIM_REST_PID:-}" "${ICETRIM_MOTO_PID:-}" "${ICETRIM_AZURITE_PID:-}"; do
      if alive "$pid"; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do alive "$pid" || break; sleep 0.1; done
        alive "$pid" && kill -9 "$pid" 2>/dev/null || true
      fi
    done
    if [ -n "${ICETRIM_AZURITE_DIR:-}" ] && [ -d "$ICETRIM_AZURITE_DIR" ]; then
      rm -rf "$ICETRIM_AZURITE_DIR"
    fi
    if [ -n "${ICETRIM_REST_DIR:-}" ] && [ -d "$ICETRIM_REST_DIR" ]; then
      rm -rf "$ICETRIM_REST_DIR"
    fi
    rm -f "$env_file"
  fi
  echo "emulators stopped"
}

start() {
  if [ -f "$env_file" ]; then
    # shellcheck disable=SC1090
    source "$env_file"
    if alive "${ICETRIM_MOTO_PID:-}" && alive "${ICETRIM_AZURITE_PID:-}" \
      && alive "${ICETRIM_REST_PID:-}"; then
      echo "emulators already running ($env_file)"
      return 0
    fi
    stop >/dev/null
  fi
  for tool in "$moto" "$azurite" "$python"; do
    [ -x "$tool" ] || { echo "missing $tool: run scripts/test-env.sh" >&2; exit 1; }
  done
  mkdir -p "$log_dir"
  local s3_port az_port az_dir moto_pid az_pid
  s3_port=$(free_port)
  az_port=$(free_port)
  az_dir=$(mktemp -d "${TMPDIR:-/tmp}/icetrim-azurite.XXXXXX")

  setsid "$moto" -H 127.0.0.1 -p "$s3_port" >"$log_dir/moto.log" 2>&1 < /dev/null &
  moto_pid=$!
  setsid "$azurite" --blobHost 127.0.0.1 --blobPort "$az_port" --location "$az_dir" \
    --skipApiVersionCheck --silent --disableTelemetry >"$log_dir/azurite.log" 2>&1 < /dev/null &
  az_pid=$!

  local s3_endpoint="http://127.0.0.1:$s3_port"
  local az_endpoint="http://127.0.0.1:$az_port/devstoreaccount1"
  cat >"$env_file" <<EOF
export ICETRIM_S3_ENDPOINT=$s3_endpoint
export ICETRIM_S3_BUCKET=$bucket
export ICETRIM_AZURE_ENDPOINT=$az_endpoint
export ICETRIM_AZURE_CONTAINER=$container
export ICETRIM_MOTO_PID=$moto_pid
export ICETRIM_AZURITE_PID=$az_pid
export ICETRIM_AZURITE_DIR=$az_dir
EOF

  if ! wait_http "$s3_endpoint/" "$moto_pid" || ! wait_http "$az_endpoint?comp=list" "$az_pid"; then
    stop >/dev/null
    exit 1
  fi
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' -X PUT "$s3_endpoint/$bucket")
  if [ "$code" != "200" ]; then
    echo "creating S3 bucket $bucket failed: HTTP $code" >&2
    stop >/dev/null
    exit 1
  fi
  if ! "$python" - "$az_endpoint" "$container" <<'PY'
import sys
from azure.core.exceptions import ResourceExistsError
from azure.storage.blob import BlobServiceClient

endpoint, container = sys.argv[1], sys.argv[2]
key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
conn = (
    "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;"
    f"AccountKey={key};BlobEndpoint={endpoint};"
)
try:
    BlobServiceClient.from_connection_string(conn).create_container(container)
except ResourceExistsError:
    pass
PY
  then
    echo "creating Azure container $container failed" >&2
    stop >/dev/null
    exit 1
  fi
  # The REST catalog front end (after the bucket exists: its warehouse is on moto).
  local rest_port rest_dir rest_pid
  rest_port=$(free_port)
  rest_dir=$(mktemp -d "${TMPDIR:-/tmp}/icetrim-rest.XXXXXX")
  setsid "$python" "$root/tests/rest_catalog/server.py" --port "$rest_port" \
    --db "$rest_dir/catalog.db" --warehouse "s3://$bucket/rest-wh" --s3-endpoint "$s3_endpoint" \
    >"$log_dir/rest.log" 2>&1 < /dev/null &
  rest_pid=$!
  cat >>"$env_file" <<EOF
export ICETRIM_REST_URI=http://127.0.0.1:$rest_port
export ICETRIM_REST_PID=$rest_pid
export ICETRIM_REST_DIR=$rest_dir
EOF
  if ! wait_http "http://127.0.0.1:$rest_port/v1/config" "$rest_pid"; then
    stop >/dev/null
    exit 1
  fi
  echo "emulators running: S3 $s3_endpoint, Azure $az_endpoint, REST catalog http://127.0.0.1:$rest_port ($env_file)"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
