#!/usr/bin/env bash
# What confining the data channel costs (spec AOBJ-SEC-021, docs/benchmarks.md 12.7): the same
# aobj-bench cells against two aobj-servers on 127.0.0.1, one with `--data-isolation process`
# (the default: each access key's UCX workers in an aobj-data-worker process, the octets copied
# through a shared buffer) and one with `--data-isolation none`, alternating ROUNDS times so that
# both see the same machine; prints each cell's median per mode and their ratio.
#
#   bash scripts/bench-confinement.sh [SIZES] [ROUNDS] [STORE]   (4K,1M,64M 3 memory)
set -euo pipefail
sizes=${1:-4K,1M,64M} rounds=${2:-3} store=${3:-memory}
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$root/build
work=$(mktemp -d /tmp/aobj-bench-confine.XXXXXX)
pids=()
trap 'for p in "${pids[@]}"; do kill $p 2>/dev/null; wait $p 2>/dev/null; done; rm -rf "$work"' EXIT
export UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n
printf 'AKBENCH %s\n' "$(head -c 18 /dev/urandom | base64 | tr '/+' 'ab')" > "$work/creds"
chmod 600 "$work/creds"
for mode in process none; do
  "$bin/aobj-server" --listen 127.0.0.1:0 --port-file "$work/port-$mode" \
    --credentials "$work/creds" --store "$store" --root "$work/data-$mode" --plaintext \
    --create-bucket bench --data-isolation "$mode" --quiet > "$work/server-$mode.log" 2>&1 &
  pids+=($!)
  for _ in $(seq 100); do [ -s "$work/port-$mode" ] && break; sleep 0.1; done
done
for r in $(seq "$rounds"); do
  for mode in process none; do
    "$bin/aobj-bench" --endpoint "127.0.0.1:$(cat "$work/port-$mode")" --credentials "$work/creds" \
      --bucket bench --sizes "$sizes" --compare none --small-duration 0 --idle-seconds 0 \
      --json "$work/$mode-$r.json" > "$work/$mode-$r.txt" 2>&1
  done
done
python3 - "$work" "$rounds" <<'EOF'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
cells = {}
for mode in ("process", "none"):
    for r in range(1, rounds + 1):
        for row in json.load(open(f"{work}/{mode}-{r}.json"))["results"]:
            if not row["system"].startswith("aobj"):
                continue
            key = (row["op"], row["size"])
            cells.setdefault(key, {}).setdefault(mode, []).append(
                (row["gbps"], row["latency_us"]["p50"]))
print(f"{'op':4} {'size':>10} {'process GB/s':>13} {'none GB/s':>10} {'ratio':>6}"
      f" {'process p50 us':>15} {'none p50 us':>12}")
for (op, size), by in sorted(cells.items()):
    p = statistics.median(g for g, _ in by["process"])
    n = statistics.median(g for g, _ in by["none"])
    pl = statistics.median(l for _, l in by["process"])
    nl = statistics.median(l for _, l in by["none"])
    print(f"{op:4} {size:>10} {p:13.3f} {n:10.3f} {p / n:6.2f} {pl:15.0f} {nl:12.0f}")
EOF
