#!/usr/bin/env bash
# Configures and builds aobj into ./build (Release with debug info). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache hits across clones in other directories (CI builds a fresh clone each time).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j"$(nproc)"
if [ -d build/python/aobj ]; then
  echo "build: the Python package is in build/python (PYTHONPATH=$PWD/build/python;" \
       "docs/getting-started/python.md)"
fi
