#!/usr/bin/env bash
# Packs the built aobj-bench, aobj-server, aobj-data-worker and integration tests, with the
# Debian libraries they load (UCX and its transport modules, gRPC, protobuf, Abseil, librados...;
# not glibc or libstdc++), into one archive, so that scripts/gpu-check.sh can run on a GPU host
# that has a CUDA driver but not this project's Debian 12 packages (docs/benchmarks.md 12.12
# ran so on Ubuntu 24.04).
#
# Usage: scripts/gpu-bundle.sh [ARCHIVE]   (default ./gpu-bundle.tar.xz; needs bash scripts/build.sh)
# On the GPU host, from a checkout of the same commit:
#   mkdir /tmp/g && tar -xJf gpu-bundle.tar.xz -C /tmp/g
#   LD_LIBRARY_PATH=/tmp/g/lib:/usr/local/cuda/lib64 UCX_MODULE_DIR=/tmp/g/lib/ucx \
#   AOBJ_BIN=/tmp/g/bin AOBJ_TESTS=/tmp/g/bin/integration_tests bash scripts/gpu-check.sh OUT
# The integration tests look for aobj-server at the path it had when they were built
# ($PWD/build/aobj-server here): link /tmp/g/bin/aobj-server there. The host needs glibc 2.36 or
# newer and a libstdc++ with GLIBCXX_3.4.30 (the archive carries Debian's in lib/fallback: add
# that folder to LD_LIBRARY_PATH where the host's is older).
set -euo pipefail
cd "$(dirname "$0")/.."
ARCHIVE="$(realpath -m "${1:-gpu-bundle.tar.xz}")"
STAGE="$(mktemp -d)"
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/bin" "$STAGE/lib/ucx" "$STAGE/lib/fallback"
for b in build/aobj-bench build/aobj-server build/aobj-data-worker build/tests/integration_tests; do
  [ -x "$b" ] || { echo "gpu-bundle: $b is missing; run bash scripts/build.sh" >&2; exit 1; }
  strip --strip-debug -o "$STAGE/bin/$(basename "$b")" "$b"
done
UCX_MODULES=/usr/lib/x86_64-linux-gnu/ucx
cp -L "$UCX_MODULES"/*.so* "$STAGE/lib/ucx/"
# Every library the binaries and the UCX modules load, but the C and C++ runtimes.
for f in "$STAGE"/bin/* "$STAGE"/lib/ucx/*; do ldd "$f"; done |
  awk '/=>/ && $3 ~ /^\// {print $3}' | sort -u |
  grep -v -E '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so' |
  while read -r lib; do cp -L "$lib" "$STAGE/lib/"; done
cp -L /usr/lib/x86_64-linux-gnu/libstdc++.so.6 /usr/lib/x86_64-linux-gnu/libgcc_s.so.1 \
  "$STAGE/lib/fallback/"
tar -C "$STAGE" -cf - bin lib | xz -T0 -6 >"$ARCHIVE"
echo "gpu-bundle: $ARCHIVE ($(du -h "$ARCHIVE" | cut -f1))"
