#!/usr/bin/env bash
# Builds the fuzz targets with clang-14 + libFuzzer + ASan/UBSan into ./build-fuzz, replays every
# corpus, and fuzzes each target for AOBJ_FUZZ_SECONDS (default 20) seconds.
#   bash scripts/fuzz.sh                       # all targets, 20 s each
#   AOBJ_FUZZ_SECONDS=1800 bash scripts/fuzz.sh rkey   # one target, 30 minutes
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1 UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n
SECONDS_PER_TARGET=${AOBJ_FUZZ_SECONDS:-20}
CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DAOBJ_FUZZ=ON -DAOBJ_FUZZ_SECONDS="$SECONDS_PER_TARGET" >/dev/null
targets=$(sed -n 's/^set(AOBJ_FUZZ_TARGETS \(.*\))$/\1/p' fuzz/CMakeLists.txt)
[ $# -gt 0 ] && targets="$*"
cmake --build build-fuzz -j"$(nproc)" --target $(for t in $targets; do echo "${t}_fuzzer"; done)
# No groups in the regex: CMake's regular expressions allow only nine of them.
regex=$(for t in $targets; do printf 'fuzz_replay_%s$|fuzz_run_%s$|' "$t" "$t"; done)
# Each run is time-boxed and single-threaded: they share the cores, one per core.
ctest --test-dir build-fuzz --output-on-failure --no-tests=error -j"$(nproc)" -R "${regex%|}"
