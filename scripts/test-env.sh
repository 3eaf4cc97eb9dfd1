#!/usr/bin/env bash
# Installs what the tests need beside cargo, idempotently, inside the project's ignored folders:
#   .venv/            Python virtual environment: pyiceberg (sqlite catalog, pyarrow; pyiceberg-core for
#                     writing bucket/truncate partitions), chdb, moto[server],
#                     azure-storage-blob
#   .cache/node/      the azurite Azure Storage emulator (npm)
#   .cache/pip/       pip's download cache
# and tmux (apt) for the interactive shell's tests (tests/cli/cli_tty.rs).
# Prints nothing on success but the final line "test env ready".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
export PIP_CACHE_DIR="$root/.cache/pip"
export PIP_DISABLE_PIP_VERSION_CHECK=1
stamp=.venv/.icetrim-ready-4
if [ ! -f "$stamp" ]; then
  python3 -m venv .venv
  .venv/bin/pip install -q \
    'pyiceberg[sql-sqlite,pyarrow]==0.12.0' 'pyiceberg-core==0.10.*' \
    'chdb==4.4.0' 'chdb-core==26.9.0' \
    'moto[server]' 'azure-storage-blob' 'fastavro==1.13.*'
  touch "$stamp"
fi
if [ ! -x .cache/node/node_modules/.bin/azurite-blob ]; then
  mkdir -p .cache/node
  (cd .cache/node && npm install --silent --no-audit --no-fund azurite >/dev/null)
fi
if ! command -v tmux >/dev/null; then
  (apt-get update -qq && apt-get install -y -qq tmux) >/dev/null
fi
echo "test env ready"
