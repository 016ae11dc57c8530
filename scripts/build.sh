#!/usr/bin/env bash
# Configures and builds aobj into ./build (Release with debug info). Extra arguments go to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
# ccache hits across clones in other directories (CI builds a fresh clone each time).
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build build -j"$(nproc)"
if [ -d build/python/aobj ]; then
  # Make the package importable by Debian's python3 from the build, as `pip install -e` would:
  # a .pth file naming build/python in its site directory (AOBJ_NO_PTH=1: leave it alone).
  site=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null || true)
  if [ -z "${AOBJ_NO_PTH:-}" ] && [ -n "$site" ] && mkdir -p "$site" 2>/dev/null &&
     printf '%s\n' "$PWD/build/python" > "$site/aobj-build.pth" 2>/dev/null; then
    echo "build: python3 imports aobj from $PWD/build/python ($site/aobj-build.pth;" \
         "docs/getting-started/python.md)"
  else
    echo "build: the Python package is in build/python (PYTHONPATH=$PWD/build/python;" \
         "docs/getting-started/python.md)"
  fi
fi
