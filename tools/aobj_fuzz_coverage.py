#!/usr/bin/env python3
"""Fails when a source file that decodes peer input has no fuzz target.

A file "decodes peer input" when it calls a protobuf parser (ParseFrom...) or carries the marker
comment `AOBJ_PEER_INPUT` (hand-written decoders: rkeys, tokens, ranges, maps text, ...).
A fuzz target covers a file by naming it in a comment line `// AOBJ_FUZZ_COVERS: src/x/y.cc`.

  python3 tools/aobj_fuzz_coverage.py [--root DIR]      # exit 1 and list what is uncovered
"""
import argparse
import os
import re
import sys

DECODES = re.compile(r"\bParseFrom(Array|String|CodedStream|ZeroCopyStream)\b|AOBJ_PEER_INPUT")
COVERS = re.compile(r"AOBJ_FUZZ_COVERS:\s*(\S+)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    args = ap.parse_args()
    root = os.path.abspath(args.root)

    decoders = []
    for base, _, files in os.walk(os.path.join(root, "src")):
        for f in sorted(files):
            if f.endswith(".cc") or f.endswith(".h"):
                path = os.path.join(base, f)
                with open(path, encoding="utf-8", errors="replace") as fh:
                    if DECODES.search(fh.read()):
                        decoders.append(os.path.relpath(path, root))

    covered = {}
    fuzz_dir = os.path.join(root, "fuzz")
    for f in sorted(os.listdir(fuzz_dir)):
        if f.endswith("_fuzzer.cc"):
            with open(os.path.join(fuzz_dir, f), encoding="utf-8") as fh:
                for m in COVERS.finditer(fh.read()):
                    covered.setdefault(m.group(1), []).append(f)

    missing = [d for d in sorted(decoders) if d not in covered]
    stale = [c for c in sorted(covered) if not os.path.exists(os.path.join(root, c))]
    for d in sorted(decoders):
        print(f"{'ok     ' if d in covered else 'MISSING'} {d}"
              + (f"  <- {', '.join(covered[d])}" if d in covered else ""))
    for c in stale:
        print(f"STALE   {c} (named by {', '.join(covered[c])}, no such file)")
    if missing or stale:
        print(f"\n{len(missing)} decoder(s) without a fuzz target: add a target in fuzz/ with an "
              "`// AOBJ_FUZZ_COVERS: <path>` line (fuzz/README.md)", file=sys.stderr)
        return 1
    print(f"\nall {len(decoders)} decoders of peer input have a fuzz target")
    return 0


if __name__ == "__main__":
    sys.exit(main())
