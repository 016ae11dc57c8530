#!/usr/bin/env bash
# aobj-bench against one and against three aobj-server gateways over the same single-host Ceph
# cluster (issue 20; docs/benchmarks.md, "Gateways over a Ceph cluster"). Starts the cluster with
# scripts/ceph-cluster.sh, three gateways with --store rados, runs aobj-bench twice (client
# process i uses gateway i % count), prints both tables and stops everything.
#
#   scripts/bench-gateways.sh [OUT_DIR]        (default /tmp/aobj-bench-gateways)
#   environment: SIZES (default 4K,64M), PROCS (client processes, default 8), OSDS (default 1),
#                DURATION (seconds per cell, default 1)
# The gateways collect replaced versions after 5 s (--rados-gc-grace-ms): every PUT cell
# overwrites its keys, and the memstore OSD holds what is not collected.
set -euo pipefail
cd "$(dirname "$0")/.."
out="${1:-/tmp/aobj-bench-gateways}"
mkdir -p "$out"
export UCX_NET_DEVICES=lo UCX_WARN_UNUSED_ENV_VARS=n
[ -x build/aobj-server ] && [ -x build/aobj-bench ] || { echo "build first: bash scripts/build.sh" >&2; exit 1; }
dir="$(mktemp -d /tmp/aobj-gwbench-XXXXXX)"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  bash scripts/ceph-cluster.sh stop "$dir/ceph" >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT

conf="$(bash scripts/ceph-cluster.sh start "$dir/ceph" --osds "${OSDS:-1}")"
creds="$dir/credentials"
printf 'AKBENCH bench-secret-%s%s\n' "$RANDOM" "$RANDOM" > "$creds"
chmod 600 "$creds"
endpoints=()
for i in 1 2 3; do
  build/aobj-server --plaintext --listen 127.0.0.1:0 --port-file "$dir/port$i" \
    --credentials "$creds" --store rados --rados-conf "$conf" --create-bucket bench \
    --data-isolation none --rados-gc-grace-ms 5000 --quiet > "$dir/gateway$i.log" 2>&1 &
  pids+=("$!")
done
for i in 1 2 3; do
  for _ in $(seq 200); do [ -s "$dir/port$i" ] && break; sleep 0.05; done
  [ -s "$dir/port$i" ] || { echo "gateway $i did not start:" >&2; cat "$dir/gateway$i.log" >&2; exit 1; }
  endpoints+=("127.0.0.1:$(cat "$dir/port$i")")
done
common=(--credentials "$creds" --bucket bench --sizes "${SIZES:-4K,64M}" --ops get,put
        --processes "${PROCS:-8}" --threads 1 --duration "${DURATION:-1}" --compare none
        --small-duration 0 --idle-seconds 0)
echo "== one gateway (${endpoints[0]}), ${PROCS:-8} client processes"
build/aobj-bench --endpoint "${endpoints[0]}" "${common[@]}" --json "$out/one-gateway.json"
all="$(IFS=,; echo "${endpoints[*]}")"
echo "== three gateways ($all), ${PROCS:-8} client processes"
build/aobj-bench --endpoint "$all" "${common[@]}" --json "$out/three-gateways.json"
echo "JSON reports: $out/one-gateway.json $out/three-gateways.json"
