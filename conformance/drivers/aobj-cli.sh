#!/bin/sh
# Client driver for the reference CLI (`aobj`), per conformance/CLIENT-DRIVER.md.
#
#   aobj-cli.sh AOBJ_BINARY OP ARGS...
#
# The conformance suite runs it as `<--client-exec> OP ARGS...`, so --client-exec is
# "conformance/drivers/aobj-cli.sh build/aobj". The CLI takes AOBJ_ENDPOINT,
# AOBJ_ACCESS_KEY_ID and AOBJ_SECRET_ACCESS_KEY from the environment and uses plaintext gRPC
# when AOBJ_TLS_CA is not set. On failure the CLI prints
#   aobj: <what>: NAME (S3Code): message
# on stderr; this driver repeats NAME as the contract's "error: NAME" line.
set -u
# One request per operation: the CLI's own retries (cp, mv, sync) would hide the reply a case
# examines (CLIENT-DRIVER.md, Results).
AOBJ_MAX_ATTEMPTS=1
export AOBJ_MAX_ATTEMPTS
if [ $# -lt 2 ]; then
  echo "usage: $0 AOBJ_BINARY OP ARGS..." >&2
  exit 2
fi
AOBJ=$1
op=$2
shift 2
errfile=$(mktemp "${TMPDIR:-/tmp}/aobj-driver.XXXXXX") || exit 2
trap 'rm -f "$errfile"' EXIT

case "$op" in
  put)   # put BUCKET KEY FILE
    [ $# -eq 3 ] || { echo "usage: put BUCKET KEY FILE" >&2; exit 2; }
    "$AOBJ" --quiet put "$3" "$1/$2" 2>"$errfile"
    rc=$? ;;
  get)   # get BUCKET KEY FILE
    [ $# -eq 3 ] || { echo "usage: get BUCKET KEY FILE" >&2; exit 2; }
    "$AOBJ" --quiet get "$1/$2" "$3" 2>"$errfile"
    rc=$? ;;
  ls)    # ls BUCKET PREFIX: every key under PREFIX, one per line
    [ $# -eq 2 ] || { echo "usage: ls BUCKET PREFIX" >&2; exit 2; }
    out=$("$AOBJ" ls --recursive "aobj://$1/$2" 2>"$errfile")
    rc=$?
    # `aobj ls --recursive` prints "DATE TIME SIZE KEY"; keys with spaces are not supported here.
    [ $rc -eq 0 ] && printf '%s\n' "$out" | awk 'NF > 0 { print $NF }' ;;
  get-range)   # get-range BUCKET KEY FIRST LAST FILE: octets FIRST..LAST (inclusive)
    [ $# -eq 5 ] || { echo "usage: get-range BUCKET KEY FIRST LAST FILE" >&2; exit 2; }
    "$AOBJ" --quiet --range "bytes=$3-$4" cp "aobj://$1/$2" "$5" 2>"$errfile"
    rc=$? ;;
  put-multipart)   # put-multipart BUCKET KEY FILE PART_SIZE
    [ $# -eq 4 ] || { echo "usage: put-multipart BUCKET KEY FILE PART_SIZE" >&2; exit 2; }
    "$AOBJ" --quiet --multipart-threshold 1 --part-size "$4" cp "$3" "aobj://$1/$2" 2>"$errfile"
    rc=$? ;;
  get-all)   # get-all TIMEOUT_MS BUCKET PREFIX DIR: one client; a line per key
    [ $# -eq 4 ] || { echo "usage: get-all TIMEOUT_MS BUCKET PREFIX DIR" >&2; exit 2; }
    secs=$(awk -v ms="$1" 'BEGIN { printf "%.3f", ms / 1000 }')
    out=$("$AOBJ" --timeout "$secs" --recursive cp "aobj://$2/$3" "$4" 2>"$errfile")
    rc=$?
    # The CLI prints "download: aobj://B/K to PATH" for each object it wrote and
    # "aobj: download aobj://B/K to PATH: NAME (S3Code): message" for each one it did not.
    # (A code the CLI does not know is "UNKNOWN (InternalError)": reported as INTERNAL, as below.)
    printf '%s\n' "$out" | sed -n "s|^download: aobj://$2/\([^ ]*\) to .*|\1 ok|p"
    sed -n "s|^aobj: download aobj://$2/\([^ ]*\) to .*: \([A-Z][A-Z0-9_]*\) ([A-Za-z]*): .*|\1 error: \2|p" \
        "$errfile" | sed 's/ error: UNKNOWN$/ error: INTERNAL/'
    cat "$errfile" >&2
    exit $rc ;;
  put-all)   # put-all TIMEOUT_MS BUCKET PREFIX DIR: one client; a line per key
    [ $# -eq 4 ] || { echo "usage: put-all TIMEOUT_MS BUCKET PREFIX DIR" >&2; exit 2; }
    secs=$(awk -v ms="$1" 'BEGIN { printf "%.3f", ms / 1000 }')
    out=$("$AOBJ" --timeout "$secs" --recursive cp "$4" "aobj://$2/$3" 2>"$errfile")
    rc=$?
    # The CLI prints "upload: PATH to aobj://B/K" for each file it stored and
    # "aobj: upload PATH to aobj://B/K: NAME (S3Code): message" for each one it did not.
    printf '%s\n' "$out" | sed -n "s|^upload: .* to aobj://$2/\([^ ]*\)$|\1 ok|p"
    sed -n "s|^aobj: upload .* to aobj://$2/\([^ :]*\): \([A-Z][A-Z0-9_]*\) ([A-Za-z]*): .*|\1 error: \2|p" \
        "$errfile" | sed 's/ error: UNKNOWN$/ error: INTERNAL/'
    cat "$errfile" >&2
    exit $rc ;;
  *)
    echo "error: UNSUPPORTED_OPERATION ($op)" >&2
    exit 3 ;;
esac

cat "$errfile" >&2
if [ $rc -ne 0 ]; then
  # The first "NAME (" after ": " of the CLI's failure line.
  name=$(grep -m1 '^aobj: ' "$errfile" | grep -o ': [A-Z][A-Z0-9_]* (' | head -n1 |
         sed 's/^: //; s/ ($//')
  # For a code it does not know, the CLI prints "UNKNOWN (InternalError)": the library handles
  # it with the registry row of INTERNAL, not retryable (AOBJ-EXT-004), and only labels it
  # UNKNOWN. The contract asks for the code the client acted on, which is INTERNAL.
  if [ "$name" = UNKNOWN ] && grep -m1 '^aobj: ' "$errfile" | grep -q ': UNKNOWN (InternalError)'; then
    name=INTERNAL
  fi
  echo "error: ${name:-UNKNOWN}" >&2
fi
exit $rc
