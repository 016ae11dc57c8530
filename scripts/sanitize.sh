#!/usr/bin/env bash
# Builds the unit and integration tests (and the server, CLI and peers they start) with
# AddressSanitizer + UndefinedBehaviorSanitizer into ./build-asan and runs them there (any
# sanitizer report fails the run). The conformance suite, the cluster tests and the tools' and
# documentation's checks run in the normal stage only: each drives code that the unit and
# integration tests here run too, and building and running every target a second time cost CI
# about a third of its time (a CI machine twice as slow as this one's went past the limit).
# Every parser of peer input is also fuzzed under ASan + UBSan (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DAOBJ_SANITIZE=ON >/dev/null
layers="wire store transport session client integration"  # tests/CMakeLists.txt's labels
cmake --build build-asan -j"$(nproc)" --target $(for l in $layers; do echo "${l}_tests"; done)
export UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export AOBJ_SOAK_SECONDS=${AOBJ_SOAK_SECONDS:-8}
# ObjectAboveFourGiBFromOneGiBParts moves 4 GiB through the same multipart code that the other
# multipart tests run here (about 60 s).
# AHandshakeBacklogOfOtherAddressesDoesNotHoldUpAnothersHandshake judges the order in which the
# guard's handshake thread answers 1,200 ClientHellos against one; instrumented, with the other
# test beside it on the 2 cores, that order is the machine's (it failed once here while another
# load ran, and passed alone); the handshake code itself runs under the other TLS tests here.
# CliS3Test runs the CLI against each store; here against the filesystem store only (the CLI's
# code is the same, and the memory store runs instrumented under S3SemanticsTest and the rest),
# which keeps this stage within CI's time.
ctest --test-dir build-asan --output-on-failure --no-tests=error -j2 --timeout 900 \
  -L "^($(echo $layers | tr ' ' '|'))\$" \
  -E '^(.*ObjectAboveFourGiBFromOneGiBParts.*|.*AHandshakeBacklogOfOtherAddressesDoesNotHoldUpAnothersHandshake.*|Stores/CliS3Test\..*"memory")$'
