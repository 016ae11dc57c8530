#!/usr/bin/env bash
# Recursive copies of many small files with the aobj CLI, one file at a time (--jobs 1, what
# `cp --recursive` did before issue 23) against the default (the session's max_in_flight at once),
# uploads and downloads, against a real aobj-server on 127.0.0.1. Prints the median of each and
# the ratio, taken in one run (docs/benchmarks.md).
#
#   bash scripts/bench-cli-recursive.sh [FILES] [BYTES] [ROUNDS] [STORE]   (1000 4096 3 fs)
#
# Uploads and downloads are also timed with --no-batch (one PUT or GET per file instead of
# PutObjects and GetObjects batches of small files, spec 9.16 and 9.17).
#
# With AOBJ_BENCH_BASELINE_CLI=PATH (an aobj CLI built from an older commit), that CLI's default
# `cp --recursive` is timed in the same rounds too, against the same server.
set -euo pipefail
files=${1:-1000} bytes=${2:-4096} rounds=${3:-3} store=${4:-fs}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build
work=$(mktemp -d /tmp/aobj-bench-cli.XXXXXX)
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$work"' EXIT
export UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n
printf 'AKBENCH %s\n' "$(head -c 18 /dev/urandom | base64 | tr '/+' 'ab')" > "$work/creds"
chmod 600 "$work/creds"
"$bin/aobj-server" --listen 127.0.0.1:0 --port-file "$work/port" --credentials "$work/creds" \
  --store "$store" --root "$work/data" --plaintext --create-bucket bench > "$work/server.log" 2>&1 &
server=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
cli=$bin/aobj
aobj() { "$cli" --endpoint "127.0.0.1:$(cat "$work/port")" --credentials "$work/creds" \
  --quiet --no-progress "$@"; }
baseline=${AOBJ_BENCH_BASELINE_CLI:-}
mkdir -p "$work/src"
python3 - "$work/src" "$files" "$bytes" <<'EOF'
import os, sys
d, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for i in range(n):
    sub = os.path.join(d, "d%02d" % (i % 20))
    os.makedirs(sub, exist_ok=True)
    with open(os.path.join(sub, "f%05d" % i), "wb") as f:
        f.write(os.urandom(size))
EOF
seconds() { local t0=$EPOCHREALTIME; "$@"; awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN {print b - a}'; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
declare -A up down
for r in $(seq "$rounds"); do
  for jobs in 1 0 n b; do  # 0: the default; n: the default with --no-batch; b: the baseline's
    flag=(); [ "$jobs" = 1 ] && flag=(--jobs 1)
    [ "$jobs" = n ] && flag=(--no-batch)
    cli=$bin/aobj
    if [ "$jobs" = b ]; then [ -n "$baseline" ] || continue; cli=$baseline; fi
    up[$jobs]+="$(seconds aobj cp --recursive "${flag[@]}" "$work/src" "aobj://bench/r$r-j$jobs/") "
    # A fresh directory each time, nothing deleted until the end: ext4 searches longer for free
    # inodes right after many were freed, which made downloads after an `rm -rf` vary 3-fold.
    down[$jobs]+="$(seconds aobj cp --recursive "${flag[@]}" "aobj://bench/r$r-j$jobs/" "$work/down-r$r-j$jobs") "
  done
done
u1=$(median ${up[1]}) u0=$(median ${up[0]}) d1=$(median ${down[1]}) d0=$(median ${down[0]})
printf 'files=%s bytes=%s rounds=%s store=%s cores=%s\n' "$files" "$bytes" "$rounds" "$store" "$(nproc)"
report() {
  awk -v what="$1" -v n="$files" -v one="$2" -v all="$3" 'BEGIN {
    printf "%-8s --jobs 1: %.2f s (%.0f files/s)   default: %.2f s (%.0f files/s)   %.1fx\n",
           what, one, n / one, all, n / all, one / all }'
}
report upload "$u1" "$u0"
report download "$d1" "$d0"
dn=$(median ${down[n]}) un=$(median ${up[n]})
awk -v n="$files" -v un="$un" -v u0="$u0" 'BEGIN {
  printf "upload --no-batch: %.2f s (%.0f files/s); batched (the default) %.1fx that\n", un, n / un, un / u0 }'
awk -v n="$files" -v dn="$dn" -v d0="$d0" 'BEGIN {
  printf "download --no-batch: %.2f s (%.0f files/s); batched (the default) %.1fx that\n", dn, n / dn, dn / d0 }'
if [ -n "$baseline" ]; then
  ub=$(median ${up[b]}) db=$(median ${down[b]})
  awk -v n="$files" -v ub="$ub" -v db="$db" -v u0="$u0" -v d0="$d0" -v cli="$baseline" 'BEGIN {
    printf "baseline %s: upload %.2f s (%.0f files/s), download %.2f s (%.0f files/s); the default is %.1fx and %.1fx that\n",
           cli, ub, n / ub, db, n / db, ub / u0, db / d0 }'
fi
