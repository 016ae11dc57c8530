#!/usr/bin/env bash
# A real single-host Ceph cluster from Debian's packages, for RadosStore's tests and for trying
# `aobj-server --store rados` (issue 20; docs/deploy-cluster.md).
#
#   scripts/ceph-cluster.sh start DIR [--osds N] [--objectstore memstore|filestore]
#   scripts/ceph-cluster.sh stop DIR
#   scripts/ceph-cluster.sh status DIR
#
# `start` makes DIR (which must not hold a running cluster), writes DIR/ceph.conf, starts one
# monitor on 127.0.0.1 (a free port) and N OSDs (default 1) on memstore (default; lost when they
# stop) or filestore in DIR, creates the pool `aobj` (size 1) and prints the config path. It
# takes a few seconds. Every daemon is a plain process whose pid file lies in DIR; `stop` ends
# them (SIGTERM, then SIGKILL after 10 s) and removes nothing else, so the logs in DIR/log stay.
# Authentication is off (`auth * required = none`): this cluster is for tests on loopback only.
#
# Then: CEPH_CONF=DIR/ceph.conf rados -p aobj ls
#       aobj-server --store rados --rados-conf DIR/ceph.conf --rados-pool aobj
set -euo pipefail

usage() {
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
}

[ $# -ge 2 ] || usage
cmd="$1"
dir="$2"
shift 2
osds=1
objectstore=memstore
while [ $# -gt 0 ]; do
  case "$1" in
    --osds) osds="$2"; shift 2 ;;
    --objectstore) objectstore="$2"; shift 2 ;;
    *) echo "ceph-cluster: unknown option $1" >&2; usage ;;
  esac
done

pids() {
  cat "$dir"/run/*.pid 2>/dev/null || true
}

stop_cluster() {
  local p left
  for p in $(pids); do kill -TERM "$p" 2>/dev/null || true; done
  for _ in $(seq 100); do
    left=0
    for p in $(pids); do if kill -0 "$p" 2>/dev/null; then left=1; fi; done
    [ "$left" -eq 0 ] && break
    sleep 0.1
  done
  for p in $(pids); do kill -KILL "$p" 2>/dev/null || true; done
  rm -f "$dir"/run/*.pid
}

need() {
  if ! command -v "$1" >/dev/null 2>&1; then
    echo "ceph-cluster: $1 not found; run scripts/install-deps.sh (it installs ceph-mon," \
      "ceph-osd, ceph-common and librados-dev)" >&2
    exit 1
  fi
}

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

case "$cmd" in
  stop)
    stop_cluster
    echo "ceph-cluster: stopped $dir"
    exit 0
    ;;
  status)
    export CEPH_CONF="$dir/ceph.conf"
    exec timeout 20 ceph -s
    ;;
  start) ;;
  *) usage ;;
esac

need ceph-mon; need ceph-osd; need monmaptool; need ceph
for p in $(pids); do
  if kill -0 "$p" 2>/dev/null; then
    echo "ceph-cluster: $dir already holds a running cluster (pid $p); stop it first" >&2
    exit 1
  fi
done

mkdir -p "$dir"
dir="$(cd "$dir" && pwd)"
rm -rf "$dir/mon" "$dir/osd" "$dir/run" "$dir/log"
mkdir -p "$dir/mon" "$dir/osd" "$dir/run" "$dir/log"
fsid="$(cat /proc/sys/kernel/random/uuid)"
port="$(free_port)"
conf="$dir/ceph.conf"
cat > "$conf" <<EOF
[global]
fsid = $fsid
mon host = v2:127.0.0.1:$port
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv6 = false
ms bind msgr1 = false
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
osd objectstore = $objectstore
memstore device bytes = 8589934592
osd data = $dir/osd/\$id
osd journal = $dir/osd/\$id/journal
mon data = $dir/mon/\$name
run dir = $dir/run
pid file = $dir/run/\$name.pid
admin socket = $dir/run/\$name.asok
log file = $dir/log/\$name.log
keyring = $dir/keyring
crash dir = $dir/crash
erasure code dir = /usr/lib/x86_64-linux-gnu/ceph/erasure-code
osd class dir = /usr/lib/x86_64-linux-gnu/rados-classes
osd max object name len = 2048
osd max object namespace len = 256
osd op threads = 2
mon warn on insecure global id reclaim = false
mon warn on insecure global id reclaim allowed = false

[client]
# Clients (gateways, the rados tool) are many processes of one name: a socket of their own each.
admin socket = $dir/run/\$name.\$pid.asok
EOF

export CEPH_CONF="$conf"
monmaptool --create --clobber --fsid "$fsid" --addv a "[v2:127.0.0.1:$port]" "$dir/monmap" >/dev/null
ceph-mon --mkfs -i a --monmap "$dir/monmap" -c "$conf" >/dev/null
ceph-mon -i a -c "$conf" 2>>"$dir/log/startup.log"
trap 'stop_cluster' ERR

for i in $(seq 0 $((osds - 1))); do
  id="$(timeout 30 ceph osd create)"
  mkdir -p "$dir/osd/$id"
  ceph-osd -i "$id" --mkfs -c "$conf" >/dev/null 2>&1
  ceph-osd -i "$id" -c "$conf" 2>>"$dir/log/startup.log"
done

# Wait until every OSD is up, then make the pool.
for _ in $(seq 300); do
  up="$(timeout 10 ceph osd stat -f json 2>/dev/null |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin).get("num_up_osds", 0))' 2>/dev/null || echo 0)"
  [ "$up" = "$osds" ] && break
  sleep 0.1
done
if [ "$up" != "$osds" ]; then
  echo "ceph-cluster: only $up of $osds OSDs came up; see $dir/log" >&2
  stop_cluster
  exit 1
fi
timeout 30 ceph osd pool create aobj 8 >/dev/null 2>&1
timeout 30 ceph osd pool application enable aobj aobj >/dev/null 2>&1 || true
echo "$conf"
