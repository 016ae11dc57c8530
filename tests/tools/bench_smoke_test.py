#!/usr/bin/env python3
"""Smoke test of aobj-bench: a few seconds with tiny sizes; checks the JSON report's shape.

No timing assertions (the machines are shared and noisy): only that every system ran, the
fields exist and the figures are sane (positive throughput, ordered percentiles, idle CPU and
server memory present).

Usage: bench_smoke_test.py AOBJ_BENCH_BINARY OUTPUT_JSON
"""
import json
import os
import subprocess
import sys


def main():
    bench, out = sys.argv[1], sys.argv[2]
    env = dict(os.environ, UCX_NET_DEVICES="lo", UCX_WARN_UNUSED_ENV_VARS="n")
    cmd = [bench, "--sizes", "4K,1M", "--count", "20", "--compare", "ucx", "--ucx-verified",
           "--idle-seconds", "1", "--small-duration", "0.2", "--small-inflight", "4",
           "--json", out, "--svg", out + ".svg"]
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=240, text=True)
    print(proc.stdout)
    assert proc.returncode == 0, f"aobj-bench exited with {proc.returncode}"
    with open(out) as f:
        report = json.load(f)
    for key in ("command", "machine", "results", "ratios", "idle", "memory", "notes", "units"):
        assert key in report, f"missing top-level field {key}"
    results = report["results"]
    seen = set()
    for r in results:
        for key in ("section", "system", "op", "size", "in_flight", "ops", "gbps", "ops_per_s",
                    "latency_us", "client_cpu_s_per_gb", "server_cpu_s_per_gb", "error"):
            assert key in r, f"result lacks {key}: {r}"
        assert r["error"] == "", f"cell failed: {r}"
        assert r["ops"] > 0 and r["gbps"] > 0 and r["ops_per_s"] > 0, r
        lat = r["latency_us"]
        for key in ("p50", "p90", "p99", "p999"):
            assert key in lat, f"latency lacks {key}: {r}"
        assert 0 < lat["p50"] <= lat["p90"] <= lat["p99"] <= lat["p999"], r
        seen.add((r["section"], r["system"], r["op"], r["size"]))
    for system in ("aobj-memory", "ucx", "ucx-verified"):
        for op in ("GET", "PUT"):
            for size in (4096, 1 << 20):
                assert ("sweep", system, op, size) in seen, f"no sweep {system} {op} {size}"
    for op in ("GET", "PUT"):
        assert ("small", "aobj-memory", op, 4096) in seen, f"no small-request aobj {op}"
    assert any(r["versus"] == "ucx" for r in report["ratios"]), "no ratio against raw UCX"
    idle = report["idle"][0]
    assert idle["server_cpu_s"] is not None and idle["server_cpu_s"] >= 0, idle
    mem = report["memory"][0]
    for key in ("server_rss_before_kib", "server_rss_peak_kib", "server_rss_after_kib",
                "server_anon_peak_kib"):
        assert isinstance(mem[key], int) and mem[key] > 0, mem
    # The figure says when and where it was taken, and its command names no build directory.
    with open(out + ".svg") as f:
        svg = f.read()
    assert report["machine"]["date"] in svg, "the SVG lacks the run's date"
    assert "UCX " in svg and " cores" in svg, "the SVG lacks the machine caption"
    assert os.path.dirname(bench) not in svg, "the SVG shows the build directory"
    assert ">aobj-bench --sizes 4K,1M --count 20 --compare ucx --ucx-verified" in svg, \
        "the SVG lacks the command"
    assert ">aobj-bench --sizes 4K,1M" in svg, "the SVG lacks the command"
    print("bench_smoke: OK,", len(results), "cells")


if __name__ == "__main__":
    main()
