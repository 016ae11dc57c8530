#!/usr/bin/env bash
# Issue 19's targets in one aobj-bench command, run three times, judged by the median of the
# ratios taken inside each run (tools/bench/verdicts.py), with the plot of the last run:
#   small requests (4 KiB GET and PUT p50, GET at 16 in flight) against nginx (curl and wrk),
#   batches of 256 reads against single GETs, 64 MiB GET and opaque-ETag PUT against raw UCX
#   (and, for context, against raw UCX with the checksums AOBJ requires: "ucx-verified"),
#   8 client processes against one, and the sweep 4 KiB - 256 MiB against nginx and raw UCX.
# Usage: bash scripts/bench-targets.sh [OUTDIR] [-- more aobj-bench flags]
#   e.g. bash scripts/bench-targets.sh /tmp/t -- --server-args "--data-isolation none"
# About 3 minutes a run on the 2-core reference machine; run it on a quiet machine. Needs what
# `bash scripts/install-deps.sh` installs (nginx-light, wrk) and a build (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-bench-targets}"
shift || true
[ "${1:-}" = "--" ] && shift
mkdir -p "$OUT"
B=./build/aobj-bench
[ -x "$B" ] || { echo "bench-targets: no $B; run bash scripts/build.sh first" >&2; exit 2; }
export UCX_NET_DEVICES="${UCX_NET_DEVICES:-lo}"
for i in 1 2 3; do
  echo "bench-targets: run $i of 3 -> $OUT/run-$i.{json,txt,svg}" >&2
  $B --sizes 4K,64K,1M,16M,64M,256M --ops get,put --etags md5,opaque --processes 1,8 \
     --compare ucx,nginx --ucx-verified --duration 0.4 --small-duration 1 --idle-seconds 0 \
     --json "$OUT/run-$i.json" --svg "$OUT/run-$i.svg" "$@" >"$OUT/run-$i.txt" 2>&1
done
python3 tools/bench/verdicts.py "$OUT"/run-1.json "$OUT"/run-2.json "$OUT"/run-3.json \
  | tee "$OUT/verdicts.md"
