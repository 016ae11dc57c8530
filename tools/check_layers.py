#!/usr/bin/env python3
"""Holds the layering of src/ (docs/architecture.md, "Layers"), as ctest `layering` runs it.

  python3 tools/check_layers.py [--root DIR]

Reads the layers and what each links from CMakeLists.txt (`aobj_layer(NAME DIR DEPS...)`), then
checks every #include "DIR/..." in src/ and include/:

  - a layer includes only its own headers and those of the layers it links, directly or through
    another layer (`store` never reaches `server`, `client` never reaches `store`);
  - the public headers (include/aobj) include no header of src/;
  - the files that the request pipeline is made of reach no RPC framework: none of their
    includes, followed through src/, names <grpcpp/...> or a header of src/control (the server's
    RequestHandler is driven by the gRPC service and by the fast path alike).

Exit status 1 with one line per violation, naming the file, the line and the rule.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+([<"])([^">]+)[">]', re.M)
LAYER = re.compile(r'^aobj_layer\((\w+)\s+(\w+)((?:\s+[^)\s]+)*)\)', re.M)
# The request pipeline: no RPC framework below it (issue 21).
FRAMEWORK_FREE = ["server/handler.h", "server/authz.h", "server/fast_path.h",
                  "server/bucket_scope.h"]


def Layers(root):
    text = open(os.path.join(root, "CMakeLists.txt")).read()
    by_name, dir_of = {}, {}
    for name, d, deps in LAYER.findall(text):
        by_name[name] = deps.split()
        dir_of[name] = d
    allowed = {}
    for name, d in dir_of.items():
        seen, todo = set(), [name]
        while todo:
            n = todo.pop()
            if n in seen:
                continue
            seen.add(n)
            todo.extend(x for x in by_name.get(n, []) if x in dir_of)
        allowed[d] = {dir_of[n] for n in seen}
    return allowed


def Includes(path):
    out = []
    text = open(path, errors="replace").read()
    for m in INCLUDE.finditer(text):
        line = text.count("\n", 0, m.start()) + 1
        out.append((line, m.group(1), m.group(2)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    args = ap.parse_args()
    root = args.root
    src = os.path.join(root, "src")
    allowed = Layers(root)
    if not allowed:
        sys.exit("check_layers: no aobj_layer(...) lines in CMakeLists.txt")
    problems = []
    for d in sorted(os.listdir(src)):
        if not os.path.isdir(os.path.join(src, d)):
            continue
        if d not in allowed:
            problems.append(f"src/{d}: a directory of src/ that is no layer in CMakeLists.txt")
            continue
        for f in sorted(os.listdir(os.path.join(src, d))):
            if not f.endswith((".h", ".cc")):
                continue
            for line, kind, inc in Includes(os.path.join(src, d, f)):
                top = inc.split("/")[0]
                if kind == '"' and top in allowed and top not in allowed[d]:
                    problems.append(f"src/{d}/{f}:{line}: includes {inc}, but layer {d} does "
                                    f"not link layer {top} (it may reach: "
                                    f"{', '.join(sorted(allowed[d]))})")
    pub = os.path.join(root, "include", "aobj")
    for f in sorted(os.listdir(pub)):
        if f.endswith(".h"):
            for line, kind, inc in Includes(os.path.join(pub, f)):
                if inc.split("/")[0] in allowed:
                    problems.append(f"include/aobj/{f}:{line}: a public header includes {inc} "
                                    "of src/")
    for start in FRAMEWORK_FREE:
        if not os.path.exists(os.path.join(src, start)):
            problems.append(f"src/{start}: listed as free of RPC frameworks but missing")
            continue
        seen, todo = set(), [(start, [start])]
        while todo:
            cur, chain = todo.pop()
            if cur in seen:
                continue
            seen.add(cur)
            for line, kind, inc in Includes(os.path.join(src, cur)):
                top = inc.split("/")[0]
                if inc.startswith("grpcpp/") or inc.startswith("grpc/") or top == "control":
                    problems.append(f"src/{start}: reaches {inc} through "
                                    f"{' -> '.join(chain)} (line {line}); the request pipeline "
                                    "must not depend on an RPC framework")
                elif kind == '"' and top in allowed and os.path.exists(os.path.join(src, inc)):
                    todo.append((inc, chain + [inc]))
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"layering holds: {len(allowed)} layers, public headers and "
          f"{len(FRAMEWORK_FREE)} framework-free headers checked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
