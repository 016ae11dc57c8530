#!/bin/sh
# A deliberately broken client driver, for the suite's own test (conformance_client_broken):
# it never talks to the server and reports success for every operation, like a client that
# ignores every failure. The client suite must FAIL on it.
#
#   broken-client.sh OP ARGS...
case "$1" in
  get) [ $# -eq 4 ] && : > "$4" ;;  # an empty "download"
esac
exit 0
