#!/usr/bin/env bash
# aobj-bench against one and against three aobj-server gateways over the same single-host Ceph
# cluster (issue 20; docs/benchmarks.md, "Gateways over a Ceph cluster"), and one gateway against
# Ceph's own S3 gateway (radosgw) on the same cluster. Starts the cluster with
# scripts/ceph-cluster.sh, three gateways with --store rados and radosgw, runs aobj-bench three
# times (client process i uses gateway i % count), prints the tables and stops everything.
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
  [ -f "$dir/rgw.pid" ] && kill "$(cat "$dir/rgw.pid")" 2>/dev/null || true
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

# radosgw on the same pool's cluster, with the keys aobj-bench's S3 client signs with. Its
# messenger must not ask for "secure" mode, which needs cephx (the test cluster has none).
if command -v radosgw >/dev/null; then
  export CEPH_CONF="$conf"
  timeout 60 radosgw-admin user create --uid bench --display-name bench \
    --access-key benchkey --secret benchsecret > "$dir/rgw-user.log" 2>&1
  rgw_port="$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  mkdir -p "$dir/rgw"
  radosgw -n client.admin -c "$conf" --setuser root --setgroup root \
    --ms-mon-client-mode crc --ms-client-mode crc --ms-service-mode crc \
    --ms-mon-service-mode crc --rgw-frontends "beast endpoint=127.0.0.1:$rgw_port" \
    --rgw-data "$dir/rgw" --pid-file "$dir/rgw.pid" --log-file "$dir/rgw/rgw.log" \
    --admin-socket "$dir/rgw/rgw.asok"
  for _ in $(seq 300); do
    curl -s -o /dev/null "http://127.0.0.1:$rgw_port/" && break
    sleep 0.1
  done
  echo "== one gateway against radosgw (127.0.0.1:$rgw_port), one process, ${PROCS:-8} in flight"
  build/aobj-bench --endpoint "${endpoints[0]}" --credentials "$creds" --bucket bench \
    --sizes "${SIZES:-4K,64M}" --ops get,put --processes 1 --threads "${PROCS:-8}" \
    --duration "${DURATION:-1}" --compare moto --s3-endpoint "127.0.0.1:$rgw_port" \
    --s3-name radosgw --small-duration 0 --idle-seconds 0 --json "$out/radosgw.json"
else
  echo "radosgw not installed (apt-get install radosgw): no comparison with Ceph's S3 gateway"
fi
echo "JSON reports in $out"
