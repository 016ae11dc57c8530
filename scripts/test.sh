#!/usr/bin/env bash
# One command from a fresh Debian 12 machine: install the dependencies, build, run every test.
# Tests use 127.0.0.1 and UCX_NET_DEVICES=lo only.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
export UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n
ctest --test-dir build --output-on-failure -j2 --timeout 600
