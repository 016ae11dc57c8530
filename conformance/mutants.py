#!/usr/bin/env python3
"""Deliberate faults in a scratch copy of the reference server, and the suite's verdict on each.

  python3 conformance/mutants.py [--suite build/aobj-conformance] [--all-cases] [NAME ...]

Copies the tracked and untracked (not ignored) files of this checkout to a scratch directory,
builds aobj-server there, then for each mutant: changes the source as described, rebuilds,
runs the server suite against it (conformance/run-reference-server.sh, memory store) and expects
the suite to FAIL. The suite binary is the one built from the unchanged tree. By default each
mutant runs the cases that should catch it; --all-cases runs the whole suite. Exit status 1 when a
mutant survives. Results: conformance/README.md, "Does it catch real bugs?".
"""
import argparse
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# name: (what, [(file, old, new)], cases to run, extra suite flags)
MUTANTS = {
    "skip-bounds-check": (
        "the server skips the descriptor window checks (handler and worker)",
        [("src/server/handler.cc",
          "if (op.length == 0 || op.remote < w.address || op.length > w.length ||\n"
          "        op.remote - w.address > w.length - op.length) {",
          "if (false) {"),
         ("src/transport/ucx_worker.cc",
          "if (lo < entry->lo || lo >= entry->hi || w.length > entry->hi - lo) {",
          "if (false) {")],
        "mem/7.4", []),
    "wrong-etag": (
        "single-PUT ETags get one extra hex digit",
        [("src/server/body.cc",
          'got.etag = absl::StrCat("\\"", HexEncode(md5.Finish()), "\\"");',
          'got.etag = absl::StrCat("\\"", HexEncode(md5.Finish()), "0\\"");')],
        "obj/9.4,copy/9.14/1,list/9.12/1", []),
    "ignore-version-range": (
        "OpenSession answers with the server's version whatever the client offered",
        [("src/wire/protocol.cc", "  if (lo > hi) {", "  if (false) {"),
         ("src/wire/protocol.cc", "  return hi;  // AOBJ-SES-002", "  return server_max;  // AOBJ-SES-002")],
        "ses/5.2", []),
    "commit-unverified": (
        "a PUT whose checksum does not match is committed anyway",
        [("src/server/body.cc", "  if (got.checksum != *body.checksum) {", "  if (false) {")],
        "dat/8.3,mpu/9.15.2/2", []),
    "accept-expired-session": (
        "sessions never expire (the lease is ignored)",
        [("src/session/session_table.cc",
          "if (e.phase == Entry::kOpen && now >= e.expires) {", "if (false) {"),
         # the sweeper marks idle sessions expired too: a request revives them instead
         ("src/session/session_table.cc",
          "  if (e.phase == Entry::kExpired) {\n    return MakeError(ErrorCode::kSessionExpired,\n"
          "                     \"the session's lease expired; open a new session\");",
          "  if (e.phase == Entry::kExpired) {\n    e.phase = Entry::kOpen;\n  }\n  if (false) {\n"
          "    return MakeError(ErrorCode::kSessionExpired, \"\");")],
        "ses/5.9/2", []),
    "leak-registration": (
        "closing a session leaks its unpacked remote keys (the client's segment stays attached)",
        [("src/transport/ucx_worker.cc",
          "for (auto& entry : it->second.rkeys) DestroyRkey(entry);",
          "for (auto& entry : it->second.rkeys) (void)entry.release();")],
        "mem/7.4/4", []),
    "ignore-cancellation": (
        "the server ignores cancellations and deadlines and keeps writing (AOBJ-DAT-016/155/156)",
        [("src/server/handler.cc", "    AOBJ_RETURN_IF_ERROR(call.Check());\n    absl::Status st",
          "    absl::Status st")],
        "dat/8.8", ["--strict"]),
}


def run(cmd, **kw):
    return subprocess.run(cmd, check=False, **kw)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default=os.path.join(ROOT, "build", "aobj-conformance"))
    ap.add_argument("--scratch", default="/tmp/aobj-mutants")
    ap.add_argument("--all-cases", action="store_true")
    ap.add_argument("--extra", help="a Python file defining NEW, more mutants in the same format")
    ap.add_argument("names", nargs="*")
    args = ap.parse_args()
    if args.extra:
        scope = {}
        exec(open(args.extra).read(), scope)
        MUTANTS.update(scope["NEW"])
    names = args.names or list(MUTANTS)
    for n in names:
        if n not in MUTANTS:
            sys.exit(f"unknown mutant {n}; known: {', '.join(MUTANTS)}")
    if not os.access(args.suite, os.X_OK):
        sys.exit(f"{args.suite} not built (bash scripts/build.sh)")

    tree = os.path.join(args.scratch, "tree")
    build = os.path.join(args.scratch, "build")
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split("\n")
    shutil.rmtree(tree, ignore_errors=True)
    for f in filter(None, files):
        src = os.path.join(ROOT, f)
        if not os.path.isfile(src):
            continue
        dst = os.path.join(tree, f)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copy2(src, dst)
    env = dict(os.environ, CCACHE_BASEDIR=tree, CCACHE_NOHASHDIR="1", UCX_NET_DEVICES="lo")
    if run(["cmake", "-S", tree, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
            "-DAOBJ_BUILD_TESTS=OFF"], env=env, stdout=subprocess.DEVNULL).returncode:
        sys.exit("cmake failed")
    if run(["ninja", "-C", build, "aobj-server"], env=env, stdout=subprocess.DEVNULL).returncode:
        sys.exit("the unchanged scratch tree does not build")

    results = []
    for name in names:
        what, edits, cases, flags = MUTANTS[name]
        originals = {}
        for path, old, new in edits:
            full = os.path.join(tree, path)
            text = originals.setdefault(path, open(full).read()) if path not in originals else open(full).read()
            if old not in text:
                sys.exit(f"{name}: the text to change is not in {path} (the source moved; update the mutant)")
            with open(full, "w") as fh:
                fh.write(text.replace(old, new, 1))
        try:
            if run(["ninja", "-C", build, "aobj-server"], env=env, stdout=subprocess.DEVNULL).returncode:
                results.append((name, what, "BUILD FAILED", []))
                continue
            out = os.path.join(args.scratch, "run-" + name)
            sel = [] if args.all_cases else ["--only", cases]
            proc = run([os.path.join(ROOT, "conformance", "run-reference-server.sh"),
                        os.path.join(build, "aobj-server"), args.suite, "memory", out] + sel + flags,
                       env=env, capture_output=True, text=True)
            failed = []
            try:
                report = json.load(open(os.path.join(out, "report.json")))
                failed = [f"{c['id']} {c['verdict']}" for c in report["cases"] if c["verdict"] != "PASS"]
            except (OSError, ValueError):
                failed = ["(no report: " + proc.stdout.strip().splitlines()[-1] + ")" if proc.stdout.strip() else "(no report)"]
            results.append((name, what, "CAUGHT" if proc.returncode != 0 else "SURVIVED", failed))
        finally:
            for path, text in originals.items():
                with open(os.path.join(tree, path), "w") as fh:
                    fh.write(text)
        print(f"{results[-1][2]:9} {name}: {', '.join(results[-1][3]) or '-'}", flush=True)

    print("\n| mutant | fault | verdict | cases that caught it |\n|---|---|---|---|")
    for name, what, verdict, failed in results:
        print(f"| {name} | {what} | {verdict} | {', '.join(failed)} |")
    sys.exit(0 if all(r[2] == "CAUGHT" for r in results) else 1)


if __name__ == "__main__":
    main()
