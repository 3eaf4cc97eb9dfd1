#!/usr/bin/env bash
# Runs every test of icetrim on a fresh machine: installs the test environment (Python venv with
# pyiceberg, chdb, moto; azurite from npm — all inside the project's ignored folders), starts the S3
# and Azure emulators on loopback, runs `cargo test` for everything, and stops the emulators.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
# The Python packages download while the tests compile (both take minutes on a fresh machine).
cargo test --all-targets --features glue --no-run "$@" &
build=$!
scripts/test-env.sh
wait "$build"
export ICETRIM_PYTHON="$root/.venv/bin/python"
scripts/emulators.sh start
trap 'scripts/emulators.sh stop' EXIT
set -a
# shellcheck disable=SC1091
source target/emulators.env
set +a
# An embedder's build: the library without the command-line crates.
if cargo tree -e normal --no-default-features --features s3 | grep -E '\b(clap|rustyline|terminal_size) v'; then
  echo "the library without the cli feature still depends on the crates above" >&2
  exit 1
fi
cargo check --lib --no-default-features --features s3
# An embedder's build has no Glue SDK either (`glue` is a default feature of the program only).
if cargo tree -e normal --no-default-features --features s3 | grep -E '\baws-sdk-glue v'; then
  echo "the library without default features still depends on the Glue SDK" >&2
  exit 1
fi
if cargo tree -e normal --no-default-features --features s3 | grep -E '\bdatafusion v'; then
  echo "the library without default features still depends on DataFusion" >&2
  exit 1
fi
# `glue` is a default feature; `--features glue` keeps the line working for older checkouts.
cargo test --all-targets --features glue "$@"
cargo test --doc --features glue
