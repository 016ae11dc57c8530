#!/usr/bin/env bash
# Runs the server suite against the reference server on 127.0.0.1, as CI does:
#   conformance/run-reference-server.sh AOBJ_SERVER AOBJ_CONFORMANCE STORE OUTDIR [suite flags...]
# STORE is memory or fs. Reports (JUnit, JSON, HTML) and the server log go to OUTDIR.
# The server runs with a 2 s lease (so the lease cases run), a 1.5 s RMA bound (so dat/13.7/1 is
# quick), a 2 s bound on receiving a request message (so sec/14.6/2 is quick), 1 KiB minimum part
# size (so ENTITY_TOO_SMALL can be provoked cheaply), two principals, and the owner authorization
# policy (AOBJ_CONF_AUTHORIZATION=open for the open one), which the suite learns by itself.
# AOBJ_CONF_SERVER_FLAGS adds flags to the server's command line (e.g. --data-isolation none).
set -uo pipefail
server=$1 suite=$2 store=$3 out=$4
shift 4
authz=${AOBJ_CONF_AUTHORIZATION:-owner}
rm -rf "$out" && mkdir -p "$out"
export UCX_NET_DEVICES=${UCX_NET_DEVICES:-lo} UCX_WARN_UNUSED_ENV_VARS=n
printf 'AKCONFORMANCE1 %s\nAKCONFORMANCE2 %s\n' "$(head -c 18 /dev/urandom | base64 | tr '/+' 'ab')" \
  "$(head -c 18 /dev/urandom | base64 | tr '/+' 'ab')" > "$out/credentials"
chmod 600 "$out/credentials"
"$server" --listen 127.0.0.1:0 --port-file "$out/port" --credentials "$out/credentials" \
  --store "$store" --root "$out/data" --plaintext --lease-ms 2000 --data-wait-ms 1500 --min-part-size 1024 \
  --request-read-ms 2000 --authorization "$authz" ${AOBJ_CONF_SERVER_FLAGS:-} > "$out/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null' EXIT
for _ in $(seq 100); do [ -s "$out/port" ] && break; sleep 0.1; done
if [ ! -s "$out/port" ]; then echo "aobj-server did not start:"; cat "$out/server.log"; exit 1; fi
"$suite" --target "127.0.0.1:$(cat "$out/port")" --credentials "$out/credentials" \
  --junit "$out/junit.xml" --json "$out/report.json" --html "$out/report.html" "$@"
rc=$?
# The reports parse (JSON, XML) and the HTML names every case.
python3 - "$out" "$authz" <<'PY' || rc=1
import json, sys, xml.etree.ElementTree as ET
out, authz = sys.argv[1], sys.argv[2]
report = json.load(open(f"{out}/report.json"))
suites = ET.parse(f"{out}/junit.xml").getroot()
html = open(f"{out}/report.html").read()
ids = [c["id"] for c in report["cases"]]
assert ids and len(ids) == len(suites.findall(".//testcase")), "JUnit and JSON disagree"
assert all(i in html for i in ids), "a case is missing from the HTML report"
assert report["data_channel"].startswith("UCX "), "the report does not state its data channel"
want = "restricted" if authz == "owner" else "open"
assert report["authorization"].startswith(want + " (detected"), "policy: " + report["authorization"]
assert all(c["verdict"] in ("PASS", "FAIL", "NON-STRICT", "UNSUPPORTED", "INFORMATIONAL") for c in report["cases"])
PY
if ! kill -0 $pid 2>/dev/null; then echo "aobj-server died during the run:"; tail -50 "$out/server.log"; rc=1; fi
[ $rc -ne 0 ] && { echo "--- server log (last 30 lines) ---"; tail -30 "$out/server.log"; }
exit $rc
