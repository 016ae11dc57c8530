#!/usr/bin/env bash
# CUDA device memory on a real GPU (docs/benchmarks.md section 12.12): the DeviceStager tests
# against real device memory, then aobj-bench GET and PUT into device memory next to host memory
# in the same run (three runs; opaque ETags cover the stager's parts too since OPAQUE_PART_ETAG,
# AOBJ-OBJ-254), device PUTs with 256 MiB chunks (one PutObject per object), and 64 MiB GETs from
# 1 and 8 client processes against 1 and 4 data workers (AOBJ_GPU_PROCS=0 leaves that out).
#
# Usage: scripts/gpu-check.sh [OUTDIR]   (default ./gpu-results)
# On a host without this project's Debian packages, run it from scripts/gpu-bundle.sh's archive.
# Needs a built tree (bash scripts/build.sh), a CUDA driver and device, and libcudart (the CUDA
# toolkit's or any other: DeviceStager loads it with dlopen). Environment, all optional:
#   AOBJ_BIN    folder holding aobj-bench and aobj-server (default ./build)
#   AOBJ_TESTS  the integration test binary (default ./build/tests/integration_tests)
#   AOBJ_GPU_PROCS=0  skip the 8-process GET run
# Everything runs on 127.0.0.1 with UCX_NET_DEVICES=lo. Takes about 3 minutes.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-gpu-results}"
BIN="${AOBJ_BIN:-./build}"
TESTS="${AOBJ_TESTS:-./build/tests/integration_tests}"
export UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n
mkdir -p "$OUT"
rc=0
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || echo "no nvidia-smi"
  nproc
  head -5 /etc/os-release
} >"$OUT/bench.log" 2>&1

# The tests: the stager's logic with a thread copier, and a round trip through real device
# memory (CudaDeviceTest skips where no CUDA runtime or device is present; here it must run).
timeout 240 "$TESTS" --gtest_filter='DeviceStaging*:CudaDevice*' >"$OUT/tests.log" 2>&1 || rc=1
if grep -q "SKIPPED" "$OUT/tests.log"; then
  echo "gpu-check: a CUDA test skipped: no usable device" >>"$OUT/tests.log"
  rc=1
fi

# Host memory (library buffers) against device memory (DeviceStager, 16 MiB chunks, depth 4),
# with S3 (MD5) ETags and opaque ones (AOBJ-OBJ-016; a multipart upload still hashes its parts).
for i in 1 2 3; do
  timeout 150 "$BIN/aobj-bench" --sizes 1M,16M,64M,256M --buffers library,device --etags md5,opaque \
    --compare ucx --small-duration 0 --idle-seconds 0 --json "$OUT/bench-$i.json" \
    >>"$OUT/bench.log" 2>&1 || rc=1
done
# Device PUTs with 256 MiB chunks (one PutObject per object up to 256 MiB), against the parts of
# the default stager in the runs above.
for v in "chunk-256M --device-chunk 256M --device-depth 2"; do
  set -- $v
  timeout 100 "$BIN/aobj-bench" --sizes 64M,256M --ops put --buffers library,device --etags opaque \
    "${@:2}" --compare none --small-duration 0 --idle-seconds 0 \
    --json "$OUT/$1.json" >>"$OUT/bench.log" 2>&1 || rc=1
done
# The server's cores: 8 client processes against one, 64 MiB GETs, with one data worker and with
# four (--data-workers; the default is one per 4 cores, at least 2).
if [ "${AOBJ_GPU_PROCS:-1}" != 0 ]; then
  for w in 1 4; do
    timeout 120 "$BIN/aobj-bench" --sizes 64M --ops get --processes 1,8 --compare ucx \
      --server-args "--data-workers $w" --small-duration 0 --idle-seconds 0 \
      --json "$OUT/procs-w$w.json" >>"$OUT/bench.log" 2>&1 || rc=1
  done
fi
exit $rc
