#!/usr/bin/env bash
# The Python epoch benchmark (docs/benchmarks.md section 13): a PyTorch DataLoader over 10,000
# small objects and over 64 large ones, through aobj and through nginx + requests, on 127.0.0.1.
# Needs `bash scripts/build.sh` first. Extra arguments go to tools/bench/python_epoch.py
# (--help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
export UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n PYTHONPATH="$PWD/build/python"
exec /usr/bin/python3 tools/bench/python_epoch.py --build build "$@"
