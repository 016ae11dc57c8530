#!/usr/bin/env bash
# The measurement set of docs/benchmarks.md: builds aobj (RelWithDebInfo) into ./build, runs
# every aobj-bench command of that document and writes their JSON, text and SVG to OUTDIR
# (default ./bench-results), then prints the tables (median, min-max over the repeated runs).
# Takes about 10 minutes on the 2-core reference machine; run it on a quiet machine.
# Needs what `bash scripts/install-deps.sh` installs (nginx-light, wrk, libcurl; moto optional).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-bench-results}"
mkdir -p "$OUT"
bash scripts/build.sh >/dev/null
B=./build/aobj-bench
# R1 (x3): 64 MiB GET and PUT, memory and filesystem stores, MD5 and opaque ETags, every peer.
for i in 1 2 3; do
  $B --sizes 64M --store memory,fs --etags md5,opaque --compare ucx,nginx,moto --count 12 \
     --small-duration 0 --idle-seconds 0 --json "$OUT/r1-$i.json" >"$OUT/r1-$i.txt" 2>&1
done
# R2 (x3): 4 KiB requests at 1 and 16 in flight, the gRPC floor, idle CPU.
for i in 1 2 3; do
  $B --sizes 4K --compare ucx,nginx,moto --duration 1 --small-duration 2 --idle-seconds 5 \
     --json "$OUT/r2-$i.json" >"$OUT/r2-$i.txt" 2>&1
done
# R3 (x2): UCX restricted to TCP.
for i in 1 2; do
  $B --sizes 64M --transports default,tcp --etags md5,opaque --compare ucx,nginx --count 12 \
     --small-duration 0 --idle-seconds 0 --json "$OUT/r3-$i.json" >"$OUT/r3-$i.txt" 2>&1
done
# R4: 8 client processes against one.
$B --sizes 64M --processes 1,8 --etags md5,opaque --compare ucx --count 24 --small-duration 0 \
   --idle-seconds 0 --json "$OUT/r4.json" >"$OUT/r4.txt" 2>&1
# R5: caller-owned buffers.
$B --sizes 1M,64M --buffers library,caller --etags opaque --compare ucx --count 12 \
   --small-duration 0 --idle-seconds 0 --json "$OUT/r5.json" >"$OUT/r5.txt" 2>&1
# R6: CRC-64/NVME end to end.
$B --sizes 64M --checksum crc64nvme --etags opaque --compare ucx,nginx --count 12 \
   --small-duration 0 --idle-seconds 0 --json "$OUT/r6.json" >"$OUT/r6.txt" 2>&1
# R7: the default sweep (4 KiB to 1 GiB) with the plot.
$B --etags md5,opaque --json "$OUT/r7.json" --svg "$OUT/r7.svg" >"$OUT/r7.txt" 2>&1
python3 tools/bench/tables.py "$OUT"
