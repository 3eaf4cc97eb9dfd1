#!/usr/bin/env bash
# The test REST catalog (tests/rest_catalog/server.py: pyiceberg's SqlCatalog behind the Iceberg
# REST routes) alone, on loopback, for tables on local disk: a way to try icetrim's catalog
# databases without object storage (README.md's tour). Needs the project's .venv
# (scripts/test-env.sh installs it).
#
#   scripts/rest-catalog.sh start DIR                          # state in DIR; prints the URL (also DIR/url)
#   scripts/rest-catalog.sh register DIR WAREHOUSE NS.TABLE TABLE_FOLDER
#                                                            # registers the folder's newest metadata
#   scripts/rest-catalog.sh stop DIR
set -euo pipefail
shopt -s inherit_errexit
root=$(cd "$(dirname "$0")/.." && pwd)
python=${ICETRIM_PYTHON:-$root/.venv/bin/python}
usage="usage: scripts/rest-catalog.sh start DIR | register DIR WAREHOUSE NS.TABLE TABLE_FOLDER | stop DIR"

start() {
  local dir=$1 port
  mkdir -p "$dir"
  if [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    cat "$dir/url"
    return
  fi
  port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # Nothing is vended and nothing is read from S3: the endpoint is never contacted.
  setsid "$python" "$root/tests/rest_catalog/server.py" --port "$port" --db "$dir/catalog.db" \
    --warehouse "file://$dir/warehouse" --s3-endpoint "http://127.0.0.1:9" \
    >"$dir/server.log" 2>&1 </dev/null &
  echo $! >"$dir/pid"
  for _ in $(seq 1 100); do
    if curl -sf "http://127.0.0.1:$port/v1/config" >/dev/null; then
      echo "http://127.0.0.1:$port" | tee "$dir/url"
      return
    fi
    sleep 0.1
  done
  echo "the REST catalog did not start; see $dir/server.log" >&2
  exit 1
}

register() {
  local dir=$1 warehouse=$2 name=$3 folder=$4 url
  url=$(cat "$dir/url")
  "$python" - "$url" "$warehouse" "$name" "$folder" <<'PY'
import json, pathlib, re, sys, urllib.request

url, warehouse, name, folder = sys.argv[1:]
namespace, _, table = name.rpartition(".")
if not namespace:
    sys.exit(f"name the table as NAMESPACE.TABLE, not {name!r}")

def version(p):
    m = re.match(r"^v?(\d+)(-[0-9a-f-]+)?\.metadata\.json$", p.name)
    return int(m.group(1)) if m else -1

files = [p for p in pathlib.Path(folder, "metadata").iterdir() if version(p) >= 0]
if not files:
    sys.exit(f"no metadata file in {folder}/metadata")
newest = max(files, key=version).resolve()

def post(path, body):
    request = urllib.request.Request(
        f"{url}/admin/{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    urllib.request.urlopen(request).read()

post("warehouse", {"name": warehouse})
post("register", {"warehouse": warehouse, "namespace": namespace.split("."), "name": table,
                  "metadata_location": f"file://{newest}"})
print(f"{name} -> file://{newest}")
PY
}

stop() {
  local dir=$1
  if [ -f "$dir/pid" ]; then
    kill "$(cat "$dir/pid")" 2>/dev/null || true
    rm -f "$dir/pid"
  fi
}

case "${1:-}" in
  start) start "${2:?$usage}" ;;
  register) register "${2:?$usage}" "${3:?$usage}" "${4:?$usage}" "${5:?$usage}" ;;
  stop) stop "${2:?$usage}" ;;
  *) echo "$usage" >&2; exit 2 ;;
esac
