#!/usr/bin/env bash
# One command from a fresh Debian 12 machine: install the dependencies, build, run every test,
# then the conformance suite against seeded faults (conformance/mutants.py), then the unit and
# integration tests under AddressSanitizer + UndefinedBehaviorSanitizer, then every fuzz
# target (corpus replay plus a short time-boxed run). Tests use 127.0.0.1 and
# UCX_NET_DEVICES=lo only. AOBJ_TEST_QUICK=1 stops after the first stage.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
bash scripts/build.sh
export UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n
# Each stage says how long it took (the whole run should stay under 45 minutes in CI).
stage() { echo "== stage done in $((SECONDS - stage_start)) s (total $SECONDS s): $1"; stage_start=$SECONDS; }
stage_start=0
stage "install and build"
ctest --test-dir build --output-on-failure --no-tests=error -j2 --timeout 600
stage "tests"
[ "${AOBJ_TEST_QUICK:-0}" = 1 ] && exit 0
echo "== conformance mutants: seeded faults in the reference server that the suite must catch"
python3 conformance/mutants.py --suite build/aobj-conformance --open-too
stage "conformance mutants"
echo "== sanitizers: ASan + UBSan build of the unit and integration tests, and their run"
bash scripts/sanitize.sh
stage "sanitizers"
echo "== fuzz targets: libFuzzer build, corpus replay, ${AOBJ_FUZZ_SECONDS:-20} s per target"
bash scripts/fuzz.sh
stage "fuzz targets"
